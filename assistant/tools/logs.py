"""Log diagnosis: find the KB's log signatures in a pasted log or a log file, and the
numbers worth computing with (`num_blocks_global: 17131`, `GPU KV cache size: N tokens`).

Signatures come from the front matter of the documents in the index actually in use (the
KB's articles, and runbooks added with `assistant ingest` that have a `signatures:` list),
re-read whenever the index is rebuilt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated

from assistant.i18n import both
from assistant.names import ANSI_CODE, EXCEPTION_NAME, setting_key, untagged, unwrapped

from . import LOCAL_PATH, tool

SEVERITY = {"critical": 0, "warning": 1, "info": 2}
# The documents declare how their signatures weigh, in front matter: `critical` for those that
# decide an incident on their own at any log level ("CUDA out of memory", "NCCL error"; others
# are supporting evidence unless logged as an error), `informational` for those that state a
# setting or a periodic status rather than a problem (at start-up FastDeploy logs its block
# counts and vLLM its chunked-prefill budget whether or not anything is wrong).

NUMBERS = {
    "num_blocks_global": re.compile(r"num_blocks_global\s*[:=]\s*(\d+)"),
    # (vLLM forces its own on MLA models: "Forcing kv cache block size to 64 for FlashMLA backend"; review)
    "block_size": re.compile(r"(?:block_size\s*[:=]\s*|[Ff]orcing kv cache block size to )(\d+)"),
    "kv_cache_tokens": re.compile(r"GPU KV cache size:\s*(\d[\d,]*)\s*tokens"),
    "kv_cache_memory_gib": re.compile(r"Available KV cache memory:\s*(\d+(?:\.\d+)?)\s*GiB"),
    # the tokens per request the figure is for, and (as max_concurrency_x) the figure itself
    "max_concurrency_tokens": re.compile(r"Maximum concurrency for (\d[\d,]*) tokens per request:\s*([\d.]+)x"),
    "total_block_num": re.compile(r"total_block_num\s*[:=]\s*(\d+)"),
    # vLLM's V0 engine: "# GPU blocks: 27525, # CPU blocks: 2048" (the CPU ones are swap space)
    "num_gpu_blocks": re.compile(r"# GPU blocks:\s*(\d+)"),
    "prefill_kvcache_block_num": re.compile(r"prefill_kvcache_block_num\s*[:=]\s*(\d+)"),
    # FastDeploy prints its settings at start-up ("max_num_seqs: 128, kv_cache_ratio: 0.9"):
    # the decode budget is the server's own ratio, not the documented default.
    "kv_cache_ratio": re.compile(r"(?<![\w.])kv_cache_ratio\s*[:=]\s*(0?\.\d+|1(?:\.0+)?)(?![\d.])"),
    # vLLM refusing to start: "max seq len (131072) is larger than … stored in KV cache (45232)",
    # or, in newer versions, "the estimated maximum model length is 157216".
    "max_seq_len": re.compile(r"max seq len \((\d[\d,]*)\)"),
    "kv_cache_max_len": re.compile(r"stored in KV cache \((\d[\d,]*)\)|estimated maximum model length is (\d[\d,]*)"),
    # vLLM refusing a --max-model-len over the model's config: "User-specified max_model_len
    # (131072) is greater than the derived max_model_len (max_position_embeddings=32768 or …",
    # also printed "(None=2048 in …" by 2024 releases and "(max_position_embeddings = 40960.0 …"
    # by recent ones.
    "user_max_len": re.compile(r"User-specified max_model_len \((\d+)\) is greater than the derived"),
    "derived_max_len": re.compile(r"greater than the derived max_model_len \([^=()]{0,60}=\s*(\d+)(?:\.0)?\b"),
    # …which is the sliding window when --disable-sliding-window is set (Mistral-7B v0.1), or when
    # vLLM turned the window off itself (Gemma 2 on older releases, vllm#6220; XFORMERS or
    # FLASHINFER backends, vllm#20865).
    "derived_sliding_window": re.compile(r"greater than the derived max_model_len \(sliding_window\s*=\s*(\d+)"),
    # Earlier V1 releases say only what one full-length request needs and what is free.
    # (a figure starts where a digit run does: tried at every digit of "9999…" it was quadratic)
    "kv_needed_gib": re.compile(r"(?<![\d.])(\d+(?:\.\d+)?) Gi?B KV cache is needed"),
    "kv_available_gib": re.compile(r"available KV cache memory \((\d+(?:\.\d+)?) Gi?B\)"),
}
# vLLM's periodic stats line, read as a pair: the most requests waiting on a line whose KV
# cache is (nearly) full. Maxima taken apart said "full, not a hang" of a log whose queue
# grew while the cache sat at 0%.
_STATS = re.compile(r"(?:Waiting|Pending):\s*(\d+)\s*reqs.*?GPU KV cache usage:\s*(\d+(?:\.\d+)?)%")
FULL_KV_PCT = 95.0


@dataclass
class LogFinding:
    signature: str
    article: str  # "" when no document of the KB has this signature (a crash it does not cover)
    severity: str
    count: int
    first_line: int
    example: str
    fatal: bool = False  # logged at ERROR or worse, or the server dying: it outranks what came before


@dataclass
class LogDiagnosis:
    lines: int
    findings: list[LogFinding] = field(default_factory=list)
    numbers: dict[str, float] = field(default_factory=dict)
    computed: list[dict[str, str]] = field(default_factory=list)  # {"en": …, "zh": …}
    unread_bytes: int = 0  # a log file longer than LOG_TAIL_BYTES: its start was not scanned
    # The server's settings as its start-up line prints them (vLLM's "non-default args: {…}"
    # or "args: Namespace(…)"), as flags: {"--max-model-len": "65536"}.
    settings: dict[str, str] = field(default_factory=dict)
    # The last few distinct stats lines that show trouble no signature names (STATS_TROUBLE).
    stats_trouble: list[str] = field(default_factory=list)
    # The hardware family the server said it runs on (scope.HARDWARE's keys), "" when unsaid.
    platform: str = ""
    # The serving engine the log comes from (scope.log_product), "" when unsaid or several.
    product: str = ""
    # The log's last line that is not a stats line: where a server that hangs stopped
    # ("Loading safetensors checkpoint shards:   5% Completed | 5/99"), a progress bar's last state.
    last_line: str = ""


# vLLM names its platform in its first lines ("Automatically detected platform rocm."). On AMD,
# torch still raises torch.OutOfMemoryError and the KB's CUDA articles matched it by signature:
# `ask --log` answered a ROCm log with nvidia-smi checks, sure, while the same log pasted into
# the question was told the article is written for NVIDIA (trial). "cpu" is left out: a
# CPU-only torch on a GPU box is the torch article's case, not another machine.
# Out-of-tree platforms say "Platform plugin ascend is activated" instead (review).
_PLATFORM_LINE = re.compile(r"detected platform:? ?(\w+)|platform plugin (\w+) is activated", re.I)
PLATFORMS = {"cuda": "nvidia", "rocm": "amd", "tpu": "tpu", "npu": "ascend", "ascend": "ascend", "xpu": "intel", "hpu": "intel",
             "neuron": "neuron"}


# An engine's periodic stats line, troubled or not: vLLM's "Avg prompt throughput: … Running: 128
# reqs, Waiting: 46 reqs, GPU KV cache usage: 99.2%", SGLang's "Decode batch. #running-req: 64, …".
STATS_LINE = re.compile(r"Avg (?:prompt|generation) throughput:|\bRunning:\s*\d+\s*reqs|#running-req:|#queue-req:", re.I)
# Stats lines that show trouble without any signature: requests waiting, or none generating
# while some run (review: "Waiting: 80 reqs" at 45% KV cache usage was called healthy); SGLang's
# batch lines with ten or more requests queued or a token pool nearly full (trial).
STATS_TROUBLE = re.compile(r"\b(?:waiting|pending|queued?)\s*[:=]\s*[1-9]|generation throughput:\s*0(?:\.0+)?\s*tokens/s.{0,40}running:\s*[1-9]"
                           r"|#queue-req:\s*[1-9]\d|token usage:\s*(?:0?\.9[5-9]|1\.0)", re.I)
STATS_LINES_KEPT = 5


# The level a line was logged at, anywhere in its prefix: vLLM's "ERROR 11-30 …", a worker's
# "(VllmWorker rank=0 pid=42) ERROR …", FastDeploy's "[2025-… ] [   ERROR]", Python's
# "… - ERROR - …", TGI's "2025-…Z ERROR …", with or without colour codes.
_LEVEL = re.compile(r"\b(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)\b")
LEVEL_PREFIX = 100  # characters of a line that can hold its level
# The server going down, whatever the log level says.
_DEATH = re.compile(r"EngineDeadError|engine is already dead|is already dead, terminating|terminating server process"
                    r"|EngineCore (?:encountered|failed)|Engine process failed|worker.{0,40}(?:died|exited unexpectedly)"
                    r"|Segmentation fault|core dumped|\bKilled\b|Fatal Python error|terminate called after throwing"
                    # start-up failing: FastDeploy's engine and vLLM V1's, with the cause in another log or above
                    r"|Failed to launch worker|Engine core initialization failed|failed to start (?:the )?(?:engine|server)", re.I)
# The exception a traceback ends in: "RuntimeError: CUDA error: an illegal memory access…".
# (The name starts after no word character or dot: on a long dotted run the search stayed linear.)
# An exception raised with no message is its name alone ("[core.py:398] AssertionError", trial).
_EXCEPTION = re.compile(rf"(?<![\w.])({EXCEPTION_NAME})(?:: (\S.{{3,200}})|\s*$)")
# A bare traceback's last line: Python prints it with no level.
_BARE_EXCEPTION = re.compile(rf"^\s*{EXCEPTION_NAME}(?:: |\s*$)")
# Exceptions that end the process, not one request: a client's ValueError about its context
# length is logged at ERROR by a server that goes on serving.
_CRASH = re.compile(r"CUDA error|NCCL|illegal memory|out of memory|OutOfMemoryError|RuntimeError|AssertionError"
                    r"|SystemError|MemoryError|core dumped|Segmentation fault", re.I)
MAX_UNMATCHED = 3
# Request wording, never a bare ValueError: vLLM V1 logs its own start-up failures as
# "ERROR … [core.py:396] ValueError: To serve at least one request …".
_REFUSED_REQUEST = re.compile(r"However, you requested|However, your (?:request|prompt)|BadRequestError|\bError code: 4\d\d\b"
                              r"|\bHTTP/1\.[01]\" 4\d\d\b|is too long and exceeds limit of")
# A log record saying the traceback under it is one request's ("ERROR:    Exception in ASGI
# application", vLLM's "Error in preprocessing prompt inputs"), and exceptions of a client gone.
_REQUEST_FAILED = re.compile(r"Exception in ASGI application|Error in preprocessing|Error in (?:chat )?completion"
                             r"|Exception in callback|while (?:handling|processing) (?:the |a )?request", re.I)
_CLIENT_SIDE = re.compile(r"\s*(?:asyncio\.(?:exceptions\.)?)?CancelledError|\s*(?:ConnectionResetError|BrokenPipeError"
                          r"|ConnectionAbortedError|ClientDisconnect|starlette\.requests\.ClientDisconnect)\b")
MAX_LINE = 2000  # characters of a line the patterns read (a 2 MB line of junk is not a log line)


# glog's level letter before the date, as C++ code and torch's c10d log it ("E0708 15:22:31.118
# 12 file.cc:616]", "[rank9]:[E708 15:22:31.118 ProcessGroupNCCL.cpp:616] … Watchdog caught
# collective operation timeout"): the watchdog's timeout read as no error at all, and `ask --log`
# found nothing in a log a team's postmortem quotes line for line (trial).
# (torch 2.0/2.1 logs it with no date: "[E ProcessGroupNCCL.cpp:475] … Watchdog caught …", review)
_GLOG = re.compile(r"(?:^|[\s\]:\[])([EFWI])\d{3,4} \d{1,2}:\d{2}:\d{2}|\[([EFW]) [\w.]+\.(?:cpp|cc|cu|h|hpp|py):\d+\]")
_GLOG_LEVELS = {"E": "ERROR", "F": "FATAL", "W": "WARNING", "I": "INFO"}


def _level(line: str) -> str:
    head = ANSI_CODE.sub("", line[:LEVEL_PREFIX + 40])[:LEVEL_PREFIX]
    m = _LEVEL.search(head)
    if m:
        return m.group(1).upper()
    g = _GLOG.search(head)
    return _GLOG_LEVELS[g.group(1) or g.group(2)] if g else ""


def is_crash_line(line: str) -> bool:
    """Whether one log line is the server failing (see `_fatal`), read with its own level."""
    line = untagged(unwrapped(line[:MAX_LINE]))
    return _fatal(line, _level(line))


def _fatal(line: str, level: str) -> bool:
    """Whether a line is the server failing: it died, or an error that ends the process (at
    ERROR or worse, or a bare traceback's last line) — not a request the server refused."""
    if _DEATH.search(line):
        return True
    if not level and _BARE_EXCEPTION.match(line):
        # A traceback's last line, printed with no level: what the process died of, whatever
        # its class ("ValueError: The quantization method awq is not supported for the current
        # GPU" was no finding at all), unless it is a request the server refused.
        return not _REFUSED_REQUEST.search(line)
    if level in ("ERROR", "CRITICAL", "FATAL"):
        return level in ("CRITICAL", "FATAL") or bool(_CRASH.search(line))
    return False


def _last_line(lines: list[str]) -> str:
    for line in reversed(lines[-LAST_LINES:]):
        last = untagged(unwrapped(line[-MAX_LINE:].rstrip("\r").split("\r")[-1])).strip()
        if last and not STATS_LINE.search(last):
            return _cut(last)
    return ""


LAST_LINES = 20  # of a log's end, looked at for its last line that is not a stats line


def _kb_settings(kb: object):
    """Settings naming the index in use: given Settings, a KB from open_kb, a KB directory
    path, or None for the configured KB."""
    from assistant.config import Settings, load_settings
    from assistant.knowledge import settings_for_kb_dir

    if isinstance(kb, Settings):
        return kb
    if kb is None:
        return load_settings()
    return settings_for_kb_dir(str(kb))


def kb_signatures(kb: object = None) -> tuple[tuple[str, str, bool, bool], ...]:
    """(signature, document id, informational, critical) from the front matter of every
    document in the index in use — the KB's articles and any runbook added with `assistant
    ingest` — longest first, so "RuntimeError: NCCL error in:" is preferred over "NCCL error".
    A signature is informational when every document that names it says so: a runbook that
    calls a line a symptom outweighs one that only reads its figures. It is critical when it
    contains what any document declares critical ("RuntimeError: NCCL error in:" holds "NCCL
    error"), and then it is never informational."""
    from assistant.knowledge import KB, kb_docs

    metas = list(kb.index.docs.values() if isinstance(kb, KB) else kb_docs(_kb_settings(kb)).values())
    decisive = {_norm(c) for meta in metas for c in meta.critical}
    articles: dict[str, str] = {}
    routine: dict[str, bool] = {}
    for meta in metas:
        info = set(meta.informational)
        for sig in dict.fromkeys([*meta.signatures, *meta.informational]):
            articles.setdefault(sig, meta.id)
            routine[sig] = routine.get(sig, True) and sig in info
    normed = {s: _norm(s) for s in articles}
    critical = {s: any(c in normed[s] for c in decisive) for s in articles}
    return tuple(sorted(((s, a, routine[s] and not critical[s], critical[s]) for s, a in articles.items()),
                        key=lambda t: -len(t[0])))


def _norm(text: str) -> str:
    import unicodedata

    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).lower()


