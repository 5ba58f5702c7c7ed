"""Probe a running vLLM or FastDeploy server: /health, /v1/models and Prometheus /metrics.

Metric names differ between servers and versions (vLLM's `vllm:gpu_cache_usage_perc`
became `vllm:kv_cache_usage_perc`), so metrics are matched by suffix and summed over
their labels.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Annotated

from annotated_types import Gt, Le

from . import URL, tool

# suffix → field; first match wins. Where two names feed one field (vLLM's deprecated
# gpu_cache_usage_perc shown beside kv_cache_usage_perc), the first listed is read alone:
# both were added, and two series at 60% read "KV cache 120% full" (trial).
_METRICS = {
    "num_requests_running": "running",
    "num_requests_waiting": "waiting",
    "kv_cache_usage_perc": "kv_cache_usage",
    "gpu_cache_usage_perc": "kv_cache_usage",
    "num_preemptions_total": "preemptions",
    "num_preemptions": "preemptions",
}
# Fields that are a share of one engine's cache: over label sets (data-parallel engines, one
# per `engine` label) the fullest counts, not the sum. Counts (requests, preemptions) add up.
_RATIOS = frozenset({"kv_cache_usage"})
# name, label set (quoted values may hold braces: `model_name="a}b"` is legal), value
_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\\n]|\\.)*")*\})?\s+([-+0-9.eEInfaN]+)')


@dataclass
class ServingFinding:
    severity: str  # critical | warning | info
    message: str
    article: str | None = None  # the KB article that explains it, if one does


@dataclass
class ServingReport:
    base_url: str
    healthy: bool | None
    health_error: str | None = None
    models: list[str] = field(default_factory=list)
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None  # 0..1
    preemptions: float | None = None
    # Preemptions is a counter since the server started: how many came during a second read
    # of /metrics, PREEMPTION_SAMPLE_S later, when it is above 0.
    preemptions_new: float | None = None
    preemptions_window_s: float | None = None
    metrics_error: str | None = None
    metrics_skipped: int = 0  # NaN/±Inf samples left out
    metrics_truncated: bool = False  # /metrics was longer than MAX_RESPONSE_BYTES
    findings: list[ServingFinding] = field(default_factory=list)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A serving endpoint has no reason to redirect; following one would let an allowed host
    send the probe to a host that is not allowed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)
# A /metrics page is tens of kB; a probe reads at most this much of any response.
MAX_RESPONSE_BYTES = 2_000_000


def _get(url: str, timeout: float) -> tuple[int, str]:
    """GET `url` within `timeout` seconds in all: a server that trickles its answer a byte at a
    time never trips a socket's per-read timeout, and one slow /metrics lost the health and
    model results already read (trial)."""
    import time

    deadline = time.monotonic() + timeout
    req = urllib.request.Request(url, headers={"Accept": "application/json, text/plain"})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            chunks: list[bytes] = []
            size = 0
            while size < MAX_RESPONSE_BYTES:
                if time.monotonic() > deadline:
                    raise TimeoutError("timed out")
                chunk = resp.read1(min(65536, MAX_RESPONSE_BYTES - size)) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            return resp.status, b"".join(chunks).decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


@dataclass
class Metrics:
    values: dict[str, float]
    skipped: int = 0  # samples of known metrics whose value was NaN or ±Inf


def read_metrics(text: str) -> Metrics:
    """The known metrics of a Prometheus text page: counts summed over their label sets,
    shares (KV-cache usage) the largest of them, each field from one metric name only.
    NaN and ±Inf samples are left out and counted: "inf requests waiting while the KV cache
    has room" was a finding (trial)."""
    import math

    seen: dict[str, tuple[int, list[float]]] = {}  # field → (rank of the name read, its values)
    ranks = {suffix: n for n, suffix in enumerate(_METRICS)}
    skipped = 0
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        name = m.group(1).removesuffix("_total") if not m.group(1).endswith("preemptions_total") else m.group(1)
        for suffix, key in _METRICS.items():
            if name.endswith(suffix):
                try:
                    value = float(m.group(3))
                except ValueError:
                    break
                if not math.isfinite(value):
                    skipped += 1
                    break
                rank = ranks[suffix]
                held = seen.get(key)
                if held is None or rank < held[0]:
                    seen[key] = (rank, [value])
                elif rank == held[0]:
                    held[1].append(value)
                break
    values = {key: (max(vals) if key in _RATIOS else sum(vals)) for key, (_rank, vals) in seen.items()}
    return Metrics(values, skipped)


