"""Separating what a question says from what it pastes.

Real questions arrive with a `vllm serve …` command line, a Python snippet, a
docker-compose file or a stack trace around the one line that matters. Every word of the
paste used to count as a topic word, so `enforce_eager=True` in a snippet pulled the CUDA
graph article and `image: vllm/vllm-openai` plus "H100" pulled chunked prefill. Here each
line is sorted into prose, error, log, code/config, command or stack frame; retrieval reads
the prose and the errors, and the command line's flags are kept as facts the answer can
quote ("you run with `--gpu-memory-utilization 0.97`").

Everything is line-by-line with anchored, linear patterns: a hostile 8 kB paste costs the
same as a normal one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .negation import without_ruled_out
from .names import PROCESS_TAG, compound_word, untagged

MAX_LINES = 400  # a paste longer than this is mostly log; the rest adds nothing but time

_FENCE = re.compile(r"^\s*(```|~~~)")
_STACK = re.compile(r'^\s*(File "[^"]{0,500}", line \d{1,7}|at [\w.$<>]{1,200}\(|Traceback \(most recent call last\)|\^+\s*$|~+\^*~*\s*$)')
# An exception or error line: "RuntimeError: …", "torch.OutOfMemoryError: …", "ERROR …", "error: …".
_ERROR = re.compile(
    r"(^|[\s\[(])("
    r"[A-Za-z_][\w.]{0,80}(Error|Exception|Exit|Interrupt|Warning)\b"
    r"|error|errors|failed|failure|fatal|panic|abort(ed)?|killed|segmentation fault|core dumped|oom"
    r"|报错|错误|失败|异常|超时|卡住|崩溃"
    r")",
    re.I,
)
# (and torch's c10 lines, "[W1002 09:16:04.123456789 ProcessGroupNCCL.cpp:1538] Warning: …", trial)
_LOG_PREFIX = re.compile(r"^\s*(\(\w{1,40}(\s+pid=\d{1,10})?\)\s*)?(\[?\d{4}-\d{2}-\d{2}|\[?\d{2}-\d{2}\s\d{2}:\d{2}|\[?[IWEF]\d{4} \d{2}:\d{2}:\d{2}|\[[IWEF] [\w.]{1,80}:\d{1,6}\]|(INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL)\b|\[(INFO|DEBUG|WARNING|WARN|ERROR)\])")
# (and glog's level letter: torch's c10 "[E1207 11:12:31.402345 …]", Paddle's unbracketed
# "W0612 10:20:30.123 12345 gpu_resources.cc:119]", torch 2.0's "[E ProcessGroupNCCL.cpp:475]")
_LOG_LEVEL_PROBLEM = re.compile(r"\b(WARNING|WARN|ERROR|CRITICAL|FATAL)\b|(?<![\w\]])\[?[EWF]\d{4} \d{2}:|\[[EWF] [\w.]{1,80}:\d{1,6}\]")
_COMMAND = re.compile(
    r"^\s*(\$\s|#\s*\$|>>>\s|%\s|[\w.@~:/-]{1,120}\$\s|(sudo\s)?(python3?|vllm|docker|docker-compose|kubectl|pip3?|uv|conda|torchrun|deepspeed|"
    r"fastdeploy|bash|sh|export|curl|nvidia-smi|sysctl|ray|cargo|cmake|git|ollama|lmdeploy|helm|nvcc|apt|apt-get|yum|brew|npm|"
    r"huggingface-cli|modelscope|accelerate|tritonserver|xinference|"
    r"CUDA_VISIBLE_DEVICES=\S*|[A-Z][A-Z0-9_]{2,40}=\S*\s+(python3?|vllm))\b"
    # Any other program, known by its shape: a path (./target/release/server, ~/bin/x) or a
    # hyphenated name (llama-server, mistralrs-server), then at most three words, then a flag.
    r"|(\.{1,2}|~)?/[\w.-]+(/[\w.-]+)*\s+(\S+\s+){0,3}--?[A-Za-z]|(\.{1,2}|~)/[\w.-]+(/[\w.-]+)*\s*$"
    r"|[a-z][\w.]*-[\w.-]+\s+([\w./:-]+\s+){0,3}--?[A-Za-z])"
)
_CONFIG = re.compile(
    r"^\s*(-\s+)?("
    r"[\w.\-]{1,60}:\s*[\w\"'\[{/.\-]"  # yaml  key: value
    r"|[\w.\-]{1,60}:\s*$"  # yaml  key:
    r"|-\s*[\"']?--[\w-]"  # yaml list of flags
    r"|\"[\w.\-]{1,60}\"\s*:"  # json  "key":
    r"|[{}\[\]],?\s*$"  # a lone brace
    r")"
)
_CODE = re.compile(
    r"^\s*(from\s+[\w.]+\s+import\b|import\s+[\w.]+|def\s+\w+\(|class\s+\w+|return\b|if\s+__name__|for\s+\w+\s+in\b|with\s+\w"
    r"|print\(|[\w.]{1,80}\([^\s)]{0,80}\)(?:\.\w+\([^\s)]{0,80}\))*\s*$|[\w.\[\]'\"]{1,80}\s*=\s*\S|[\w.]{1,80}\(.*[,(=]\s*$|\w+=[\w\"'.\[\]{}-]+,?\s*\)?\s*$|\)\s*$|#\s)"
)
# A value is not the sentence going on after a flag: "the largest --max-model-len I can run" (trial).
_FLAG = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]{1,60})(?:[ =]+(?!--)(?!(?:I|a|an|the|to|for|with|on|in|is|are|can|and|or|of|it"
                   r"|my|we|you|that|this|at|be|if|do|does|will|should|would|so|but|when|which|fits?|works?|helps?)\b)"
                   r"([^\s\\'\"。，；：、]{1,80}|\"[^\"]{0,80}\"|'[^']{0,80}'))?")
_KWARG = re.compile(r"(?<![\w.-])([a-z][a-z0-9_]{2,60})\s*=\s*([\w.\-]{1,40}|\"[^\"]{0,60}\"|'[^']{0,60}')")
_PROSE_WORDS = re.compile(r"[A-Za-z]{2,}")
# A command line pasted inside a sentence: "server has no internet. python -m vllm… --model x",
# "直接 CUDA_VISIBLE_DEVICES=6,7 vllm serve … --tensor-parallel-size 2 没问题".
_INLINE_COMMAND = re.compile(
    r"(?:(?<=^)|(?<=[\s`(（：:，。；]))(?:sudo\s+)?(?:python3?\s+-m\s|vllm\s+serve\s|docker\s+run\s|docker[\s-]compose\s|torchrun\s"
    r"|llamafactory-cli\s|lmdeploy\s+serve\s|CUDA_VISIBLE_DEVICES=\S+\s+(?:vllm\s+serve|python3?\s+-m)\s"
    r"|(?:cargo|cmake|git|nvcc|npm)\s+[a-z][\w-]*\s+(?=-)|pip3?\s+install\s|\.{1,2}/[\w.-]+(?:/[\w.-]+)*\s+(?=-)"
    r"|(?<=`)[a-z][\w.]*-[\w.-]+\s+(?=-))"
)
# The C++ runtime's last words when an exception escapes (torch's c10 errors, NCCL's
# watchdog): "terminate called after throwing an instance of 'c10::DistBackendError'" and the
# "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] …" under it. Read as sentences, their
# names (default_pg) were what the asker "asked about" and the refusal named it (newcomer).
# Only the line as the runtime prints it: one that goes on with the asker's sentence ("… of
# 'c10::Error' — what does this mean?") is read as the rest are (review).
_CXX_ABORT = re.compile(r"^\s*(?:terminate called (?:after throwing an instance of '[^'\n]{1,200}'|recursively|without an active exception)"
                        r"\s*$|what\(\):)")
# A program's own message: its name, a colon, then what it says ("vllm serve: error: …").
PROGRAM_SAYS = re.compile(r"^\s*[\w./-]{1,60}(?:\s[\w./-]{1,60})?:\s")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
# A python dict or list printed inline: "{'tokenizer_mode': 'auto', 'trust_remote_code': True, …}".
_LITERAL = re.compile(r"^\s*[{\[]\s*['\"][\w.\-]{1,60}['\"]\s*[:,]")
# A status line printed without its log prefix: three or more "label: number unit" fields,
# "Running: 6 reqs, Waiting: 0 reqs, GPU KV cache usage: 24.6%, Prefix cache hit rate: 99.2%".
# Its labels are the printer's words (a prefix-cache hit rate is printed whether or not the
# asker uses prefix caching), not what is asked.
# Each field is checked on its own, label and value apart: one pattern over the whole line
# backtracked exponentially on "ab cd: 1 ab/cd, ab cd: 1 ab/cd, …".
_STATUS_LABEL = re.compile(r"[A-Za-z][\w .()/-]{0,50}")
_STATUS_VALUE = re.compile(r"\s*[-+]?\d[\d.]*\s*(?:%|[A-Za-z/]{1,16})?\s*")


def _is_status_line(line: str) -> bool:
    if line.count(":") < 3:
        return False
    fields = re.split(r"[,;|]", line.strip().rstrip(".,;"))
    if len(fields) < 3:
        return False
    for part in fields:
        label, colon, value = part.strip().partition(":")
        if not colon or not _STATUS_LABEL.fullmatch(label) or not _STATUS_VALUE.fullmatch(value):
            return False
    return True

# A log line's source tag: "(RayWorkerWrapper pid=880)", "(autoscaler +7s)".
# (and a bare source tag, "(raylet) "), then torch's "[rank0]:" (trial: "(VllmWorker TP0 pid=240) INFO …" was prose)
_LOG_TAG = re.compile(rf"^\s*(?:{PROCESS_TAG}|\([\w.\-]{{1,40}}\))+\s*")


@dataclass
class QuestionParts:
    """A question split by what each line is."""

    prose: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # exception and error lines, problem log lines
    logs: list[str] = field(default_factory=list)  # informational log lines
    # Those of the log lines that are stats showing trouble (requests waiting, none generating):
    # still the log's lines and numbers, but the evidence retrieval reads ("throughput dropped,
    # is this normal?" over "Running: 256 reqs, Waiting: 88 reqs" got the debug switches from
    # its sentence alone, trial).
    stats: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)  # code, config, command lines and stack frames
    flags: dict[str, str] = field(default_factory=dict)  # --flag → value, from commands, config and code

    @property
    def pasted(self) -> bool:
        return bool(self.code or self.logs)

    def query(self) -> str:
        """What retrieval should read: the prose and the error lines, in order of appearance
        as far as that matters (prose first). Falls back to everything when that is empty."""
        parts = self.prose + self.errors + self.stats
        return "\n".join(parts)


# A compose command's item: a flag, a quoted value, a path or a model id ("- Qwen/Qwen3-32B-AWQ"); not a
# bullet of the asker's ("- hangs", "- ROCm", review).
_LIST_ITEM = re.compile(r"-\s+(?:--?[\w-]+(?:=\S*)?|\"[^\"]*\"|'[^']*'|[\w.:@+-]*/[\w./:@+-]*)\s*$")


def _in_yaml_list(line: str, parts: QuestionParts) -> bool:
    """One word of a YAML list under a paste's "command:" ("- serve"), not a bullet of the asker's."""
    return bool(_ONE_ITEM.match(line)) and bool(parts.code) and (parts.code[-1].endswith(":") or parts.code[-1].startswith("- "))


_ONE_ITEM = re.compile(r"-\s+\S+\s*$")


def _is_prose(line: str) -> bool:
    """A sentence, not a paste: Chinese text, or several plain words with few symbols."""
    from oncall_common.lang import cjk_count

    if cjk_count(line) >= 2:
        return True
    if _LIST_ITEM.match(line):
        return False  # "- --tensor-parallel-size", '- "40960"': a compose file's command, one item a line
    words = _PROSE_WORDS.findall(line)
    symbols = sum(1 for ch in line if ch in "=()[]{}<>_/\\:;\"'`$|")
    return len(words) >= 3 and symbols <= max(2, len(words) // 2)




def _collect_flags(line: str, flags: dict[str, str]) -> None:
    for name, value in _FLAG.findall(line):
        value = value.strip("\"'")
        # Written in a sentence ("--max-num-batched-tokens 2048, --enable-chunked-prefill"),
        # the comma is the sentence's: the setting came back as `2048,`. A lone "." stays a path.
        value = value.rstrip(_TRAILING_PUNCT + _CJK_PUNCT) or value
        if not re.search(r"[A-Za-z0-9./~]", value):
            value = ""  # a word of the sentence ("--max-model-len 改成 4096"), not the value
        flags.setdefault(name, "" if value.lower() in _SENTENCE_WORDS else value)
    for name, value in _KWARG.findall(line):
        flags.setdefault(name, value.strip("\"'"))
    asking = bool(_ASKING_WHAT_IF.search(line))
    for name, value in _FLAG_TO.findall(line):
        # "lowered --gpu-memory-utilization to 0.8": the value after the word. Said after the
        # command line ("… --max-model-len 32768" then "I lowered --max-model-len to 8192") it is
        # the value now in use: a chat follow-up quoted the first message's 32768 back. Asked
        # ("should I lower --max-model-len to 8192 or to 16384?") it is not (review).
        if not flags.get(name) or not asking:
            flags[name] = value


def _collect_stated_flags(line: str, flags: dict[str, str]) -> None:
    """The flags of a prose line's sentences that state them: one weighing a value states no
    setting of the server's ("should I try --max-model-len 2048?" was answered "4096 → 2048
    (yours is already 2048)", review)."""
    for sentence in _SENTENCE_END.split(line):
        if _PROPOSES.search(sentence):
            continue
        asks = _ASKS_ABOUT.search(sentence)
        if not asks:
            _collect_flags(sentence, flags)
            continue
        # A flag named without a value after the question word is what it asks about, not a
        # setting: "what's the largest --max-model-len I can run?" (trial). Before it, it is
        # one: "I run with --enforce-eager, why is it slow?".
        found: dict[str, str] = {}
        _collect_flags(sentence, found)
        for flag, value in found.items():
            if value or sentence.find(flag) < asks.start():
                flags.setdefault(flag, value)