def diagnose_text(text: str, kb: object = None, first_line: int = 1) -> LogDiagnosis:
    """Findings in a log. kb names the index whose signatures count: Settings, a KB from
    open_kb, a KB directory path, or None for the configured KB. first_line is the number
    in the file of text's first line (the tail of a long log starts deep inside it)."""
    # Lines as `grep -n` counts them: a progress bar's \r is no new line (an OOM on line 4 was
    # reported at line 9, trial).
    lines = [line.removesuffix("\r") for line in text.split("\n")]  # a CRLF log's lines end in \r
    if lines and not lines[-1]:
        lines.pop()
    report = LogDiagnosis(len(lines))
    sigs = [(s, a, _norm(s), info, decisive) for s, a, info, decisive in kb_signatures(kb)]
    found: dict[str, LogFinding] = {}
    in_request = False  # inside the traceback the server printed for one request it failed
    logged: bool | None = None  # inside a traceback logged line by line: whether for one request
    frame: tuple[str, int] | None = None  # the line before was a traceback frame: (its log prefix, its indent)
    for n, full in enumerate(lines, first_line):
        full = untagged(unwrapped(full))
        line = full[:MAX_LINE]
        low = _norm(line)
        level = _level(line)
        # A frame's source code is the lines under it, behind the same log prefix and indented
        # deeper (Python 3.13 prints a whole statement over several); a frame with no source,
        # `  File "x", line 1`, is followed by the next frame or by the exception itself, at
        # the frame's indent or less.
        source_line = frame is not None and line.startswith(frame[0]) and _indent(line[len(frame[0]):]) > frame[1]
        frame = _frame_of(line) or (frame if source_line else None)
        before = in_request
        if level:
            in_request = bool(_REQUEST_FAILED.search(line))
        if level and "Traceback (most recent call last)" in line:
            logged = before or in_request
        bare = not level and bool(_BARE_EXCEPTION.match(line))
        # A traceback's last line ends the process, but not one printed for a request the
        # server failed ("Exception in ASGI application" … CancelledError) nor a client gone (review).
        request_error = bare and (in_request or bool(_CLIENT_SIDE.match(line)))
        fatal = _fatal(line, level) and not request_error
        if logged is not None and level in ("ERROR", "CRITICAL", "FATAL") and _BARE_EXCEPTION.match(_message(line)):
            # The same for a traceback logged at ERROR, line by line, under "EngineCore failed
            # to start": its "safetensors_rust.SafetensorError: … MetadataIncompleteBuffer" was
            # a warning, and the answer searched with the wrapper lines alone (trial).
            request_error = logged or bool(_CLIENT_SIDE.match(_message(line)))
            fatal = (fatal or not (request_error or _REFUSED_REQUEST.search(line))) and not request_error
            logged = None
        # A request the server refused (a client's ValueError logged at ERROR: "maximum context
        # length is 32768 tokens. However, you requested 40000") is not the server failing.
        error = fatal or (level in ("ERROR", "CRITICAL", "FATAL") and not _REFUSED_REQUEST.search(line))
        matched_articles: set[str] = set()
        for sig, article, nsig, informational, decisive in sigs:
            if nsig in low and article not in matched_articles:
                matched_articles.add(article)
                key = f"{article}|{sig}"
                if informational:
                    severity = "info"
                elif error or decisive:
                    severity = "critical"
                else:
                    severity = "warning"
                seen = found.get(key)
                if seen is None:
                    found[key] = LogFinding(sig, article, severity, 1, n, _cut(line.strip()), error and severity == "critical")
                    continue
                seen.count += 1
                if SEVERITY[severity] < SEVERITY[seen.severity]:  # first seen as a warning, later as an error
                    seen.severity = severity
                seen.fatal = seen.fatal or (error and severity == "critical")
        # Not a traceback's frame (`File ".../pynccl.py", line 89` read as an NCCL crash) nor an
        # ERROR line with no message (a logged traceback's closing line; trial); judged only for
        # the error lines, not every line of a 2 MB log.
        if (not matched_articles and not source_line and (fatal or request_error or level in ("ERROR", "CRITICAL", "FATAL"))  # refused requests too, as warnings
                and _frame_of(line) is None and not _EMPTY_MESSAGE.match(message_of(line))):
            # An error line of its own (no exception class), said as a sentence: not a frame of a
            # traceback logged line by line, nor a request the server failed (review).
            said = error and logged is None and not in_request and _SENTENCE_ERROR.match(message_of(line)) is not None
            _unmatched(line, n, found, fatal, said)
        _numbers(line, report.numbers)
        _stats_trouble(line, report.stats_trouble)
        _settings(full[:MAX_ARGS_LINE], report.settings)  # an args line runs to thousands of characters
        if not report.platform and "latform" in line and (m := _PLATFORM_LINE.search(line)):  # (P|p)latform
            report.platform = PLATFORMS.get((m.group(1) or m.group(2)).lower(), "")
    report.last_line = _last_line(lines)
    from assistant.scope import log_product

    report.product = log_product(text)
    _frames_of_crashes(lines, found, first_line)
    # Worst first; among critical lines, what the server logged as an error or died of
    # before a warning-level symptom ("Waiting for free blocks" an hour before the crash).
    report.computed = computed_from(report.numbers, report.settings)
    # A wrapper ("EngineCore failed to start", "See root cause above") comes after the cause it wraps.
    # An error line known only by its level comes after what the log names better: an article's
    # signature or an exception (review).
    plain = {id(f) for key, f in found.items() if key.startswith(PLAIN_ERROR)}
    report.findings = sorted(found.values(), key=lambda f: (SEVERITY[f.severity], not f.fatal, id(f) in plain,
                                                           bool(_WRAPPER.search(f.signature)), f.first_line))
    return report