def parse_metrics(text: str) -> dict[str, float]:
    """The known metrics of a Prometheus text page (see `read_metrics`)."""
    return read_metrics(text).values


REFUSED = "connection refused"


def interpret(report: ServingReport) -> None:
    """Turn numbers into findings tied to the KB article that explains them."""
    add = report.findings.append
    if report.healthy is False and (report.health_error or "").startswith(REFUSED):
        # Nothing listens: a server that never started or died at start-up, not one that hangs.
        add(ServingFinding("critical", f"no server answers at {report.base_url} ({report.health_error}): it is not running, "
                           "exited during start-up, or listens on another port; its start-up log says which "
                           "(assistant doctor --log FILE reads it)"))
    elif report.healthy is False and _client_error(report.health_error):
        # vLLM and FastDeploy answer /health to anyone: a 4xx is another server, path or port,
        # not a server waiting for KV-cache blocks.
        add(ServingFinding("warning", f"{report.base_url}/health answered {report.health_error}: this is not a vLLM or "
                           "FastDeploy server, or the URL or port is wrong (both answer 200 on /health; give the "
                           "server's own address, e.g. http://127.0.0.1:8000)"))
    elif report.healthy is False and (report.health_error or "").startswith(ADDRESS_PROBLEM):
        # A name that does not resolve, TLS against a plain-HTTP port and the like are the
        # address's fault, not a server waiting for KV blocks (trial).
        add(ServingFinding("warning", report.health_error.removeprefix(ADDRESS_PROBLEM)))
    elif report.healthy is False:
        add(ServingFinding("critical", f"health check failed: {report.health_error}", "vllm-requests-hang"))
    if report.healthy and report.metrics_error:
        add(ServingFinding("warning", f"could not read {report.base_url}/metrics ({report.metrics_error}): the queue and "
                           "KV-cache figures are unknown. A /metrics that hangs is itself a sign of a stuck API server; "
                           "FastDeploy serves its metrics on its own --metrics-port"))
    elif report.healthy and report.running is None and report.waiting is None and report.kv_cache_usage is None:
        add(ServingFinding("info", f"{report.base_url}/metrics has none of vLLM's or FastDeploy's queue and KV-cache metrics"
                           + (f" (in its first {MAX_RESPONSE_BYTES // 1_000_000} MB)" if report.metrics_truncated else "")
                           + ": the figures are unknown"))
    if report.metrics_skipped:
        add(ServingFinding("info", f"{report.metrics_skipped} metric samples were NaN or infinite and were left out"))
    usage, waiting = report.kv_cache_usage, report.waiting
    if waiting and waiting > 0 and usage is not None and usage >= 0.99:
        add(ServingFinding("critical", f"{waiting:.0f} requests waiting with the KV cache {usage:.0%} full: requests queue for free blocks",
                           "vllm-requests-hang"))
    elif usage is not None and usage >= 0.9:
        add(ServingFinding("warning", f"KV cache {usage:.0%} full", "vllm-requests-hang"))
    if report.preemptions_new:
        # The preemption article, not the OOM one it was tied to before that article existed (newcomer).
        add(ServingFinding("warning", f"{report.preemptions_new:.0f} preemptions in the last {report.preemptions_window_s:.0f} s: "
                           "the KV cache is running out and sequences are recomputed", "vllm-preemption"))
    elif report.preemptions and report.preemptions > 0:
        # A counter since start: 200 preemptions a week ago kept doctor failing (trial).
        window = f"; none in a {report.preemptions_window_s:.0f} s sample" if report.preemptions_window_s else ""
        add(ServingFinding("info", f"{report.preemptions:.0f} preemptions since the server started{window}: under load, "
                           "probe again to see whether they still grow", "vllm-preemption"))
    if waiting and waiting > 0 and (usage is None or usage < 0.99):
        add(ServingFinding("info", f"{waiting:.0f} requests waiting while the KV cache has room: the batch ceiling (max-num-seqs) may be the limit",
                           "vllm-requests-hang"))


ADDRESS_PROBLEM = "address: "


