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

from . import LOCAL_PATH, tool

SEVERITY = {"critical": 0, "warning": 1, "info": 2}
# Signatures that decide an incident on their own; others are supporting evidence.
CRITICAL = {"CUDA out of memory", "NCCL error", "Torch not compiled with CUDA enabled", "free_list_len: 0",
            "Waiting for free blocks in KV cache", "OutOfMemoryError"}
# Signatures that carry a number to read, not a problem.
INFORMATIONAL = {"num_blocks_global"}

NUMBERS = {
    "num_blocks_global": re.compile(r"num_blocks_global\s*[:=]\s*(\d+)"),
    "block_size": re.compile(r"block_size\s*[:=]\s*(\d+)"),
    "kv_cache_tokens": re.compile(r"GPU KV cache size:\s*([\d,]+)\s*tokens"),
    # the tokens per request the figure is for, and (as max_concurrency_x) the figure itself
    "max_concurrency_tokens": re.compile(r"Maximum concurrency for ([\d,]+) tokens per request:\s*([\d.]+)x"),
    "total_block_num": re.compile(r"total_block_num\s*[:=]\s*(\d+)"),
    "prefill_kvcache_block_num": re.compile(r"prefill_kvcache_block_num\s*[:=]\s*(\d+)"),
    # vLLM refusing to start: "max seq len (131072) is larger than … stored in KV cache (45232)",
    # or, in newer versions, "the estimated maximum model length is 157216".
    "max_seq_len": re.compile(r"max seq len \(([\d,]+)\)"),
    "kv_cache_max_len": re.compile(r"stored in KV cache \(([\d,]+)\)|estimated maximum model length is ([\d,]+)"),
}


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


# The level a line was logged at: vLLM's "ERROR 11-30 …", Python's "ERROR:root:", uvicorn's "ERROR:".
_LEVEL = re.compile(r"^\W{0,3}(?:\(\w+(?: pid=\d+)?\)\s*)?(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)\b", re.I)
# The server going down, whatever the log level says.
_DEATH = re.compile(r"EngineDeadError|engine is already dead|is already dead, terminating|terminating server process"
                    r"|EngineCore (?:encountered|failed)|Engine process failed|worker.{0,40}(?:died|exited unexpectedly)"
                    r"|Segmentation fault|core dumped|\bKilled\b|Fatal Python error", re.I)
# The exception a traceback ends in: "RuntimeError: CUDA error: an illegal memory access…".
_EXCEPTION = re.compile(r"\b((?:[A-Za-z_][\w.]*)?(?:Error|Exception)): (\S.{3,200})")
MAX_UNMATCHED = 3


def _level(line: str) -> str:
    m = _LEVEL.search(line)
    return m.group(1).upper() if m else ""


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


def kb_signatures(kb: object = None) -> tuple[tuple[str, str], ...]:
    """(signature, document id) pairs from the front matter of every document in the index
    in use — the KB's articles and any runbook added with `assistant ingest` — longest
    first, so "RuntimeError: NCCL error in:" is preferred over "NCCL error"."""
    from assistant.knowledge import KB

    if isinstance(kb, KB):  # an open KB: its own documents
        pairs: dict[str, str] = {}
        for meta in kb.index.docs.values():
            for sig in meta.signatures:
                pairs.setdefault(sig, meta.id)
        return tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0])))
    from assistant.knowledge import kb_signatures as indexed_signatures

    return tuple(indexed_signatures(_kb_settings(kb)))


def _norm(text: str) -> str:
    import unicodedata

    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).lower()


def diagnose_text(text: str, kb: object = None) -> LogDiagnosis:
    """Findings in a log. kb names the index whose signatures count: Settings, a KB from
    open_kb, a KB directory path, or None for the configured KB."""
    lines = text.splitlines()
    report = LogDiagnosis(len(lines))
    sigs = [(s, a, _norm(s)) for s, a in kb_signatures(kb)]
    found: dict[str, LogFinding] = {}
    for n, line in enumerate(lines, 1):
        low = _norm(line)
        level = _level(line)
        fatal = level in ("ERROR", "CRITICAL", "FATAL") or bool(_DEATH.search(line))
        matched_articles: set[str] = set()
        for sig, article, nsig in sigs:
            if nsig in low and article not in matched_articles:
                matched_articles.add(article)
                key = f"{article}|{sig}"
                if key in found:
                    found[key].count += 1
                    found[key].fatal = found[key].fatal or (fatal and sig not in INFORMATIONAL)
                else:
                    if sig in INFORMATIONAL:
                        severity = "info"
                    elif fatal or any(c.lower() in nsig for c in CRITICAL):
                        severity = "critical"
                    else:
                        severity = "warning"
                    found[key] = LogFinding(sig, article, severity, 1, n, line.strip()[:300], fatal and severity == "critical")
        if fatal and not matched_articles:
            _unmatched(line, n, found)
        _numbers(line, report.numbers)
    # Worst first; among critical lines, what the server logged as an error or died of
    # before a warning-level symptom ("Waiting for free blocks" an hour before the crash).
    report.computed = computed_from(report.numbers)
    report.findings = sorted(found.values(), key=lambda f: (SEVERITY[f.severity], not f.fatal, f.first_line))
    return report