# Start-up failures that only wrap their cause, logged above or in another file.
_WRAPPER = re.compile(r"EngineCore failed|Engine core initialization failed|Failed to launch worker|Engine process failed"
                      r"|failed to start (?:the )?(?:engine|server)|See root cause above", re.I)


def _message(line: str) -> str:
    """A log line less its prefix: "ERROR 11-30 02:17:46 [engine.py:160] " and the like."""
    return re.sub(r"^.{0,80}?\]\s+", "", line.strip(), count=1)


_STAMP_AND_LEVEL = re.compile(r"^\s*(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s+)?"
                              r"(?:(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL|PANIC)\b:?\s+)?")


# What is left of a line that says nothing: vLLM's own time stamp and its source tag alone.
_EMPTY_MESSAGE = re.compile(r"^\s*(?:\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)?\s*(?:\[?[\w./-]{1,120}:\d{1,6}\])?\s*$")


def message_of(line: str) -> str:
    """What a log line says, without its bracketed prefix, or a leading ISO time and level
    ("2026-12-07T10:00:02Z FATAL Failed to create ExtProc server: …"): the part a page
    quotes."""
    message = _message(line)
    return _STAMP_AND_LEVEL.sub("", message, count=1) if message == line.strip() else message


def _stats_trouble(line: str, kept: list[str]) -> None:
    """Keep `line` among the last STATS_LINES_KEPT distinct stats lines that show trouble."""
    if len(line) < 2000 and STATS_TROUBLE.search(line):
        line = line.strip()
        if line in kept:
            kept.remove(line)
        kept.append(line)
        del kept[:-STATS_LINES_KEPT]