_FLAG_TO = re.compile(r"(?<![\w-])(--[a-zA-Z][\w-]{1,60}) ?(?:to|at|from \S+ to|down to|up to|改成|改为|改到|调到|调成|调为|设成|设为|设到|设置为|设置成"
                      r"|降到|降为|提到|提高到|调高到|调低到|开到|加到|拉到|给到|用到|是|为|=) ?(\d+(?:\.\d+)?)(?![\w.])")


_MESSAGE_BREAK = re.compile(r"""[:"'{}\[\]()|`]""")
_QUOTED_MESSAGE = re.compile(r'"([^"\n]{20,})"')
MIN_MESSAGE_CHARS = 20  # without whitespace: "unhandled system error" is 20


def pasted_messages(text: str) -> list[str]:
    """The messages a question pastes, as pieces to look up verbatim in a team's docs: its
    error and log lines cut at quotes, brackets and colons (a path, a timestamp or a
    number between them differs from the docs' example), and the sentences quoted inside
    pasted JSON or code ({"message": "Service temporarily unavailable: All workers are
    busy…"}). A pasted command or config line is no message: its flags are in every page
    of a tool's docs."""
    parts = split_question(text)
    out: list[str] = []
    for line in parts.errors + parts.logs:
        out += [piece.strip() for piece in _MESSAGE_BREAK.split(line)]
    for line in parts.code:
        out += [m for m in _QUOTED_MESSAGE.findall(line) if len(m.split()) >= 4]
    return [piece for piece in dict.fromkeys(out) if len(re.sub(r"\s+", "", piece)) >= MIN_MESSAGE_CHARS]


