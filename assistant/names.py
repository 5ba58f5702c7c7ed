"""The names a question asks about by their exact spelling: settings, flags, env vars.

"What does --max_memory_utilization include?" is answered by the table row that names
`max_memory_utilization`: answer.py picks a big table's rows and a settings listing's
pieces by them. (Preferring, in retrieval, the passages that name them was tried and
dropped: askers name the settings they already use as often as the one they ask about.)
"""

from __future__ import annotations

import re

# Model families are named in most real questions and are rarely what the question is
# about: retrieval keeps them from counting as subjects the KB lacks or as its keywords, and
# the capacity parser reads the number after one as a version ("llama 3 70b").
MODEL_FAMILIES = frozenset(
    "qwen qwq llama mistral mixtral deepseek gemma phi baichuan chatglm glm internlm ernie falcon vicuna minicpm "
    "command nemotron starcoder codellama bloom opt gpt yi kimi hunyuan doubao olmo granite exaone aya jamba".split())

# An exception's name as Python prints it ("RuntimeError", "torch.OutOfMemoryError"), bounded so
# that a search over a long dotted run stays linear: log diagnosis and scope build on it.
EXCEPTION_NAME = r"(?:[A-Za-z_][\w.]{0,80})?(?:Error|Exception)"

# The process a log line came from, which vLLM, Ray and torch.distributed put before the line:
# "(EngineCore_0 pid=679800) ", "(VllmWorker TP0 pid=12) ", "(RayWorkerWrapper pid=9, ip=10.0.0.2) ",
# "(autoscaler +7s) ", "[rank0]: ". One space after it: a stack frame keeps its indent.
PROCESS_TAG = (r"(?:\([\w.\-]{1,40}(?: [\w.\-]{1,20})?(?:(?: (?:pid|rank)=\d{1,10})+(?:, ip=[\w.:]{1,45})?| \+\d{1,6}m?s)\) ?"
               r"|\[rank\d{1,5}\]: ?)")
_PROCESS_TAGS = re.compile(rf"^\s*(?:{PROCESS_TAG})+")


# What log shippers wrap a line in: ANSI colours (a terminal capture), Docker's `logs -t` time
# stamp, kubectl's `--prefix` tag. Left on, a traceback's last line no longer started the line
# and a failed start-up was called clean (trial).
ANSI_CODE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # one pattern for logs and questions alike
_SHIPPER_PREFIX = re.compile(r"^(?:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})\s|\[pod/[^\]\s]{1,253}\]\s)+")
_JSON_MESSAGE = ("msg", "message", "log", "MESSAGE")
_JSON_LEVEL = ("level", "levelname", "severity", "lvl", "log.level", "PRIORITY")


def unwrapped(line: str) -> str:
    """A log line as the server printed it: ANSI codes, a shipper's time stamp or pod tag, and
    a JSON-lines envelope ({"msg": …, "level": "ERROR"} from Loki, ELK or Fluent Bit, whose
    level may come after a long message) taken off, the level put first."""
    if "\x1b" in line:
        line = ANSI_CODE.sub("", line)
    if line[:1].isdigit() or line.startswith("[pod/"):
        line = _SHIPPER_PREFIX.sub("", line, count=1)
    stripped = line.strip()
    if stripped.startswith("{") and stripped.endswith("}") and len(stripped) < 100_000:
        import json

        try:
            record = json.loads(stripped)
        except ValueError:
            return line
        if isinstance(record, dict):
            message = next((record[k] for k in _JSON_MESSAGE if isinstance(record.get(k), str)), None)
            if message is not None:
                level = next((str(record[k]) for k in _JSON_LEVEL if isinstance(record.get(k), (str, int))), "")
                message = unwrapped(message.rstrip("\n"))
                shown = level.upper()
                said = shown and re.search(rf"\b{re.escape(shown)}\b", message[:100])
                return f"{shown} {message}" if shown and not said else message
    return line


def untagged(line: str) -> str:
    """The line without the process tag in front of it: "(EngineCore pid=1) torch.AcceleratorError:
    CUDA error" is a bare traceback line, and "(EngineCore pid=1)   File …" a stack frame."""
    return _PROCESS_TAGS.sub("", line, count=1) if line[:1] in "([ \t" else line

# Names a question asks about by their exact spelling: FD_DISABLED_RECOVER, kernel.msgmax,
# --max-num-seqs, NCCL. Plain words ("default", "timeout") are not: every row says them.
_IDENT = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]+|[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)+|\b[A-Z][A-Z0-9]{2,}\b")


def setting_key(name: str) -> str:
    """A setting however it is written: --max_num_seqs, max-num-seqs and MAX_NUM_SEQS alike."""
    return name.lstrip("-").lower().replace("_", "-")


