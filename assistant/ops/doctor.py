"""`assistant doctor`: run every probe and turn what they see into findings, each tied to
the KB article that explains it, worst first. The exit code says whether anything needs
attention, so it can gate a deployment script.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant.config import Settings
from assistant.tools.capacity import LOGPROBS_MESSAGE_BYTES, LOGPROBS_MESSAGE_BYTES_MTP, RECOMMENDED_MSGMAX, RECOMMENDED_MSGMNB
from assistant.tools.gpu import GPUReport
from assistant.tools.host import DOCKER_DEFAULT_SHM, HostReport
from assistant.tools.logs import LogDiagnosis, shown_signature
from assistant.tools.serving import ServingReport

ORDER = {"critical": 0, "warning": 1, "info": 2, "ok": 3}
GIB = 2**30


@dataclass
class Finding:
    severity: str  # critical | warning | info | ok
    source: str  # gpu | host | serving | log
    message: str
    article: str | None = None
    title: str | None = None


def _gpu_findings(report: GPUReport) -> list[Finding]:
    if not report.available:
        return [Finding("info", "gpu", report.reason or "no GPU found")]
    out = [Finding("ok", "gpu", f"driver {report.driver_version}, CUDA {report.cuda_version}, {len(report.gpus)} GPU(s)")]
    for g in report.gpus:
        if g.ecc_uncorrected:
            out.append(Finding("critical", "gpu", f"GPU {g.index} has {g.ecc_uncorrected} uncorrected ECC errors: take it out of service"))
        if g.memory_used_pct >= 90:
            out.append(Finding("warning", "gpu", f"GPU {g.index} ({g.name}) memory {g.memory_used_pct:.0f}% used "
                               f"({len(g.processes)} process{'' if len(g.processes) == 1 else 'es'}): little headroom left", "vllm-cuda-oom"))
    for link in report.links:
        if link.p2p_read not in ("OK", "unknown"):
            out.append(Finding("warning", "gpu", f"GPU {link.gpu_a}↔{link.gpu_b} ({link.topology}): peer-to-peer {link.p2p_read}",
                               "vllm-nccl-error-multi-gpu"))
    return out


def _host_findings(report: HostReport) -> list[Finding]:
    out = []
    msgmax, msgmnb, shm = report.msgmax, report.msgmnb, report.shm_bytes
    # A queue holds at most msgmnb bytes (16,384 by default), so with msgmax raised and msgmnb
    # not, one 133,136-byte message still waits forever: doctor said "ok" there (trial).
    small = [f"kernel.{name} is {value:,} bytes" for name, value in (("msgmax", msgmax), ("msgmnb", msgmnb))
             if value is not None and value < LOGPROBS_MESSAGE_BYTES_MTP]
    if small:
        # Every stock kernel has msgmax 8192; it matters only to FastDeploy, so on a host
        # without it this is information, and a vLLM-only host can still exit 0.
        severity = "warning" if _fastdeploy_installed() else "info"
        out.append(Finding(severity, "host", f"{' and '.join(small)}: FastDeploy with logprobs sends {LOGPROBS_MESSAGE_BYTES:,} "
                           f"({LOGPROBS_MESSAGE_BYTES_MTP:,} with MTP) and hangs; set kernel.msgmax={RECOMMENDED_MSGMAX} "
                           f"and kernel.msgmnb={RECOMMENDED_MSGMNB}"
                           + ("" if severity == "warning" else " if this host runs FastDeploy"), "fastdeploy-logprobs-hang"))
    if report.in_container and shm is not None and shm <= DOCKER_DEFAULT_SHM:
        out.append(Finding("warning", "host", f"/dev/shm is {shm // 2**20} MiB inside a container (Docker's default): multi-GPU NCCL "
                           "needs the host's IPC namespace (--ipc=host)", "vllm-nccl-error-multi-gpu"))
    if report.torch.installed and not report.torch.cuda:
        out.append(Finding("critical", "host", f"torch {report.torch.version} is a CPU-only build: vLLM fails with "
                           "'Torch not compiled with CUDA enabled'", "vllm-torch-not-compiled-with-cuda"))
    if not report.hf_cache.writable:
        out.append(Finding("warning", "host", f"the Hugging Face cache {report.hf_cache.path} is not writable: model downloads stall",
                           "vllm-model-loading-stuck"))
    for key in ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE"):
        if report.env.get(key) == "1":
            out.append(Finding("info", "host", f"{key}=1 is set (a diagnostic setting; it slows multi-GPU communication)",
                               "vllm-nccl-error-multi-gpu"))
    # The summary row reads "ok" only when nothing above it has a word to say about the host:
    # beside a warning that msgmax is too small, "ok kernel.msgmax=8192" contradicted it, and
    # beside the note to raise it on a FastDeploy host too (newcomer).
    summary = "info" if out else "ok"
    out.append(Finding(summary, "host", f"kernel.msgmax={msgmax}, msgmnb={msgmnb}, /dev/shm="
                       f"{(shm or 0) / GIB:.1f} GiB, container={'yes' if report.in_container else 'no'}"))
    return out


def _fastdeploy_installed() -> bool:
    from importlib.util import find_spec

    try:
        return find_spec("fastdeploy") is not None
    except (ImportError, ValueError):
        return False


def _serving_findings(report: ServingReport) -> list[Finding]:
    out = [Finding(f.severity, "serving", f.message, f.article) for f in report.findings]
    if report.healthy:
        usage = report.kv_cache_usage
        out.append(Finding("ok", "serving", f"{report.base_url} healthy; models {', '.join(report.models or ['?'])}; "
                           f"running {_count(report.running)}, waiting {_count(report.waiting)}, KV cache "
                           f"{'?' if usage is None else f'{usage:.0%}'}"))
    return out


def _count(value: float | None) -> str:
    """A request count as people write it: 40, not 40.0; "?" when /metrics did not say (not "None")."""
    return "?" if value is None else f"{value:.0f}"


EXAMPLE_CHARS = 120


def _clipped(line: str, limit: int = EXAMPLE_CHARS) -> str:
    """A log line shortened at a word, with an ellipsis: cut mid-word ("because there i") it
    read as garbled output."""
    line = line.strip()
    if len(line) <= limit:
        return line
    cut = line.rfind(" ", 0, limit)
    return line[:cut if cut > limit // 2 else limit].rstrip() + " …"


def _log_findings(report: LogDiagnosis) -> list[Finding]:
    # The signature is a fragment of a log line ("because there is not enough KV cache space"):
    # quoted, it reads as what was matched, not as a sentence starting mid-way.
    out = [Finding(f.severity, "log", f"“{shown_signature(f.signature)}” × {f.count} (first at line {f.first_line}): {_clipped(f.example)}", f.article)
           for f in report.findings]
    if report.unread_bytes:
        from assistant.tools.logs import unread_note

        # A warning when the read part holds no failure: an all-clear for a crash never read (a
        # 200 MB log's OOM at its middle) exited 0 (trial).
        quiet = not any(f.severity != "info" for f in report.findings)
        out.append(Finding("warning" if quiet else "info", "log", unread_note(report.unread_bytes, "en")))
    out += [Finding("info", "log", c["en"]) for c in report.computed]
    if report.platform and report.platform != "nvidia" and any(f.severity != "info" and f.article for f in report.findings):
        # The articles a finding names are mostly written for NVIDIA/CUDA: on a ROCm log the
        # OOM line read "vLLM: CUDA out of memory" with nvidia-smi checks and nothing else (trial).
        from assistant.scope import HARDWARE_NAMES

        out.append(Finding("warning", "log", f"the log says the server runs on {HARDWARE_NAMES.get(report.platform, report.platform)}: "
                                             "an article written for NVIDIA/CUDA may not apply there"))
    if not any(f.severity != "info" for f in report.findings):
        # A log with no signature said nothing at all, even where its stats showed a stalled
        # engine (Running: 0, Waiting: 78, 0 tokens/s): doctor passed it in silence (trial).
        out.append(Finding("warning", "log", f"no known failure signature, but its stats show trouble: "
                                                f"{_clipped(report.stats_trouble[-1], 2 * EXAMPLE_CHARS)}")
                   if report.stats_trouble else Finding("ok", "log", f"no known failure signature in {report.lines:,} lines"))
    return out


def _stdin_log_findings(settings: Settings) -> list[Finding]:
    """The log piped into `doctor --log -`: it was opened as a file named "-" and failed."""
    import sys

    from assistant.tools.logs import diagnose_text, read_tail_stream

    notes: list[str] = []
    try:
        text, unread, first_line = read_tail_stream(sys.stdin.buffer, notes=notes)
    except (OSError, ValueError) as exc:
        return [Finding("warning", "log", f"diagnose_log failed: cannot read the log on stdin: {exc}")]
    if not text.strip():
        return [Finding("warning", "log", "the log on stdin is empty: pipe one in, e.g. `kubectl logs POD | assistant doctor --log -`")]
    report = diagnose_text(text, settings, first_line)
    report.unread_bytes = unread
    return [Finding("info", "log", note) for note in notes] + _log_findings(report)


def run_doctor(settings: Settings, serving_url: str | None = None, log_path: str | None = None) -> list[Finding]:
    from assistant.tools import call_tool

    findings: list[Finding] = []
    steps = [("gpu", "gpu_status", {}, _gpu_findings), ("host", "host_status", {}, _host_findings)]
    if serving_url:
        steps.append(("serving", "serving_status", {"base_url": serving_url}, _serving_findings))
    if log_path == "-":  # `kubectl logs pod | assistant doctor --log -`, as `ask --log -` reads it
        findings += _stdin_log_findings(settings)
    elif log_path:
        steps.append(("log", "diagnose_log", {"path": log_path}, _log_findings))
    for source, name, args, interpret in steps:
        call = call_tool(name, args, timeout=settings.tool_timeout)
        if call.error:
            findings.append(Finding("warning", source, f"{name} failed: {call.error}"))
        else:
            findings.extend(interpret(call.value))
    findings += _setup_findings(settings)
    titles = _titles(settings)
    for f in findings:
        if f.article:
            f.title = titles.get(f.article, f.article)
    return sorted(findings, key=lambda f: ORDER[f.severity])


def _setup_findings(settings: Settings) -> list[Finding]:
    """This assistant's own set-up: which config file it read and whether its LLM answers. A
    mistyped base URL or an endpoint that is down otherwise shows only as answers that are
    always extractive."""
    import os

    from assistant.config import default_config_path
    from assistant.llm import llm_reachable, redact_url

    path = os.environ.get("ASSISTANT_CONFIG") or str(default_config_path())
    out = [Finding("ok" if os.path.isfile(path) else "info", "config",
                   f"config file {path}" + ("" if os.path.isfile(path) else " (none: defaults and ASSISTANT_* variables)"))]
    if not settings.llm_base_url:
        out.append(Finding("info", "config", "no LLM configured: answers are extracted from the KB "
                                             "(set llm_base_url or ASSISTANT_LLM_BASE_URL for an OpenAI-compatible endpoint)"))
    elif llm_reachable(settings):
        out.append(Finding("ok", "config", f"LLM {redact_url(settings.llm_base_url)} answers /models"))
    else:
        out.append(Finding("warning", "config", f"LLM {redact_url(settings.llm_base_url)} does not answer /models as an "
                                                "OpenAI-compatible server: every answer falls back to the KB"))
    return out


def _titles(settings: Settings) -> dict[str, str]:
    """Titles from the index in use (runbooks added with `assistant ingest` included)."""
    from assistant.knowledge import kb_titles

    return kb_titles(settings)


def needs_attention(findings: list[Finding]) -> bool:
    return any(f.severity in ("critical", "warning") for f in findings)
