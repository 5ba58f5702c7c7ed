"""Language detection for zh/en, the two languages the KB is written in.

A question counts as Chinese when Chinese characters carry a real share of the asker's own
words; log lines, error messages, quoted strings and flag names pasted into a Chinese
question are English tokens but do not make it English ("报错 ValueError: No available
memory for the cache blocks…" is asked in Chinese).
"""

from __future__ import annotations

import re
from typing import Literal

# The languages the KB, the answers and every user-facing string come in. Adding one means a
# value here, its strings in assistant/i18n, and its KB articles.
LANGS: tuple[str, ...] = ("zh", "en")
Lang = Literal["zh", "en"]
DEFAULT_LANG: Lang = "en"

_WORD = re.compile(r"[A-Za-z]{2,}")
# What the asker pasted rather than wrote: quoted or backticked strings, and an error or log
# message up to the end of its sentence or the asker's next Chinese word ("RuntimeError: cache_kvs
# memory is not enough 怎么解决" is asked in Chinese: the message ends before 怎么). Kept as
# strings: `re` compiles them on first use, only for lines with Chinese in them.
# Quotes: "…", “…”, ‘…’, 「…」, 『…』, and a single-quoted string of six characters at least
# or with Chinese in it; an apostrophe inside a word opens or closes none ("someone else's job …
# ends with '启动 … 服务超时'"). Quoted English in a Chinese sentence is pasted. Quoted Chinese is
# pasted only in an English sentence: one whose words outside the quotes hold no Chinese and at
# least ENGLISH_FRAME_WORDS English words. "asking shows '出错了', uploads stay '解析中'" was
# answered in Chinese (new trees), while "RAGFlow 报“文件解析失败”" and "vllm “为什么推理卡住”" are
# Chinese questions (review).
_CODE_SPAN = r"`[^`\n]*`"
_QUOTED = (r"\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|「[^」\n]*」|『[^』\n]*』"
           r"|(?<![A-Za-z])'(?:[^'\n]{6,}|[^'\n]*[\u4e00-\u9fff][^'\n]*)'(?![A-Za-z])")
ENGLISH_FRAME_WORDS = 3
# "CUDA error: …", "HIP error: …", "NCCL error: …" right after a Chinese word are pasted too ("A100
# 上 vllm 报 CUDA error: an illegal memory access was encountered" was answered in English).
_PASTED_MESSAGE = (r"(?:\b[A-Za-z_.]*(?:Error|Exception|Warning)\b|\b(?:ERROR|WARNING|WARN|INFO|Traceback)\b"
                   r"|(?<=[\u4e00-\u9fff]) ?[A-Z][A-Za-z0-9_]* error:)"
                   "[^。！？；，\n\u4e00-\u9fff]*")


_REPORTED = "(?:报错?|提示|出现了?|显示|返回了?|遇到了?|抛出?了?|打印出?)\\s*[:：]?\\s*(?=[A-Za-z0-9])[^\u4e00-\u9fff]*$"


def is_cjk(ch: str) -> bool:
    """CJK ideographs (Extension A, Unified, Compatibility). A code-point test rather than a
    regex class: compiling a class over these ranges costs ~2 ms in every process."""
    o = ord(ch)
    return 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF


def cjk_count(text: str) -> int:
    return sum(1 for ch in text if is_cjk(ch))


def _line_is_zh(line: str, quoting: bool = False, particles: bool = True) -> bool:
    """`quoting`: the question is an English sentence quoting Chinese (see `_QUOTED`).
    `particles`: a lone Chinese particle may mark a Chinese writer (questions, not answers)."""
    if cjk_count(line) < 1:
        return False
    code_free = re.sub(_CODE_SPAN, " ", line)
    if quoting:
        unquoted = re.sub(_QUOTED, " ", code_free)
    else:  # only quoted English is pasted; quoted Chinese is the asker's own words
        unquoted = re.sub(_QUOTED, lambda m: m.group(0) if cjk_count(m.group(0)) else " ", code_free)
    own = re.sub(_PASTED_MESSAGE, " ", unquoted)
    cjk = cjk_count(own)
    # One Chinese word typed with Chinese punctuation is a Chinese writer: "CUDA error: an
    # illegal memory access was encountered，vLLM 0.9.1 H20 跑 DeepSeek-R1" was answered in English.
    if cjk_count(re.sub(_PATHS, " ", own)) >= 1 and any(ch in own for ch in "，？；"):
        return True  # not "。" alone: 'the model replies 好。 to every prompt' is English (review)
    # A Chinese particle ending the line, or a preposition between two English words, is a
    # Chinese writer's: "vLLM OOM 了", "H100 上 vLLM CUDA out of memory" were answered in English
    # (trial). Not one quoted as output: "Qwen replies with a single 了" (review).
    if particles and _lone_particle(re.sub(_PATHS, " ", own)):
        return True
    if cjk_count(line) < 2:
        return False
    # What follows a Chinese verb of reporting is pasted, whatever it starts with: "客户端报 400：This
    # model's maximum context length is 8192 tokens…" and "调 chat 接口报 As of transformers v4.44, …"
    # were answered in English (trial). The asker's words are the Chinese before it.
    own = re.sub(_REPORTED, " ", own)
    # Chinese words in several places are a Chinese sentence around what was pasted, however
    # long the paste ("vllm serve 启动就报 CUDA out of memory，Tried to allocate …，命令是
    # vllm serve … --max-model-len 32768" was answered in English).
    if cjk >= 4 and len(re.findall(_CJK_RUN, re.sub(_PATHS, " ", own))) >= 2:
        return True
    # One Chinese character for every three English words of the asker's own: a Chinese frame
    # around English names and numbers ("A100 80G 用 vLLM 跑 qwen-7b-chat") is Chinese. A command
    # line's flags, their values and paths are pasted, not written: "vllm serve Qwen/Qwen2.5-72B-Instruct
    # --tensor-parallel-size 4 --max-model-len 131072 启动报" was answered in English (trial).
    written = re.sub(_PATHS, " ", re.sub(_FLAG_ARG, " ", own))
    words = _WORD.findall(written)
    cjk = cjk_count(written)  # not a flag's value ("--served-model-name 千问") nor a path's ("/data/模型")
    return cjk >= 2 and cjk >= 0.3 * len(words)