def _numbers(line: str, numbers: dict[str, float]) -> None:
    for name, pattern in NUMBERS.items():
        m = pattern.search(line)
        if m:
            numbers[name] = float(next(g for g in m.groups() if g).replace(",", ""))
            if name == "max_concurrency_tokens":
                numbers["max_concurrency_x"] = float(m.group(2))
            if name == "derived_max_len":  # whether this line's limit, the one kept, is the sliding window
                numbers["derived_is_window"] = float(bool(NUMBERS["derived_sliding_window"].search(line)))
            if name in ("kv_cache_max_len", "kv_available_gib"):  # vLLM's CPU backend names its own knob
                numbers["cpu_kv_space"] = float("VLLM_CPU_KVCACHE_SPACE" in line)
    stats = _STATS.search(line)
    if stats and float(stats.group(2)) >= FULL_KV_PCT and int(stats.group(1)) > numbers.get("waiting_at_full_kv", 0):
        numbers["waiting_at_full_kv"], numbers["kv_cache_usage_pct"] = int(stats.group(1)), float(stats.group(2))


_ARGS_LINE = re.compile(r"non-default args: \{|\bargs: Namespace\(")
MAX_ARGS_LINE = 20_000
MAX_NESTING = 6  # levels of nested settings peeled off (hf_overrides → rope_scaling → …); bounded on junk
_NESTED = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]")
_ARG = re.compile(r"(?:'(\w+)': |\b(\w+)=)('[^']{0,200}'|\"[^\"]{0,200}\"|[^,(){}\[\]\s]{1,80})")