def _head_and_tail(lines: list[str], head: int = 50) -> list[str]:
    """At most MAX_LINES lines: the first few (where a question is asked) and the last ones
    (where a log says what the server died of). The first 400 alone lost the one
    `torch.OutOfMemoryError` line at the end of 400 lines of INFO."""
    if len(lines) <= MAX_LINES:
        return lines
    return lines[:head] + lines[len(lines) - (MAX_LINES - head):]


# A command's column output (`kubectl get pods`, `docker ps`, `ray status`): a header of
# capitalised column names, then rows, their cells apart by two spaces or more.
_COLUMN_GAP = re.compile(r"\s{2,}|\t")
_COLUMN_NAME = re.compile(r"[A-Z][A-Z0-9_()%/.-]*(?: [A-Z][A-Z0-9_()%/.-]*)?")
# A cell that says what is wrong: a pod's or a container's failing state.
_BAD_STATE = re.compile(r"\b(?:Init:)?(?:CrashLoopBackOff|OOMKilled|Error|ImagePullBackOff|ErrImagePull|Evicted|Pending|"
                        r"CreateContainerConfigError|CreateContainerError|ContainerStatusUnknown|NotReady|Unknown|"
                        r"Exited \(\d+\)|Restarting \(\d+\)|unhealthy)(?!\w)")


