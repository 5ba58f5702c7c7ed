"""Probe a running vLLM or FastDeploy server: /health, /v1/models and Prometheus /metrics.

Metric names differ between servers and versions (vLLM's `vllm:gpu_cache_usage_perc`
became `vllm:kv_cache_usage_perc`), so metrics are matched by suffix and summed over
their labels.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Annotated

from annotated_types import Gt, Le

from . import URL, tool

# suffix → field; first match wins
_METRICS = {
    "num_requests_running": "running",
    "num_requests_waiting": "waiting",
    "kv_cache_usage_perc": "kv_cache_usage",
    "gpu_cache_usage_perc": "kv_cache_usage",
    "num_preemptions_total": "preemptions",
    "num_preemptions": "preemptions",
}
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEInfa]+)")


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
    metrics_error: str | None = None
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
    req = urllib.request.Request(url, headers={"Accept": "application/json, text/plain"})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, resp.read(MAX_RESPONSE_BYTES).decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def parse_metrics(text: str) -> dict[str, float]:
    """Sum each known metric over its label sets."""
    out: dict[str, float] = {}
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
                out[key] = out.get(key, 0.0) + value
                break
    return out


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
    elif report.healthy is False:
        add(ServingFinding("critical", f"health check failed: {report.health_error}", "vllm-requests-hang"))
    usage, waiting = report.kv_cache_usage, report.waiting
    if waiting and waiting > 0 and usage is not None and usage >= 0.99:
        add(ServingFinding("critical", f"{waiting:.0f} requests waiting with the KV cache {usage:.0%} full: requests queue for free blocks",
                           "vllm-requests-hang"))
    elif usage is not None and usage >= 0.9:
        add(ServingFinding("warning", f"KV cache {usage:.0%} full", "vllm-requests-hang"))
    if report.preemptions and report.preemptions > 0:
        # The preemption article, not the OOM one it was tied to before that article existed (newcomer).
        add(ServingFinding("warning", f"{report.preemptions:.0f} preemptions so far: the KV cache ran out and sequences were recomputed",
                           "vllm-preemption"))
    if waiting and waiting > 0 and (usage is None or usage < 0.99):
        add(ServingFinding("info", f"{waiting:.0f} requests waiting while the KV cache has room: the batch ceiling (max-num-seqs) may be the limit",
                           "vllm-requests-hang"))


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
        reason = getattr(exc, "reason", exc)
        refused = isinstance(reason, ConnectionRefusedError) or isinstance(exc, ConnectionRefusedError)
        report.healthy, report.health_error = False, f"{REFUSED if refused else 'unreachable'}: {reason}"
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
            for key, value in parse_metrics(body).items():
                setattr(report, key, value)
        else:
            report.metrics_error = f"HTTP {status}"
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        report.metrics_error = str(getattr(exc, "reason", exc))
    interpret(report)
    return report