_SECRET_NAME = re.compile(r"(?i)token|key|secret|passw|credential|auth")


def _settings(line: str, settings: dict[str, str]) -> None:
    """The settings a vLLM start-up line prints, as the flags that set them. An answer then
    says "you run with `--gpu-memory-utilization 0.95`" instead of "raise it to 0.95"."""
    m = _ARGS_LINE.search(line)
    if m is None:
        return
    namespace = m.group(0).endswith("(")
    rest = line[m.end():]
    for _depth in range(MAX_NESTING):  # {'temperature': 0.7} inside a setting is no setting of its own, at any depth
        rest, found = _NESTED.subn(" ", rest)
        if not found:
            break
    for key_a, key_b, value in _ARG.findall(rest):
        if bool(key_b) != namespace:
            continue
        value = value.strip("'\"")
        if value in ("None", "False", "") or len(value) > 80:
            continue
        key = key_a or key_b
        if _SECRET_NAME.search(key):
            value = "<redacted>"  # the server's hf_token and api_key came back in `ask --json` (trial)
        settings.setdefault("--" + key.replace("_", "-"), "" if value == "True" else value)


def settings_in(text: str) -> dict[str, str]:
    """The settings a pasted start-up line shows (`non-default args: {…}`, `args: Namespace(…)`),
    as flags: a log pasted into the question, or a chat's first message, is read like `--log`."""
    settings: dict[str, str] = {}
    for line in text.splitlines():
        _settings(line[:MAX_ARGS_LINE], settings)  # a line with no args mark gives nothing
    return settings


def numbers_in(text: str) -> dict[str, float]:
    """The numbers worth computing with that a pasted error or log carries."""
    numbers: dict[str, float] = {}
    for line in text.splitlines():
        _numbers(line, numbers)
    return numbers


# At or over this gpu_memory_utilization, "raise it" is no advice (answer._near_ceiling says so
# under the asker's settings).
NEAR_CEILING_UTILIZATION = 0.95


def at_ceiling(settings: dict[str, str] | None) -> tuple[str, str] | None:
    """The asker's gpu_memory_utilization setting (flag, value as written) when it is already
    near the ceiling (0.95 or more); None otherwise. --gpu_memory_utilization and
    GPU_MEMORY_UTILIZATION alike."""
    for flag, value in (settings or {}).items():
        if setting_key(flag) != "gpu-memory-utilization":
            continue
        try:
            share = float(value)
        except ValueError:
            continue
        if NEAR_CEILING_UTILIZATION <= share <= 1:
            return flag, value
    return None