def asked_identifiers(question: str) -> frozenset[str]:
    """The names, spelt alike whichever way they are written: "--max_memory_utilization"
    asked, `max_memory_utilization` in a table row; --max-num-seqs and max_num_seqs."""
    names = (m.lower().lstrip("-").replace("-", "_") for m in _IDENT.findall(question or "")
             if not compound_word(m) and not _abbreviation_or_host(m))
    return frozenset(n for n in names if n not in _ACRONYMS)


_HOST = re.compile(r"\.(?:ai|com|io|org|net|cn|dev|html?|md)$", re.I)


def _abbreviation_or_host(word: str) -> bool:
    """"e.g", "i.e" (a one-letter part) and "docs.vllm.ai", "README.md": no settings."""
    return "." in word and (any(len(part) == 1 for part in word.split(".")) or bool(_HOST.search(word)))


# Capitals every question and page says: no setting is named by them alone.
_ACRONYMS = frozenset("gpu gpus cpu cpus api apis http https json url urls yaml ram vram oom llm llms tpu npu sdk cli faq "
                      "readme todo docker cuda nccl nvidia".split())


def setting_names(asked: frozenset[str]) -> frozenset[str]:
    """The asked names that can only be settings (max_memory_utilization, kernel.msgmax,
    FD_DISABLED_RECOVER), not a word a listing's description may say."""
    return frozenset(a for a in asked if "_" in a or "." in a)


_COMPOUNDS = frozenset("out-of-memory end-to-end up-to-date state-of-the-art out-of-the-box step-by-step one-by-one "
                       "first-come-first-served out-of-range".split())


def compound_word(word: str) -> bool:
    """"per-token", "token-level", "multi-gpu": English compounds, not settings; a setting
    written without its dashes has three parts or more (max-num-seqs)."""
    low = word.lower()  # "Multi-GPU" at a sentence's start is a compound too
    return (not word.startswith("-") and "-" in word and not re.search(r"[_.\d]", word)
            and (word.count("-") < 2 or low in _COMPOUNDS))


# An error or event code as runbooks list them: "Xid 79", "HTTP 502", "exit code 137",
# "错误码 1001". The number alone is what a table row holds ("| 79 | GPU fell off the bus |").
_CODE = re.compile(r"(?i)(?<![A-Za-z0-9_-])(xid|http|status code|exit code|return code|error code|errno|signal|错误码|状态码|返回码|退出码)"
                   r"[\s:：=#-]{0,3}(\d{2,5})(?![\w.])")


_HTTP_WORDS = frozenset({"http", "status code", "状态码"})
# The kernel's own line puts the PCI address between the word and the code:
# "NVRM: Xid (PCI:0000:b3:00): 48, pid=88121, name=python3, …".
_KERNEL_XID = re.compile(r"(?i)\bxid\s*\(pci:[0-9a-f:.]{4,20}\)\s*:\s*(\d{1,3})(?!\d)")


def asked_codes(question: str) -> dict[str, str]:
    """Number → the word that names it ("79" → "xid"), for each code the question names."""
    codes = {number: word.lower() for word, number in _CODE.findall(question or "")
             if not (word.lower() in _HTTP_WORDS and int(number) < 400)}  # "HTTP 200": no error, no code to look up
    codes.update({number: "xid" for number in _KERNEL_XID.findall(question or "")})
    return codes


def states_code(text: str, codes: dict[str, str]) -> list[str]:
    """The codes `text` states as such ("Xid 48" written as "XID 48 (double-bit ECC error)",
    or a table row that starts with 48 under a header naming Xid), as "xid 48": evidence as
    sure as a quoted error line that the text is about the code asked."""
    found = []
    low = text.lower()
    for number, word in codes.items():
        if word.split()[-1] not in low:
            continue
        beside = re.search(rf"(?<![a-z0-9_-]){re.escape(word)}[\s:：=#(-]{{0,3}}{number}(?![\w.])", low)
        if beside or _row_under_header(low, number, word):
            found.append(f"{word} {number}")
    return found


def _row_under_header(text: str, number: str, word: str) -> bool:
    """Whether a table row starts with `number` in a table whose header row names `word`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not re.match(rf"\s*\|?\s*{number}\s*\|", line):
            continue
        start = i
        while start > 0 and "|" in lines[start - 1]:
            start -= 1
        if word.split()[-1] in lines[start]:
            return True
    return False


def names_code(text: str, codes: dict[str, str]) -> bool:
    """Whether `text` has a line holding one of the codes (a table row, a list item), under
    the word that names it anywhere in the text (a table's header says "Xid" once)."""
    if not codes:
        return False
    low = text.lower()
    for number, word in codes.items():
        if word.split()[-1] not in low:
            continue
        if any(re.search(rf"(?<![\w.]){number}(?![\w.])", line) for line in text.splitlines()):
            return True
    return False