def _column_header(line: str) -> bool:
    cells = _COLUMN_GAP.split(line.strip())
    return len(cells) >= 3 and all(_COLUMN_NAME.fullmatch(c) for c in cells)


def _column_row(line: str, columns: int) -> bool:
    """A row under a header of `columns` columns: about as many cells, none a sentence ("The
    first pod keeps dying.  I set the memory limit…" typed with two spaces is no row, review)."""
    cells = _COLUMN_GAP.split(line.strip())
    return abs(len(cells) - columns) <= 1 and not any(c.endswith((".", "?", "!", "。", "？", "！")) and " " in c for c in cells)


def _read_log_line(line: str, parts: QuestionParts, problem: bool = False) -> None:
    """A log line: an error when logged as a problem; else informational, and kept among
    `stats` too when it shows trouble (QuestionParts)."""
    from .tools.logs import STATS_TROUBLE

    if problem:
        parts.errors.append(line)
        return
    parts.logs.append(line)
    if STATS_TROUBLE.search(line):
        parts.stats.append(line)


def _read_fenced(line: str, is_error: bool, parts: QuestionParts) -> None:
    """A line inside a ``` fence: an error line (not code that names one) or code."""
    if is_error and not _CODE.match(line):
        parts.errors.append(line)
    else:
        _collect_flags(line, parts.flags)
        parts.code.append(line)


def _read_columns(line: str, following: str, columns: int, parts: QuestionParts) -> int:
    """A line of a command's column output goes to the logs, and its failing states to the
    errors; returns the columns of the output being read (0: the line is not one of it).
    `kubectl get pods` pasted above "why is the first one crashing": its header's words
    (RESTARTS, AGE) were read as the question's and, unknown to the KB, refused it; its rows
    say only which pod is in which state. The failing states are what is asked (trial)."""
    header = len(_COLUMN_GAP.split(line)) if _column_header(line) else 0
    if header and _column_row(following, header):
        columns = header  # a header, with a row under it ("GPU  OOM  ON  H100  AGAIN" alone is a shout, not a header)
    elif not (columns and _column_row(line, columns)):
        return 0
    parts.logs.append(line)
    parts.errors.extend(dict.fromkeys(m.group(0) for m in _BAD_STATE.finditer(line)))
    return columns