def computed_from(numbers: dict[str, float], settings: dict[str, str] | None = None) -> list[dict[str, str]]:
    """What the numbers say, in both languages: the asker's own figure, not an article's
    example ("set --max-model-len 21456" quoted to someone whose KV cache holds 45232).
    `settings` are the flags the log or the question shows: a server already at
    `--gpu-memory-utilization 0.95` is not told to raise it for a longer context."""
    out: list[dict[str, str]] = []
    ceiling = at_ceiling(settings)
    tail = {"util": ceiling[1]} if ceiling else {}
    suffix = "_at_ceiling" if ceiling else ""
    if numbers.get("cpu_kv_space"):
        # "Try increasing `VLLM_CPU_KVCACHE_SPACE`": vLLM on CPUs, where the KV cache is host
        # memory set by that variable; it was told to raise --gpu-memory-utilization or add GPUs (trial).
        tail, suffix = {}, "_cpu"
    blocks = numbers.get("num_blocks_global")
    if blocks:
        bs = int(numbers.get("block_size", 64))
        out.append(both("tools.diagnose_log.kv_cache_from_blocks", blocks=int(blocks), block_size=bs, total=int(blocks) * bs))
    if "kv_cache_tokens" in numbers and "max_concurrency_tokens" in numbers:
        out.append(both("tools.diagnose_log.vllm_concurrency", tokens=numbers["kv_cache_tokens"], times=numbers["max_concurrency_x"],
                        per_request=numbers["max_concurrency_tokens"]))
    if "kv_cache_max_len" in numbers:
        fits, asked = int(numbers["kv_cache_max_len"]), int(numbers.get("max_seq_len", 0))
        if 0 < fits < asked:
            out.append(both("tools.diagnose_log.kv_max_model_len" + suffix, fits=fits, asked=asked, **tail))
    elif numbers.get("kv_needed_gib") and "kv_available_gib" in numbers and "max_seq_len" in numbers:
        # KV memory grows in proportion to the tokens: what is free holds that share of them.
        asked, needed, free = int(numbers["max_seq_len"]), numbers["kv_needed_gib"], numbers["kv_available_gib"]
        fits = int(asked * free / needed)
        if 0 < fits < asked:
            out.append(both("tools.diagnose_log.kv_max_model_len_estimated" + suffix, fits=fits, asked=asked, needed=needed, free=free,
                            **tail))
    derived, user = int(numbers.get("derived_max_len", 0)), int(numbers.get("user_max_len", 0))
    if 0 < derived < user:
        # The window is the limit only because the flag made it so: YaRN is no answer there.
        # (The line that gave the limit says so: a log may hold two such errors.)
        key = "derived_sliding_window" if numbers.get("derived_is_window") else "derived_max_len"
        out.append(both(f"tools.diagnose_log.{key}", derived=derived, asked=user))
    if numbers.get("waiting_at_full_kv", 0) >= 1:
        out.append(both("tools.diagnose_log.kv_cache_full_waiting", pct=numbers["kv_cache_usage_pct"],
                        waiting=int(numbers["waiting_at_full_kv"])))
    return out


TRACEBACK_LINES = 40


def _frames_of_crashes(lines: list[str], found: dict[str, LogFinding], first_line: int = 1) -> None:
    """A signature in the traceback of a crash ("    self.graph.replay()" above "RuntimeError:
    CUDA error: …") is part of the crash: a bare traceback prints its frames with no level."""
    crashes = [f.first_line for f in found.values() if f.fatal]
    for f in found.values():
        if f.fatal or f.severity == "info":
            continue
        line = untagged(unwrapped(lines[f.first_line - first_line]))
        if line[:1].isspace() and any(0 < c - f.first_line <= TRACEBACK_LINES for c in crashes):
            f.severity, f.fatal = "critical", True


PLAIN_ERROR = "|plain|"  # the key prefix of a finding that is an error line by its level alone
# An error said in words: three of them at least, and not a traceback's frame or source line.
_SENTENCE_ERROR = re.compile(r"(?!\s|File \"|Traceback|\^)(?:\S+\s+){2,}\S")


# A traceback's frame: the lines under it are the frame's source code, however they read
# (`raise RuntimeError("Engine core initialization failed. "` was listed as a crash, newcomer).
_FRAME = re.compile(r'(?:^|\s)(File) "[^"\n]{1,400}", line \d+')


def _frame_of(line: str) -> tuple[str, int] | None:
    """(the log prefix before a traceback frame's `File "…"`, the frame's indent), or None."""
    m = _FRAME.search(line) if "File" in line else None
    if m is None:
        return None
    before = line[:m.start(1)]
    prefix = before.rstrip()
    return prefix, len(before) - len(prefix)


def _indent(text: str) -> int:
    """Leading spaces: how deep a traceback line sits under its log prefix."""
    return len(text) - len(text.lstrip(" "))


FINDING_CHARS = 160


EXAMPLE_CHARS = 300


def _between_words(text: str, most: int) -> str:
    """`text` cut to at most `most` characters at its last space, when that is past the middle."""
    cut = text[:most]
    space = cut.rfind(" ")
    return cut[:space] if space > most // 2 else cut


def _cut(text: str) -> str:
    """A finding's example line cut between words: cut mid-word, "…stacktrace below might be"
    ended in "mig", which read as a question about MIG (trial)."""
    return text if len(text) <= EXAMPLE_CHARS else _between_words(text, EXAMPLE_CHARS)


def shown_signature(text: str) -> str:
    """A finding's text as listed: one cut at FINDING_CHARS is cut between words, with "…"
    (NCCL's watchdog lines were listed as "ran for 600021 millisecon", newcomer)."""
    if len(text) < FINDING_CHARS:
        return text
    return _between_words(text, FINDING_CHARS - 1).rstrip(" ,;:") + "…"


