"""Who is calling: bearer tokens, compared in constant time, and client names that reveal
neither a token nor an address.

The client is its token, or its address; X-Forwarded-For counts only from the proxies in
`trusted_proxies` (none by default), so a local process cannot pose as others.
"""

from __future__ import annotations

import hashlib
import hmac

from assistant.config import Settings
from oncall_common.errors import ConfigError


def api_tokens(settings: Settings) -> frozenset[str]:
    """The bearer tokens. A setting that is present but holds no token (", ,") would turn
    authentication off without a word, so it stops the server instead."""
    tokens = frozenset(t.strip() for t in settings.api_tokens.split(",") if t.strip())
    if settings.api_tokens.strip() and not tokens:
        raise ConfigError("ASSISTANT_API_TOKENS is set but holds no token, which would leave the API open",
                          "list tokens separated by commas, or unset it to run without authentication")
    return tokens


def token_ok(given: str, tokens: frozenset[str]) -> bool:
    """Compare in constant time against every token, so timing reveals neither a token nor which one matched."""
    ok = False
    for token in tokens:
        ok |= hmac.compare_digest(given.encode(), token.encode())
    return ok


def client_label(token: str) -> str:
    """A stable name for a token's client (fair queueing, feedback `user`) that does not
    reveal the token: a salted hash, the same in every worker and after restarts."""
    return "token-" + hashlib.sha256(b"oncall-assistant client\0" + token.encode()).hexdigest()[:12]


def address_label(address: str) -> str:
    """What the answer records keep of an address-keyed client: a salted hash, not the address."""
    return "ip-" + hashlib.sha256(b"oncall-assistant address\0" + address.encode()).hexdigest()[:12]


def trusted_networks(setting: str) -> list | None:
    """The trusted_proxies setting as networks; None means every peer ("*")."""
    import ipaddress

    items = [item.strip() for item in setting.split(",") if item.strip()]
    if "*" in items:
        return None
    try:
        return [ipaddress.ip_network(item, strict=False) for item in items]
    except ValueError as exc:
        raise ConfigError(f"ASSISTANT_TRUSTED_PROXIES has an invalid entry: {exc}",
                          "list proxy addresses or networks, e.g. 10.0.0.5,10.1.0.0/16, or * for any") from exc


def client_address(peer: str, forwarded_for: str, trusted: list | None) -> str:
    """The client's address: the peer's, unless the peer is a trusted proxy; then the nearest
    address in X-Forwarded-For that is not a trusted proxy (entries left of it could be
    anything the client wrote)."""
    import ipaddress

    def is_trusted(address: str) -> bool:
        if trusted is None:
            return True
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in trusted)

    if trusted == [] or not forwarded_for or not is_trusted(peer):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not is_trusted(hop):
            return hop[:64]
    return hops[0][:64] if hops else peer


def record_label(client: str) -> str:
    """What the answer records keep of a client: a token's label, or a hash of the address."""
    return client if client.startswith("token-") else address_label(client[3:])