@lru_cache(maxsize=32)
def split_question(text: str) -> QuestionParts:
    """Sort each line of a question into prose, error, log or paste.

    Cached: the embedder, retrieval, scope detection and the answer all ask about the
    same question; callers read the result and never change it."""
    parts = QuestionParts()
    in_fence = False
    columns = 0  # the number of columns of a command's column output being read, 0 outside one
    lines = _head_and_tail(text.splitlines())
    for n, raw in enumerate(lines):
        # Read without the process tag vLLM puts before each line: "(EngineCore pid=1)   File …" is a stack frame.
        # (names.untagged: not "(FastDeploy) requests hang", review)
        line = untagged(raw.lstrip()).strip()
        if not line:
            continue
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        line = line[:2000]
        columns = _read_columns(line, lines[n + 1] if n + 1 < len(lines) else "", columns, parts)
        if columns:
            continue
        is_error = bool(_ERROR.search(line)) and not line.lstrip().startswith("#")
        if _STACK.match(line):
            parts.code.append(line)
        elif (is_error and PROGRAM_SAYS.match(line)) or _CXX_ABORT.match(line):
            parts.errors.append(line)  # "vllm serve: error: argument …", "bash: nvcc: command not found"
        elif _is_status_line(_LOG_TAG.sub("", line, count=1)):
            _read_log_line(line, parts)
        elif _LOG_PREFIX.match(line):
            _read_log_line(line, parts, problem=bool(_LOG_LEVEL_PROBLEM.search(line[:80])) or is_error)
        elif _COMMAND.match(line) and not _prose_after_command_word(line) or _LITERAL.match(line) or _XTRACE.match(line):
            _read_command_line(line, parts)
        elif in_fence:
            _read_fenced(line, is_error, parts)
        elif _is_prose(line):
            line = _take_inline_commands(line, parts)
            (parts.errors if is_error and ":" in line and not _contains_cjk_sentence(line) else parts.prose).append(line)
            if "--" in line:
                _collect_stated_flags(line, parts.flags)
        elif is_error:
            parts.errors.append(line)
        elif _CONFIG.match(line) or _CODE.match(line) or _LIST_ITEM.match(line) or _in_yaml_list(line, parts):
            _collect_flags(line, parts.flags)
            parts.code.append(line)
        else:
            parts.prose.append(line)
    return parts


# A shell's trace of what a container's entrypoint ran (`bash -x`): "+ export HF_TOKEN=…" was
# prose, and "the KB has nothing on HF_TOKEN" the answer to a download timeout (trial).
_XTRACE = re.compile(r"^\+{1,3} (?:export|cd|exec|set|echo|python3?|vllm|pip3?|mkdir|source|\.|[A-Za-z_][A-Za-z0-9_]*=)(?:\s|$)")


def _read_command_line(line: str, parts: QuestionParts) -> None:
    command, said = _command_and_tail(line)
    _collect_flags(command, parts.flags)
    parts.code.append(command)
    if said:
        parts.prose.append(said)


def _command_and_tail(line: str) -> tuple[str, str]:
    """A command line and what the asker wrote after its arguments: "vllm serve
    Qwen2.5-72B-Instruct --tensor-parallel-size 4 OOM" was all command, nothing left to search
    on, and was refused (trial); "… --max-model-len 32768 报错 OOM" the same. Only for a
    command whose end is known (`_INLINE_COMMAND`'s programs), and only a tail with words."""
    m = _INLINE_COMMAND.match(line.lstrip())
    if m is None:
        return line, ""
    offset = len(line) - len(line.lstrip())
    end = _command_end(line, offset + m.end())
    if end is None:
        return line, ""
    tail = line[end:].strip(" \t`")
    if not re.search(r"[A-Za-z]{2,}|[\u4e00-\u9fff]", tail) or tail.startswith(("-", "\\", "|", ">", "&", ";")):
        return line, ""
    if not _terse(tail) or not _names_a_symptom(tail):
        # a sentence of its own outweighs the flags already, and "help" or "报错" says nothing
        # the flags do not (review: "… --max-model-len 32768 help" lost its article): read whole
        return line, ""
    return line[:end].rstrip(), _with_products(line[:end], tail)


def _terse(words: str, most: int = 6) -> bool:
    """A complaint of a few words ("OOM", "hangs at startup", "显存不够"): beside a command
    line its flags outweigh it; a whole sentence holds its own."""
    from oncall_common.lang import cjk_count

    return len(re.findall(r"[A-Za-z]{2,}", words)) <= most and cjk_count(words) <= 16


def _take_inline_commands(line: str, parts: QuestionParts) -> str:
    """Move command lines pasted inside a sentence to the paste, keeping the sentence around
    them. A command runs from its program word over its arguments (flags, their values,
    paths, module and model names) and stops at the first plain word or Chinese text."""
    if not _INLINE_COMMAND.search(line):
        return line
    rest, commands = _cut(line, _INLINE_COMMAND, _inline_command_end)
    for command in commands:
        _collect_flags(command, parts.flags)
        parts.code.append(command)
    if rest and commands:
        rest = _with_products(" ".join(commands), rest)
    return rest or line