def _unmatched(line: str, n: int, found: dict[str, LogFinding], fatal: bool, error: bool = False) -> None:
    """An error no KB document has a signature for, said as the log says it, with no article
    to point at: a crash ("RuntimeError: CUDA error: an illegal memory access was
    encountered", "MQLLMEngine is already dead") is critical and outranks what came before;
    a request the server refused (a client's ValueError at ERROR) is a warning. Errors that
    differ only in their numbers are one finding, and a crash takes the place of a refused
    request when MAX_UNMATCHED are listed. A line the server logged at ERROR (`error`) is one
    too, exception class or not: "ERROR failed to initialize domain model …: models directory
    does not exist" was the cause of the FATAL line after it, and only that was listed
    (newcomer, semantic-router docs)."""
    m = _EXCEPTION.search(line)
    death = _DEATH.search(line)
    if m is None and death is None and not fatal and not error:
        return  # (a fatal line with neither: torch's "[E708 …] Watchdog caught collective operation timeout")
    message = _message(line)
    # Kept a plain prefix of the line: callers find it in pasted lines (`sig in line`); only its
    # display is cut between words (`shown_signature`).
    text = ((f"{m.group(1)}: {m.group(2).strip()}" if m.group(2) else m.group(1)) if m and not death else message)[:FINDING_CHARS]
    plain = m is None and death is None and not fatal
    key = (PLAIN_ERROR if plain else "|") + re.sub(r"\d+", "#", text)
    if key in found:
        found[key].count += 1
        return
    unlisted = [k for k, f in found.items() if not f.article]
    if len(unlisted) >= MAX_UNMATCHED:
        # A plain error line takes the place of the oldest plain one: the last errors before a
        # death are its cause, and three early "connection refused" lines kept it out (review).
        lesser = next((k for k in unlisted if k.startswith(PLAIN_ERROR)), None) if plain else \
            next((k for k in unlisted if not found[k].fatal), None)
        if (not fatal and not plain) or lesser is None:
            return
        del found[lesser]
    found[key] = LogFinding(text, "", "critical" if fatal else "warning", 1, n, _cut(line.strip()), fatal)


@tool
def diagnose_log(text: str | None = None, path: Annotated[str | None, LOCAL_PATH] = None, _kb_dir: str | None = None) -> LogDiagnosis:
    """Scan a server log for known failure signatures (CUDA out of memory, NCCL error, free_list_len: 0, Waiting for free blocks in KV cache, …) and for numbers such as num_blocks_global; each finding names the KB article that explains it.

    Args:
        text: the log text itself (pasted lines).
        path: a log file to read instead (its last 2 MB).
    """
    if not text and not path:
        raise ValueError("give the log text or a path")
    unread, first_line = 0, 1
    if path:
        try:
            text, unread, first_line = read_tail_located(path)
        except OSError as exc:
            raise ValueError(f"cannot read log file {path}: {exc.strerror or exc}") from exc
    report = diagnose_text(text or "", _kb_dir, first_line)  # None: the configured KB's index
    report.unread_bytes = unread
    return report


LOG_TAIL_BYTES = 2_000_000
# The start of a log that the tail left out, read for the start-up lines alone (`startup_lines`):
# where the server runs and with which settings are printed once, in the first lines, and a
# 13 MB ROCm log was answered with nvidia-smi checks because its platform line was cut.
STARTUP_HEAD_BYTES = 256_000


def startup_lines(head: bytes) -> list[str]:
    """The platform and args lines in the first bytes of a log the tail does not reach."""
    text = head[:STARTUP_HEAD_BYTES].decode("utf-8", errors="replace")
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1] or lines  # the last is cut short, where the tail or the head's limit begins
    return [line for line in lines if _PLATFORM_LINE.search(line[:MAX_LINE]) or _ARGS_LINE.search(line[:MAX_LINE])][:4]


def with_startup(text: str, first_line: int, head_lines: list[str]) -> tuple[str, int]:
    """The tail with the start-up lines it lacks put before it, and its first line's number
    moved back by as many, so every line of the tail keeps its number in the log."""
    # A log appended to across restarts has its own run's lines in the tail: those win (review).
    kinds = (_PLATFORM_LINE, _ARGS_LINE)
    kept = [line for line in head_lines if line not in text
            and not any(kind.search(line[:MAX_LINE]) and kind.search(text) for kind in kinds)]
    if not kept:
        return text, first_line
    return "\n".join(kept) + "\n" + text, max(1, first_line - len(kept))


def unread_note(unread: int, lang: str) -> str:
    """The line saying a long log's start was not read (an OOM at line 101 of a 13 MB log
    went unscanned, and nothing said so), for `ask --log` and `doctor --log` alike."""
    from assistant.i18n import t

    return t("answer.log_unread", lang, total=f"{(unread + LOG_TAIL_BYTES) / 1e6:.1f} MB", read=f"{LOG_TAIL_BYTES / 1e6:.1f} MB")