# A Chinese particle, preposition or measure word standing alone among English words ("vLLM OOM
# 了", "H100上 vLLM …", "vllm 里 CUDA OOM"); linear: one character and its neighbours.
_LONE_PARTICLE = "(?<![\u3400-\u9fff])[了上的在用跑时后吗呢吧啊和把被给对从到里中下](?![\u3400-\u9fff])"
# A reporting verb standing alone in a terse line is one too: "vllm 报 NCCL error", "vllm 又报 CUDA
# out of memory" were answered in English (trial). Not in an English sentence that names the word
# ("I see 报错 in the log when starting vllm …").
_LONE_REPORT = "(?<![\u3400-\u9fff])(?:又|还|也|都|一直|总是?|老是?|还是)?报错?(?=\\s*[A-Za-z0-9])"
TERSE_WORDS = 8
# ... after a subject, not an English verb naming the word: "I see 报错 in the log", "What does 报错
# mean", "log contains 报错 token" are English (review).
# (the words `_QUOTING_WORD` below does not hold; both are checked)
_NAMING_VERB = (r"(?i)\b(?:see|sees|saw|seeing|show|shows|showing|contain|contains|containing|does|do|did|mean|means"
                r"|translate|translates|get|gets|got|is|are|was|were|said|printed|display|displays|of|about)\W*$")
# ... unless quoted as what a model or tokenizer printed ("replies with a single 了", "splits 中 into …")
_QUOTING_WORD = (r"(?i)\b(?:replies|reply|outputs?|emits?|returns?|prints?|says?|generates?|splits?|token|tokens|"
                 r"character|char|single|extra|trailing|with|word|like|the|a|an|ends)\W*$")


def _lone_particle(text: str) -> bool:
    reports = [m for m in re.finditer(_LONE_REPORT, text) if not re.search(_NAMING_VERB, text[max(0, m.start() - 24):m.start()])
               ] if len(_WORD.findall(text)) <= TERSE_WORDS else []
    for m in reports + list(re.finditer(_LONE_PARTICLE, text)):
        if not re.search(_QUOTING_WORD, text[max(0, m.start() - 24):m.start()]):
            return True
    return False


# Two Chinese characters or more standing as words, not inside a path or a name
# ("/data/模型/千问72B" is no sentence).
# (Strings, compiled by `re` on first use, as above.)
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # the ranges of `is_cjk`, for a pattern
_CJK_RUN = f"(?<![A-Za-z0-9_.-])[{_CJK}]{{2,}}(?![A-Za-z0-9_.-])"
_PATHS = r"(?<!\S)\S*[/\\]\S*"  # from a run's start: unanchored, 16k characters with no slash took 2 s (trial)
# A flag and its value: "--max-model-len 131072" of "--max-model-len 131072启动报", "--served-model-name 千问".
# A Chinese value stands alone, and asks nothing: "SGLang 的 --enable-dp-attention 什么时候该开" was
# answered in English, its question read as the flag's value (trial).
_ASKING = "什么|怎么|如何|为何|吗|呢|是否|能否|可以|应该|该|要不要|有没有|多少|哪"
_FLAG_ARG = f"(?<!\\S)--?[A-Za-z][\\w.-]*(?:[= ](?!-)(?:[^\\s{_CJK}]+|(?!\\S*(?:{_ASKING}))[{_CJK}]+(?!\\S)))?"
# What a line holds that was pasted, not written (for judging an answer's language too).
PASTED_FLAG, PASTED_PATH = _FLAG_ARG, _PATHS


def detect_lang(text: str, particles: bool = True) -> str:
    """Return "zh" or "en". Judged per line, so a Chinese question above a pasted English
    log stays Chinese."""
    if not any(is_cjk(ch) for ch in text):
        return "en"
    frame = re.sub(_QUOTED, " ", re.sub(_CODE_SPAN, " ", text))
    quoting = not cjk_count(frame) and len(_WORD.findall(frame)) >= ENGLISH_FRAME_WORDS
    return "zh" if any(_line_is_zh(line, quoting, particles) for line in text.splitlines()) else "en"