def _with_products(command: str, words: str) -> str:
    """The asker's words with the product the command runs, when they name none: "vllm serve
    … 显存不够" searched as "显存不够" alone got FastDeploy's OOM articles."""
    from .scope import detect

    if not _terse(words) or not _names_a_symptom(words) or detect(words).products:
        # a sentence says enough (the product, everywhere in a tool's own docs, adds nothing), and
        # "用 报错" with it would pass for a query of its own
        return words
    products = " ".join(sorted(detect(command).products))
    return f"{products} {words}".strip()


def without_reprs(line: str) -> str:
    """A printed object inside a sentence ("the log shows SamplingParams(n=1, best_of=1, …)")
    is a paste: its field names (best_of) are not what the question is about."""
    return _cut(line, _CALL, _repr_end)[0] if "=" in line else line


def _cut(line: str, starts: re.Pattern, end_of) -> tuple[str, list[str]]:
    """The line without the spans that begin where `starts` matches and end where `end_of`
    says (None: no span there), and those spans. One pass, left to right."""
    kept: list[str] = []
    spans: list[str] = []
    pos = 0
    for m in starts.finditer(line):
        end = end_of(line, m) if m.start() >= pos else None
        if end is None:
            continue
        kept.append(line[pos:m.start()].rstrip("`"))
        spans.append(line[m.start():end].strip().rstrip("`"))
        pos = end
    if not spans:
        return line, []
    kept.append(line[pos:])
    return " ".join(part.strip() for part in kept if part.strip()), spans


def _inline_command_end(line: str, m: re.Match) -> int | None:
    """A command quoted in backticks ends at the closing one, else after its arguments."""
    if m.start() > 0 and line[m.start() - 1] == "`":
        close = line.find("`", m.end())
        if close != -1:
            return close + 1
    return _command_end(line, m.end())


_CALL = re.compile(r"[A-Za-z_][\w.]{0,60}\(")


def _repr_end(line: str, m: re.Match) -> int | None:
    close = line.find(")", m.end())
    return close + 1 if close != -1 and line.count("=", m.end(), close) >= 2 else None


_ARG = re.compile(r"\S+")


# Words that end a command line typed into a sentence ("--enforce-eager why is it slower"):
# never a flag's value. Plain words that are values ("--quantization awq") stay.
_SENTENCE_WORDS = frozenset("why what how when where which who is are was were does do did it its and or but then "
                            "with to the a an in on for not still also after before fails failed works worked hangs "
                            "crashes gives returns from at down up".split())
_CJK_PUNCT = "，。；：！？、（）【】"
_TRAILING_PUNCT = ".,;:!?"


def _command_end(line: str, start: int) -> int | None:
    """Where a command that starts before `start` ends (linear: one pass over its words), or
    None when what follows the program word is a sentence ("does vllm serve support …")."""
    from oncall_common.lang import cjk_count

    end = start
    first = True  # the program's first argument (a module, a model path) must look like one
    value_next = False
    for m in _ARG.finditer(line, start):
        tok = m.group(0)
        cut = next((i for i, ch in enumerate(tok) if cjk_count(ch) or ch in _CJK_PUNCT), None)
        if cut is not None:
            return (m.start() + cut) if cut else (end if not first else None)
        word = tok.rstrip(_TRAILING_PUNCT)
        closing = word != tok and not (first or value_next and word.replace(".", "").isdigit() and tok.endswith("."))
        if tok.startswith("-"):
            value_next = "=" not in tok
        elif first:
            if not (any(ch in word for ch in "/._-:\\") or any(ch.isdigit() for ch in word)):
                return None
            value_next = False
        elif value_next and word.lower() not in _SENTENCE_WORDS:
            value_next = False
        elif not any(ch in word for ch in "/.=:_,0123456789\\"):
            return end
        first = False
        end = m.start() + len(word)
        if closing or word != tok:
            return end
    return None if first else end


def _prose_after_command_word(line: str) -> bool:
    """"nvidia-smi shows 23859MiB per card; so is that CUDA graph?" starts like a command
    but is a sentence: no flags, no assignments, several plain words."""
    if line.lstrip().startswith(("$", ">>>", "% ")):
        return False
    # "vllm 0.10.0 想按说明开工具调用，起服务直接报：" is a sentence about the program; a
    # command's quoted Chinese argument (--prompt "你好，介绍一下") is not.
    if _contains_cjk_sentence(_QUOTED.sub(" ", line)):
        return True
    # "llama-server crashes with -c 8192": the words before the first flag make a sentence.
    head = line.split(" -", 1)[0].split()[1:5]
    if any(word.lower() in _SENTENCE_WORDS for word in head):
        return True
    words = len(_PROSE_WORDS.findall(line))
    if words >= 8 and any(mark in line for mark in ("? ", ". ", "; ", "，", "。", "？")) or line.rstrip().endswith("?"):
        return _is_prose(line) or words >= 12
    if " -" in line or "=" in line or "|" in line:
        return False
    return _is_prose(line) and words >= 5


def _contains_cjk_sentence(line: str) -> bool:
    from oncall_common.lang import cjk_count

    return cjk_count(line) >= 4