def read_tail(path: str, limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a regular file, decoded leniently (logs mix encodings)."""
    return read_tail_counted(path, limit)[0]


def read_tail_counted(path: str, limit: int = LOG_TAIL_BYTES) -> tuple[str, int]:
    """`read_tail`, and how many bytes before the tail were not read (0 for a whole file):
    an OOM at line 101 of a 13 MB log was never scanned, and nothing said so."""
    text, unread, _ = read_tail_located(path, limit, count_lines=False)
    return text, unread


def read_tail_located(path: str, limit: int = LOG_TAIL_BYTES, count_lines: bool = True) -> tuple[str, int, int]:
    """`read_tail_counted`, and the line number in the file of the tail's first line: counted
    from the tail's start, a warning at line 30,002 of a 4 MB log was reported at line 14,707.

    Opened non-blocking and checked with fstat before reading, so a FIFO, a device such
    as /dev/zero or a directory is refused at once instead of hanging or filling memory."""
    import os
    import stat

    fd = os.open(os.path.expanduser(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is not a regular file")
        start = max(0, info.st_size - limit)
        first_line = 1 + (_newlines_before(fd, start) if count_lines else 0)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, remaining = [], limit
        while remaining > 0:
            block = os.read(fd, min(remaining, 1 << 20))
            if not block:
                break
            chunks.append(block)
            remaining -= len(block)
        data = b"".join(chunks)
        head = b""
        if start:
            os.lseek(fd, 0, os.SEEK_SET)
            head = os.read(fd, min(start, STARTUP_HEAD_BYTES))
    finally:
        os.close(fd)
    if data[:2] == b"\x1f\x8b" or head[:2] == b"\x1f\x8b":
        raise ValueError(f"{path} is gzip-compressed: `zcat {path} | ask --log -` reads it")
    if _binary(data):
        raise ValueError(f"{path} looks like binary data, not a text log")
    text, first_line = with_startup(data.decode("utf-8", errors="replace"), first_line, startup_lines(head))
    return text, start, first_line


@dataclass
class StreamTail:
    """The last bytes of a stream, and what was passed over to reach them."""

    data: bytes
    skipped: int  # bytes before `data`
    newlines: int  # newlines in them
    head: bytes  # the stream's first STARTUP_HEAD_BYTES
    stopped: str = ""  # "" at the stream's end; "idle" or "size" when reading stopped before it


# A followed log (`kubectl logs -f pod | ask -`, `tail -f`) never ends: once it has said something
# and then falls silent this long, what it said is answered. Before, `ask -` waited forever with
# nothing on screen. `yes | ask -` never falls silent; it stops at STREAM_MOST_BYTES.
STREAM_IDLE_SECONDS = 3.0
STREAM_MOST_BYTES = 1 << 30


def _pipe(stream) -> int | None:
    """The file descriptor of a pipe or socket behind `stream`, which may fall silent without
    ending; None for a file, a terminal (a paste ends with Ctrl-D) or an in-memory stream."""
    import os
    import stat

    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None


def _silent(fd: int, seconds: float) -> bool:
    import select

    return not select.select([fd], [], [], seconds)[0]


def stream_tail(stream, limit: int, idle: float = STREAM_IDLE_SECONDS, most: int = STREAM_MOST_BYTES) -> StreamTail:
    """Read a stream to its end holding only its last `limit` bytes. Binary data is refused at
    its first block: `cat /dev/zero | ask -` would never end. A pipe that has sent something and
    then stays silent for `idle` seconds (a followed log), or has sent `most` bytes, is read no
    further; `stopped` says which."""
    import os

    fd = _pipe(stream)
    held: list[bytes] = []
    size = skipped = newlines = 0
    head = b""
    stopped = ""
    while True:
        if fd is not None and held and _silent(fd, idle):
            stopped = "idle"
            break
        block = os.read(fd, 1 << 20) if fd is not None else stream.read(1 << 20)
        if not block:
            break
        if len(head) < STARTUP_HEAD_BYTES:
            head += block[:STARTUP_HEAD_BYTES - len(head)]
        if not held and not skipped and _binary(block):
            raise ValueError("the input on stdin looks like binary data, not text")
        held.append(block)
        size += len(block)
        while size - len(held[0]) >= limit:  # whole blocks the tail no longer needs
            old = held.pop(0)
            size -= len(old)
            skipped += len(old)
            newlines += old.count(b"\n")
        if skipped + size >= most:
            stopped = "size"
            break
    data = b"".join(held)
    if len(data) > limit:
        cut = len(data) - limit
        newlines += data[:cut].count(b"\n")
        skipped += cut
        data = data[cut:]
    return StreamTail(data, skipped, newlines, head, stopped)


def stopped_note(tail: StreamTail, lang: str) -> str:
    """The line saying stdin was answered before it ended, and how to pass a log that ends."""
    from assistant.i18n import t

    size = tail.skipped + len(tail.data)
    read = f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size:,} bytes"
    if tail.stopped == "idle":
        return t("answer.stdin_idle", lang, seconds=f"{STREAM_IDLE_SECONDS:g}", read=read)
    return t("answer.stdin_endless", lang, read=read)


def read_tail_stream(stream, limit: int = LOG_TAIL_BYTES, notes: list[str] | None = None,
                     lang: str = "en") -> tuple[str, int, int]:
    """`read_tail_located` for a pipe (`kubectl logs pod | ask --log - "why"`): its last `limit`
    bytes, with the newlines of what was passed over counted so findings keep their line in
    the log. `notes` gets a line when the pipe was not read to its end."""
    tail = stream_tail(stream, limit)
    if (tail.head or tail.data)[:2] == b"\x1f\x8b":
        raise ValueError("the log on stdin is gzip-compressed: pipe it through `zcat` first")
    if _binary(tail.data):
        raise ValueError("the log on stdin looks like binary data, not a text log")
    if tail.stopped and notes is not None:
        notes.append(stopped_note(tail, lang))
    text, first_line = with_startup(tail.data.decode("utf-8", errors="replace"), 1 + tail.newlines,
                                    startup_lines(tail.head[:tail.skipped]) if tail.skipped else [])
    return text, tail.skipped, first_line


def _newlines_before(fd: int, end: int) -> int:
    """Newlines in the first `end` bytes of an open file: the lines the tail skipped (about a
    second per GB, read in blocks, never held whole)."""
    import os

    os.lseek(fd, 0, os.SEEK_SET)
    count, remaining = 0, end
    while remaining > 0:
        block = os.read(fd, min(remaining, 4 << 20))
        if not block:
            break
        count += block.count(b"\n")
        remaining -= len(block)
    return count


def _binary(data: bytes) -> bool:
    """Whether bytes are not text: NUL bytes, or many bytes that decode to nothing (a log in
    GBK or with a stray byte is still text). Scanning junk for signatures said "nothing
    found" as if a real log had been read."""
    sample = data[-65536:]
    if not sample:
        return False
    if sample.count(b"\x00") > len(sample) // 100:
        return True
    return odd_share(sample.decode("utf-8", errors="replace")) > 0.3 and odd_share(sample.decode("gb18030", errors="replace")) > 0.02


def odd_share(text: str) -> float:
    """The share of characters that decoded to nothing or are control characters. A Chinese
    question or log in GBK (a Chinese Windows console) is nearly all undecodable as UTF-8 but
    reads whole as GB18030, its superset; junk does neither."""
    if not text:
        return 0.0
    return sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\x1b\x0c")) / len(text)