def _unreachable(exc: BaseException, base: str) -> str:
    """Why the server could not be reached, in words that say what to change: the name, the
    scheme, the certificate. Prefixed with ADDRESS_PROBLEM when it is the address's fault."""
    import socket
    import ssl

    reason = getattr(exc, "reason", exc)
    host = urllib.parse.urlsplit(base).hostname or base
    if isinstance(reason, ConnectionRefusedError) or isinstance(exc, ConnectionRefusedError):
        return f"{REFUSED}: {reason}"
    if isinstance(reason, socket.gaierror):
        return f"{ADDRESS_PROBLEM}the name {host} does not resolve ({reason.strerror or reason}): check the host name in the URL"
    if isinstance(reason, ssl.SSLCertVerificationError):
        return (f"{ADDRESS_PROBLEM}{host}'s TLS certificate is not trusted ({reason.verify_message or reason}): "
                "use the server's CA, or its plain-HTTP address inside the cluster")
    if isinstance(reason, ssl.SSLError) and base.startswith("https://"):
        # OpenSSL before 3.2 says WRONG_VERSION_NUMBER, later ones "record layer failure" (review)
        return (f"{ADDRESS_PROBLEM}{host} did not complete a TLS handshake ({reason}): if it speaks plain HTTP, "
                "use http:// instead of https://")
    if isinstance(reason, ConnectionResetError) and base.startswith("http://"):
        return (f"{ADDRESS_PROBLEM}{host} reset the connection: if it serves TLS, use https:// instead of http://; "
                "otherwise something in between (a proxy, a firewall) refused it")
    return f"unreachable: {reason}"


def _client_error(health_error: str | None) -> bool:
    """Whether /health answered with a 4xx status (health_error "HTTP 404")."""
    m = re.fullmatch(r"HTTP (\d{3})", health_error or "")
    return bool(m) and 400 <= int(m.group(1)) < 500


# Each endpoint's wait: a health probe that needs a minute says enough. Unbounded, 1e308 raised
# OverflowError inside urllib, and each of many 1e9 calls to a silent port held a thread.
MAX_TIMEOUT_S = 30.0


@tool
def serving_status(base_url: Annotated[str, URL], timeout_s: Annotated[float, Gt(0), Le(MAX_TIMEOUT_S)] = 3.0) -> ServingReport:
    """Health, served models, running/waiting requests, KV-cache usage and preemptions of a vLLM or FastDeploy server, interpreted against the KB.

    Args:
        base_url: the server's address, e.g. http://127.0.0.1:8000 (a trailing /v1 is fine).
        timeout_s: seconds to wait for each endpoint (at most 30).
    """
    if isinstance(timeout_s, bool) or not 0 < timeout_s <= MAX_TIMEOUT_S:  # NaN too
        raise ValueError(f"timeout_s must be over 0 and at most {MAX_TIMEOUT_S:g} seconds")
    base = base_url.rstrip("/").removesuffix("/v1")
    if not re.match(r"^https?://", base):
        raise ValueError("base_url must start with http:// or https://")
    report = ServingReport(base, None)
    try:
        status, _ = _get(f"{base}/health", timeout_s)
        report.healthy = status == 200
        if status != 200:
            report.health_error = f"HTTP {status}"
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        report.healthy, report.health_error = False, _unreachable(exc, base)
        interpret(report)
        return report
    try:
        status, body = _get(f"{base}/v1/models", timeout_s)
        if status == 200:
            report.models = [m.get("id", "?") for m in json.loads(body).get("data", [])]
    except (urllib.error.URLError, OSError, TimeoutError, ValueError, AttributeError):
        pass
    try:
        status, body = _get(f"{base}/metrics", timeout_s)
        if status == 200:
            metrics = read_metrics(body)
            for key, value in metrics.values.items():
                setattr(report, key, value)
            report.metrics_skipped = metrics.skipped
            report.metrics_truncated = len(body.encode("utf-8", "replace")) >= MAX_RESPONSE_BYTES
        else:
            report.metrics_error = f"HTTP {status}"
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        report.metrics_error = str(getattr(exc, "reason", exc))
    _preemption_growth(report, timeout_s)
    interpret(report)
    return report


PREEMPTION_SAMPLE_S = 1.0


def _preemption_growth(report: ServingReport, timeout_s: float = 3.0) -> None:
    """Read the preemption counter again a second later: a counter alone cannot tell "growing
    now" from "a week ago", and a memory of the last probe lived only as long as one process
    (each `assistant doctor` is a new one; review)."""
    import time

    if not report.preemptions:
        return
    started = time.monotonic()
    time.sleep(PREEMPTION_SAMPLE_S)
    try:
        status, body = _get(f"{report.base_url}/metrics", timeout_s)
    except (urllib.error.URLError, OSError, TimeoutError):
        return
    later = read_metrics(body).values.get("preemptions") if status == 200 else None
    if later is not None and later >= report.preemptions:
        report.preemptions_new = later - report.preemptions
        report.preemptions_window_s = time.monotonic() - started
        report.preemptions = later