def strip_log_tag(line: str) -> str:
    """An error line without its source tag: "(autoscaler +7s) Error: …" names the
    process that printed it, not what the error is about."""
    return _LOG_TAG.sub("", line, count=1)


def retrieval_text(question: str) -> str:
    """The part of a question retrieval should read. A question that is all paste (a bare
    log or stack trace) is read whole: then the paste *is* the question. Settings a sentence
    says were tried to no effect are left out of it (see `without_tried_settings`)."""
    parts = split_question(question)
    if not parts.pasted:
        return without_ruled_out(without_tried_settings(question))
    query = parts.query()
    if len(query.strip()) < 8 and not _names_a_symptom(query):
        return without_ruled_out(without_tried_settings(question))
    if "\n" not in question.strip() and _INLINE_COMMAND.match(question.lstrip()) and not _terse(query, most=8):
        # One line that opens with its command and goes on with a sentence is read whole, as
        # before: "lmdeploy serve api_server 起的 QwQ-32B，返回的 content 里…" lost its article
        # without "api_server" (dev). Only a terse complaint after it is read alone.
        return without_ruled_out(without_tried_settings(question))
    return without_ruled_out(without_tried_settings(query))


# Words that ask without saying what is wrong: a query of these alone is no query.
_ONLY_ASKING = frozenset("why how what help pls please any idea ideas this that it is the fix error 为什么 怎么办 怎么 求助 啥 什么 报错 错误".split())


def _names_a_symptom(query: str) -> bool:
    """Whether a short query still says what is wrong ("OOM", "hangs", "卡住"): after a
    command line, "OOM" was the whole complaint, yet under 8 characters the command was
    searched instead and its flags won (trial)."""
    words = re.findall(r"[A-Za-z]{3,}|[\u4e00-\u9fff]+", query)
    return any(word.lower() not in _ONLY_ASKING for word in words)


# A sentence that reports a fix already tried: "Someone suggested --gpu-memory-utilization 0.7~0.9
# and --max-model-len 8192, no effect", "max_num_seqs 调小了也没用".
_TRIED = re.compile(r"no effect|did(?:n't| not) (?:help|work|change)|does(?:n't| not) (?:help|work|change)|no difference"
                    r"|still the same|same (?:result|error|thing)|to no avail|没用|没有用|没效果|没有效果|不起作用|不管用|无效"
                    r"|还是一样|也不行|还是不行|依然|仍然", re.I)
# A change, then the failure still there: "I lowered --max-model-len to 8192, still OOM", "调小了
# --max-num-seqs 还是 OOM"; not "still loading after 30 min" (nothing changed), 加载, 调用, 设备 or
# 下降 (no change of a setting), nor 还是 as "or" ("设成 0.9 还是 0.95"). Only in a statement: "If I
# set --max-model-len 8192, will it still OOM?" and "还是会 OOM 吗" ask (review).
_CHANGED_STILL = re.compile(r"(?:\b(?:lowered|reduced|raised|increased|bumped|dropped|changed|added|set|switched|disabled)\b"
                            # or a state said of it: "VLLM_WORKER_MULTIPROC_METHOD=spawn is exported, still …", "cuda graphs
                            # are off (enforce_eager=True) and we still get …" (trial)
                            r"|\b(?:is|are|was|were)\s+(?:already\s+)?(?:set|exported|enabled|disabled|off|configured)\b)"
                            r"(?:[^.;!?\n]|\.(?=\d)|\.\.\.){0,80}"  # "kv_cache_ratio=0.5 … still", "LLM(...)": no sentence's end
                            r"\bstill\b(?! (?:fine|ok|good|enough|right|valid))"
                            r"|(?:调(?!用|度|试)|改|加(?!载|速)|设(?!备|计)|(?<!下)降|减|换|开了|开启|关了|关闭|关掉|\bexport\b)[^。；！？\n]{0,40}"
                            r"还是\s*(?:不行|没用|一样|会?\s*(?:oom|报错|卡|崩|失败|超时|慢|很慢|挂)"
                            # the error itself after it: "加了 --ipc=host 之后还是 NCCL error", "还是报 illegal memory access"
                            r"|(?:报|出现?)\s*\S|[\w .:-]{0,30}?(?:error|exception|failed|错误)|一直|在?刷)", re.I)
_ASKING_WHAT_IF = re.compile(r"\bif\b|\bshould\b|\bwould\b|\bwill\b|\bor\b|如果|假如|假设|要是|要不要|是否|[?？]\s*$|[吗呢]\W*$", re.I)


def _says_tried(sentence: str) -> bool:
    return bool(_TRIED.search(sentence) or (_CHANGED_STILL.search(sentence) and not _asks_what_if(sentence)))


def _asks_what_if(sentence: str) -> bool:
    """A question or a condition, in the sentence's words: not the `if __name__ == '__main__':` it quotes (trial)."""
    return bool(_ASKING_WHAT_IF.search(re.sub(r"`[^`]*`", " ", sentence)))