def _numbers(line: str, numbers: dict[str, float]) -> None:
    for name, pattern in NUMBERS.items():
        m = pattern.search(line)
        if m:
            numbers[name] = float(next(g for g in m.groups() if g).replace(",", ""))
            if name == "max_concurrency_tokens":
                numbers["max_concurrency_x"] = float(m.group(2))


def numbers_in(text: str) -> dict[str, float]:
    """The numbers worth computing with that a pasted error or log carries."""
    numbers: dict[str, float] = {}
    for line in text.splitlines():
        _numbers(line, numbers)
    return numbers


def computed_from(numbers: dict[str, float]) -> list[dict[str, str]]:
    """What the numbers say, in both languages: the asker's own figure, not an article's
    example ("set --max-model-len 21456" quoted to someone whose KV cache holds 45232)."""
    out: list[dict[str, str]] = []
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
            out.append(both("tools.diagnose_log.kv_max_model_len", fits=fits, asked=asked))
    return out


def _unmatched(line: str, n: int, found: dict[str, LogFinding]) -> None:
    """A crash no KB document has a signature for ("RuntimeError: CUDA error: an illegal
    memory access was encountered", "MQLLMEngine is already dead"): still the finding that
    matters most, said as the log says it, with no article to point at."""
    m = _EXCEPTION.search(line)
    death = _DEATH.search(line)
    if m is None and death is None:
        return
    message = re.sub(r"^.{0,80}?\]\s+", "", line.strip(), count=1)  # less "ERROR 11-30 02:17:46 [engine.py:160] "
    text = f"{m.group(1)}: {m.group(2).strip()}" if m else message
    text = text[:160]
    key = f"|{text}"
    if key in found:
        found[key].count += 1
    elif sum(1 for f in found.values() if not f.article) < MAX_UNMATCHED:
        found[key] = LogFinding(text, "", "critical", 1, n, line.strip()[:300], True)


@tool
def diagnose_log(text: str | None = None, path: Annotated[str | None, LOCAL_PATH] = None, _kb_dir: str | None = None) -> LogDiagnosis:
    """Scan a server log for known failure signatures (CUDA out of memory, NCCL error, free_list_len: 0, Waiting for free blocks in KV cache, …) and for numbers such as num_blocks_global; each finding names the KB article that explains it.

    Args:
        text: the log text itself (pasted lines).
        path: a log file to read instead (its last 2 MB).
    """
    if not text and not path:
        raise ValueError("give the log text or a path")
    unread = 0
    if path:
        try:
            text, unread = read_tail_counted(path)
        except OSError as exc:
            raise ValueError(f"cannot read log file {path}: {exc.strerror or exc}") from exc
    report = diagnose_text(text or "", _kb_dir)  # None: the configured KB's index
    report.unread_bytes = unread
    return report


LOG_TAIL_BYTES = 2_000_000


def read_tail(path: str, limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a regular file, decoded leniently (logs mix encodings)."""
    return read_tail_counted(path, limit)[0]


def read_tail_counted(path: str, limit: int = LOG_TAIL_BYTES) -> tuple[str, int]:
    """`read_tail`, and how many bytes before the tail were not read (0 for a whole file):
    an OOM at line 101 of a 13 MB log was never scanned, and nothing said so.

    Opened non-blocking and checked with fstat before reading, so a FIFO, a device such
    as /dev/zero or a directory is refused at once instead of hanging or filling memory."""
    import os
    import stat

    fd = os.open(os.path.expanduser(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is not a regular file")
        os.lseek(fd, max(0, info.st_size - limit), os.SEEK_SET)
        chunks, remaining = [], limit
        while remaining > 0:
            block = os.read(fd, min(remaining, 1 << 20))
            if not block:
                break
            chunks.append(block)
            remaining -= len(block)
        data = b"".join(chunks)
    finally:
        os.close(fd)
    if _binary(data):
        raise ValueError(f"{path} looks like binary data, not a text log")
    return data.decode("utf-8", errors="replace"), max(0, info.st_size - limit)


def _binary(data: bytes) -> bool:
    """Whether bytes are not text: NUL bytes, or many bytes that decode to nothing (a log in
    GBK or with a stray byte is still text). Scanning junk for signatures said "nothing
    found" as if a real log had been read."""
    sample = data[-65536:]
    if not sample:
        return False
    if sample.count(b"\x00") > len(sample) // 100:
        return True
    text = sample.decode("utf-8", errors="replace")
    odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\x1b\x0c"))
    return odd > len(text) * 0.3