_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+|(?<=[。；！？])|\n")
# A sentence weighing a value rather than stating one: "should I try --max-model-len 2048 or
# --gpu-memory-utilization 0.8?", "要不要把 --max-num-seqs 改成 64".
_ASKS_ABOUT = re.compile(r"\b(?:what|which|how|why|does|do|is|are|can|could|largest|maximum)\b|多少|多大|怎么|如何|最大|吗", re.I)
_PROPOSES = re.compile(r"\b(?:should|could|would|shall)\s+(?:i|we)\b|\btry\b|\bwhat if\b|\bif (?:i|we)\b|\bor\s+--"
                       r"|要不要|是否|试试|试一下|改成[^。？?]{0,30}[吗呢?？]", re.I)
# A kernel setting too: "kernel.msgmax 已经调到 1048576 了"; not a log's field, "还是刷 free_list_len: 0" (trial).
_SETTING = re.compile(r"(?<![\w-])(?:--[A-Za-z][\w-]{1,60}|(?:kernel|vm|net)(?:\.[a-z][a-z0-9_]*)+"
                      r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?!\w)(?!\.\w)(?!\s?[:：]))"  # not a file's name: worker_process.log (trial)
                      r"(?:\s*[= ]\s*[\d.~,-]+(?![\w.]))?")


# A sentence saying a setting is already in place: "HF_ENDPOINT 设了 hf-mirror", "I already set
# --enforce-eager". With _TRIED, the settings an answer should not offer as news.
# Not "I set --gpu-memory-utilization 0.98" (the value in use, quoted back as such), nor 已经 or
# "already" alone ("Address already in use", 显存已经满了), nor 用了 / 加了 (占用了, 增加了).
_ALREADY = re.compile(r"already (?:set|tried|added|enabled|disabled|using|use|pass|passing|export|exported|have)\b|i(?:'ve| have)? (?:already )?(?:tried|added)"
                      # a clause that starts with it: "tried flush_cache, got 400" (a chat follow-up, trial)
                      r"|(?:^|[\n.!?;,，。；]\s*)tried\b"
                      r"|we(?:'ve| have)? (?:already )?(?:tried|added)|已经(?:设|加|试|开|配|调|改|换)|(?<![调增])设了|设置了|试了|试过", re.I)
_ENV_VAR = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w-])")
# A flag written without its dashes: "max-model-len 已经改成 8192 了还是 OOM" (trial). Three
# words at least, letters only, none of them glue: model and host names (qwen2-7b-instruct,
# gpu-node-01) and English compounds (all-to-all, out-of-memory) are none (review).
_BARE_FLAG = re.compile(r"(?<![\w-])[a-z]+(?:-[a-z]+){2,}(?![\w-])")
_GLUE = frozenset("to of by and or the in on for a at per".split())


# The failure still there, and nothing said of a change: "重启了仍然报 …", "same error" (review).
_ONLY_PERSISTS = re.compile(r"still the same|same (?:result|error|thing)|还是一样|也不行|还是不行|依然|仍然", re.I)


def tried_settings(text: str, explicit: bool = False) -> list[str]:
    """The flags, parameters and environment variables the asker's sentences say were tried,
    set already, or of no effect, as written (`--enforce-eager`, `max_num_seqs`, `HF_ENDPOINT`).
    `explicit`: only sentences that say so in words of trying or changing, not one where the
    failure merely persists ("… --max-model-len 32768 … 重启了仍然报 OOM" is the command in use)."""
    if not (_TRIED.search(text) or _CHANGED_STILL.search(text) or _ALREADY.search(text)):
        return []
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if explicit and not (_ALREADY.search(sentence) or (_CHANGED_STILL.search(sentence) and not _asks_what_if(sentence))
                             or _TRIED.search(_ONLY_PERSISTS.sub(" ", sentence))):
            continue
        if _says_tried(sentence) or _ALREADY.search(sentence):
            bare = [m for m in _BARE_FLAG.finditer(sentence)
                    if not compound_word(m.group(0)) and not _GLUE & set(m.group(0).split("-"))]
            for m in (*_SETTING.finditer(sentence), *_ENV_VAR.finditer(sentence), *bare):
                name = m.group(0).split("=")[0].split()[0]
                if name not in out:
                    out.append(name)
    return out


def without_tried_settings(text: str) -> str:
    """The text without the settings its sentences say were tried to no effect. They name the
    article the asker already followed, not the one that answers: "TP=4 hangs at start-up …
    someone suggested --gpu-memory-utilization and --max-model-len, no effect" drew the OOM
    article over the multi-GPU one. The settings stay in the question for the answer."""
    if not (_TRIED.search(text) or _CHANGED_STILL.search(text)):
        return text
    out: list[str] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        sentence = text[pos:m.end()]
        out.append(_SETTING.sub(" ", sentence) if _says_tried(sentence) else sentence)
        pos = m.end()
    tail = text[pos:]
    out.append(_SETTING.sub(" ", tail) if _says_tried(tail) else tail)
    return "".join(out)
