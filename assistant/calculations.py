"""Capacity questions answered without an LLM: read the numbers (`quantities.py`), pick the capacity
tool the question asks for, run it through `call_tool` (the same typed function the LLM calls), and
explain the result with its formula and the values used, in the asker's language.

Never a silent wrong number:
- a value the tool needs and the question (or the log) does not give is named, with the formula and
  where to read it, and nothing is computed;
- a documented default (FastDeploy block_size 64, vLLM's 16, kv_cache_ratio 0.75,
  gpu_memory_utilization 0.9, kernel.msgmax 8192, the FAQ's logprobs example) is used only when the
  answer says so;
- a value given twice with different numbers, a range, a negative or absurd number is asked about.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Callable

from .i18n import LANGS, catalog, pick_lang, t, texts
from .model_shapes import ModelShape, context_limit, named_model
from .quantities import MAX_CHARS, Extraction, Quantity, extract, normalize

if TYPE_CHECKING:
    from .tools import ToolCall

GIB = Decimal(2**30)
# Cards sold by a round figure their memory does not reach, as (GB sold, MiB nvidia-smi reports):
# an "A10 24GB" has 22.5 GiB to give, not 24, and the KV cache is what is left after the
# weights, so the difference is a fifth of it. Cards whose figure is binary (A100 80GB has
# 81,920 MiB, a 4090 24,564) are not listed: read as GiB, they are right already.
CARD_MEMORY = {"a10": (24, 23028), "a10g": (24, 23028), "l4": (24, 23034), "l40": (48, 46068), "l40s": (48, 46068),
               "t4": (16, 15360), "h100": (80, 81559), "h800": (80, 81559), "h20": (96, 97871), "h200": (141, 143771),
               "l20": (48, 46068), "a40": (48, 46068)}


def _card_pattern(names, plural: str = "") -> re.Pattern:
    """A regex for the card names of a table, longest first ("a10g" before "a10", "h200" before "h20")."""
    alternatives = "|".join(sorted(names, key=len, reverse=True))
    # Not an H100 NVL: it has 94 GB, and was sized as an 80 GB H100 (trial). (An H200 NVL has
    # an H200's 141 GB: still one; review.)
    return re.compile(rf"(?<![a-z0-9])({alternatives}){plural}(?![a-z0-9])(?!(?<=h100)[ _-]?nvl\b)")


_CARD = _card_pattern(CARD_MEMORY, plural="(?:s|es)?")  # "80GB H100s" are H100s (trial)
# Cards whose sold figure is their binary memory already: named beside a listed one, the figure
# may be theirs ("an A100 80GB, moved off our H100 box").
_OTHER_CARD = re.compile(r"(?<![a-z0-9])(?:a100|a800|a6000|a30|4090|3090|v100|mi\d{3}x?|910b?)(?![a-z0-9])")


# Cards sold in one memory size, so named alone they say it (MiB as nvidia-smi reports): a
# sizing question names the card, not its memory ("DeepSeek-V3 FP8 需要几张 H200").
ONE_SIZE_CARDS = {**{card: mib for card, (_sold, mib) in CARD_MEMORY.items()}, "4090": 24564, "3090": 24576, "a6000": 49140}
_ONE_SIZE_CARD = _card_pattern(ONE_SIZE_CARDS, plural="(?:s|es)?")


def _one_size_card(text: str) -> tuple[str, Decimal] | None:
    """(card, bytes it reports) when the text names exactly one card, of one memory size."""
    low = text.lower()
    cards = {m.group(1) for m in _ONE_SIZE_CARD.finditer(low)}
    if len(cards) != 1 or _OTHER_CARD.search(_ONE_SIZE_CARD.sub(" ", low)):
        return None  # several cards, or one of several sizes beside it (A100 40/80GB)
    card = cards.pop()
    return card, Decimal(ONE_SIZE_CARDS[card]) * 2**20


def card_memory(text: str, value: Decimal) -> tuple[str, Decimal] | None:
    """(card, bytes it reports) when the question names one card of CARD_MEMORY and gives its
    memory as the figure it is sold by ("A10 24GB"); None for any other figure or several cards."""
    low = text.lower()
    cards = {m.group(1) for m in _CARD.finditer(low)}
    if len(cards) != 1 or _OTHER_CARD.search(low):
        return None
    card = cards.pop()
    sold, mib = CARD_MEMORY[card]
    return (card, Decimal(mib) * 2**20) if abs(value / GIB - sold) < Decimal("0.01") else None

# ---------------------------------------------------------------- what the question asks
# Bounded patterns on normalised text (see quantities.normalize): linear time.
_NOT_GPU = r"(?! ?(?:卡|张|gpu|显卡|a100|h100|h800|h20|h200|a800|l40|a40|a6000|4090))"  # "多少块卡" counts GPUs
_ASK_BLOCKS = re.compile(
    rf"(?:how many|多少|(?<!好)几)(?: ?个)?(?: ?kv)?(?: ?cache)? ?(?:blocks?|块{_NOT_GPU})"
    r"|blocks? (?:do|would|will|should|must) (?:i|we|you) need|blocks? (?:are |is )?(?:needed|required)|blocks_needed"
    rf"|需要.{{0,8}}(?:block|块{_NOT_GPU})|(?:block|块)数? ?(?:够不够|够吗|要多少|需要多少)|number of blocks (?:needed|required)"
    # the block count itself asked for: "num_blocks_global 是多少才能支持 100 个并发" (probe)
    r"|(?:num_blocks(?:_global)?|total_block_num) ?(?:是|要|需要|得|至少|应该)? ?(?:多少|多大|几)"
    r"|(?:how many|what|which) (?:num_blocks(?:_global)?|total_block_num)\b")
_ASK_BYTES = re.compile(
    r"bytes? (?:per|/|for each|for one|of) ?(?:kv )?(?:cache )?(?:per )?token|per[ -]token (?:kv|size|bytes|memory)"
    r"|kv (?:cache )?(?:size |bytes |memory )?(?:per|/|for each|of one|of a|for one) ?token|kv_bytes_per_token"
    r"|(?:每个?|单个?|一个) ?token.{0,12}(?:多大|多少|字节|占)|(?:多少|几)(?: ?个)? ?(?:字节|kib|kb)")


class _ConcurrencyAsk:
    """Whether a text asks how many requests run at once. "At the same time" and 同时 say so
    only next to requests, users or a count ("how many fit at the same time", "能同时跑几个",
    "300 simultaneous users"); "2 GPUs and int8 at the same time" and "同时用两张卡" ask no
    capacity, and a list of what a concurrency calculation would need only got in the way."""

    STRONG = re.compile(r"concurren|how many (?:requests|sessions|users|of them|such|full|can|will|would|fit|run)"
                        r"|并发|能跑|能支持|支持多少|多少个?(?:请求|会话|用户|路)|几个请求|几路|容纳|(?<![a-z])fit|capacity|容量|撑")
    WEAK = re.compile(r"simultaneous|at once|at the same time|in parallel|同时")
    NEAR = re.compile(r"how (?:many|much)|requests?|users?|sessions?|quer(?:y|ies)|prompts?|sequences|seqs|streams?"
                      r"|几|多少|请求|用户|会话|序列|并发|在线")

    def search(self, text: str) -> bool:
        if self.STRONG.search(text):
            return True
        return any(self.NEAR.search(text, max(0, m.start() - 30), m.end() + 30) for m in self.WEAK.finditer(text))


_ASK_CONC = _ConcurrencyAsk()


_WHAT_IF = re.compile(r"what if|(?<![a-z])if (?:i|we|you) |如果|假如|要是|改成|改为|设成|设为|调成|调到|换成|set to|lowered? to|raised? to")
_ASK_MEMORY = re.compile(r"how much (?:gpu |kv[ -]?cache |kv |total )?(?:memory|vram|space|ram)|how (?:big|large)|memory (?:do|would|will|does) "
                         r"|memory (?:is )?(?:needed|required)|多少 ?(?:显存|内存|空间|gi?b?\b)|多大|(?:需要|要|占|吃)(?:多少)?(?:显存|内存)")
_ASK_KV = re.compile(r"how many tokens|多少(?: ?个)? ?token|kv (?:cache )?capacity|能放多少|能缓存多少|largest (?:--)?max[ _-]?model[ _-]?len"
                     r"|(?:largest|longest|maximum|max) (?:context|sequence)(?: length| len)? (?:for|of|on|with|i can)\b.{0,80}\d"
                     r"|max[ _-]?model[ _-]?len.{0,12}(?:最大|能开|能设|多大|多少)|(?:最大|最多)能?(?:开|设)")
# "the largest --max-model-len I can run …", "max context length for … on 1x A100" (trial)
_ASK_LONGEST = re.compile(r"(?:largest|highest|biggest|longest|maximum|max) (?:--)?max[ _-]?model[ _-]?len"
                          r"|(?:largest|longest|maximum|max) (?:context|sequence)(?: length| len)?\b"
                          r"|max[ _-]?model[ _-]?len.{0,12}(?:最大|最多|能开|能设|多大|多少|can i|could i|should i)"
                          r"|(?:上下文|context)(?:长度|length)?.{0,6}(?:最大|最多|最长)")
_ASKING = re.compile(r"how (?:many|much|big|large)|多少|多大|几|\?|吗|计算|算一下|估算|compute|calculate|estimate|what(?:'s| is)")
_LOGPROBS = re.compile(r"logprob")
# What makes a logprobs question one about the IPC message (or the hang it causes): "batch_size"
# does not ("prompt_logprobs differ with batch_size > 1" got a message size).
_MSG_WORDS = re.compile(r"message|消息|msgmax|msgmnb|(?<![a-z_])ipc\b|bytes|字节"
                        r"|(?<![a-z])(?:hangs?|hanging|hung|stuck|freez\w*)\b|no response|never return|卡住|卡死|卡着|无响应|没响应|不返回|阻塞")
_DECODE = re.compile(r"decode (?:token )?budget|decode tokens|tokens? (?:left )?for (?:decode|outputs?)|解码 ?(?:token)? ?预算|留给 ?(?:输出|decode|解码)|输出预算")
_ASK_SEQS = re.compile(r"max[_ -]?num[_ -]?seqs|how many (?:seqs|sequences|requests)|concurren|并发|支撑|support")
_VLLM = re.compile(r"vllm")
_FASTDEPLOY = re.compile(r"fastdeploy|num_blocks_global|total_block_num|kv_cache_ratio")

LOG_KEYS = {"num_blocks_global": "num_blocks", "total_block_num": "num_blocks", "num_gpu_blocks": "num_blocks", "block_size": "block_size",
            "kv_cache_tokens": "kv_cache_tokens", "max_concurrency_tokens": "max_concurrency_tokens",
            "max_concurrency_x": "max_concurrency_x", "prefill_kvcache_block_num": "prefill_blocks",
            "kv_cache_memory_gib": "kv_cache_memory", "kv_cache_ratio": "kv_cache_ratio"}
LOG_SCALE = {"kv_cache_memory_gib": GIB}  # a log figure in GiB, kept in bytes like the question's

# ---------------------------------------------------------------- words shown to the asker

# Names, formulas, headings and notes shown to the asker are in assistant/i18n/calculations.py.


def _catalog_key(kind: str, key: str) -> str | None:
    full = f"calculations.{kind}.{key}"
    return full if full in catalog() else None


def _name(key: str, lang: str) -> str:
    """A parameter's name as shown to the asker (the key itself when the catalog has none)."""
    full = _catalog_key("name", key)
    return t(full, lang) if full else key


def _names(key: str) -> dict[str, str]:
    return {lang: _name(key, lang) for lang in LANGS}


def _msg(key: str, **values: object) -> dict[str, str]:
    """`calculations.<key>` in every language; a value given as {lang: text} is filled per language."""
    return {lang: t(f"calculations.{key}", lang, **{k: (v[lang] if isinstance(v, dict) else v) for k, v in values.items()})
            for lang in LANGS}


def _join(items, sep: str = "list") -> dict[str, str]:
    """Items joined with each language's separator (", " and "、" for a list)."""
    items = [str(i) for i in items]
    return {lang: t(f"calculations.sep.{sep}", lang).join(items) for lang in LANGS}


@dataclass(frozen=True)
class Value:
    """One input of a calculation and where it came from, so the answer can show it."""

    key: str  # a parameter key (its shown name is calculations.name.<key> in the catalog)
    value: int | float | bool
    source: str  # "question", "log", "default", "derived"
    written: str = ""  # as written in the question, the log key, or how it was derived
    approximate: bool = False


@dataclass
class CapacityAnswer:
    """A capacity question's outcome: the tool runs, or what is missing and why nothing was computed."""

    tool: str
    calls: list["ToolCall"] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)
    notes: list[dict[str, str]] = field(default_factory=list)
    defaults: list[dict[str, str]] = field(default_factory=list)  # documented defaults used, each said out loud
    error: str | None = None  # a tool's own refusal (e.g. a value out of range)
    formula: str | None = None  # a calculations.formula.<key> when the tool has a variant (MLA)
    # The engine the question names ("" for neither): where a missing value is read differs
    # (vLLM logs "Model loading took N GiB"; FastDeploy prints no such line). A hint without
    # an engine's variant serves both.
    engine: str = ""
    # Notes said right under the figure, before its formula: what makes the figure moot (a
    # context the checkpoint refuses) or limits it (the default batch ceiling), not small print.
    lead: list[dict[str, str]] = field(default_factory=list)

    @property
    def computed(self) -> bool:
        return bool(self.calls) and all(c.error is None for c in self.calls) and not self.missing and not self.problems

    @property
    def call(self) -> "ToolCall | None":
        """The call that answers the question (the last of a chain), when it ran."""
        return self.calls[-1] if self.computed else None

    def context(self) -> str:
        """A line for the LLM's prompt: the computed result, or what it must ask for instead of guessing."""
        if self.computed:
            result = self.call.result
            return (f"Computed with {self.tool}: {result['formula']}. {result.get('explanation', {}).get('en', '')} "
                    f"Values used: {_values_line(self.values, 'en')}.").strip()
        asks = [_name(k, "en") for k in self.missing] + [p["en"] for p in self.problems]
        return (f"A {self.tool} calculation ({t(f'calculations.formula.{self.formula or self.tool}', 'en')}) cannot be done yet: {'; '.join(asks) or self.error}. "
                f"Do not invent these numbers; ask the user for them.")


# ---------------------------------------------------------------- facts: question first, then log

# A last line that changes one of the values before it: a chat follow-up folded under the
# thread's first question ("and with 32768?", "那如果 max-model-len 改成 16k 呢"), or a what-if.
# The Chinese words need no word boundary after them: "那每个请求 3万 token 呢" was no follow-up
# (trial), since 那 and 每 are both word characters to `\b`.
_FOLLOW_ON = re.compile(r"^\W*(?:(?:and|what about|how about|then|with)\b|那(?![个些边里时])|那么|那如果|如果|要是|假如|换成|改成)|"
                        + _WHAT_IF.pattern, re.I)
FOLLOW_ON_CHARS = 100
# The values such a line may change; a log's figures (GPU KV cache size) are not settings.
_ADJUSTABLE = ("max_model_len", "tokens_per_request", "max_num_seqs", "gpu_memory_utilization", "block_size",
               "tensor_parallel_size", "sessions", "input_tokens", "output_tokens", "kv_cache_ratio")
# What a follow-on line may replace: the card too, "换成 80G 的卡呢" after 单卡 24G asked which of
# the two was meant (trial).
_STAGED = (*_ADJUSTABLE, "gpu_count", "gpu_memory")
# A last line that is only a new value ("and with 32768?", "那 40960 呢", "what about 16k?"): a
# number in a longer line ("and why do I see Xid 79?", "then CUDA error 700") is no new setting.
_JUST_A_NUMBER = re.compile(r"\W*(?:and|what about|how about|then|那么?|那如果|如果|要是|假如|换成|改成)?\s*(?:with|at|to|if|用|改成|换成)?\s*"
                            r"[\d.,]+\s*[km]?\s*(?:呢|吗|的话)?\s*[?？。.!！]*\s*")
# The largest value a bare follow-up number can mean for each: "那 40960 呢" is no GPU count.
_MOST = {"tensor_parallel_size": 64, "gpu_count": 1024, "gpu_memory_utilization": 1, "block_size": 1024}


def is_follow_on(line: str) -> bool:
    """Whether a line changes an earlier value ("and with 0.95?", "那如果 max-model-len 改成 16k 呢")."""
    return len(line) <= FOLLOW_ON_CHARS and bool(_FOLLOW_ON.search(line.strip()))


def follow_on_lines(question: str) -> list[str]:
    """The question's last lines that each change an earlier value, oldest first: a chat's
    chain of what-ifs ("and with 0.95?", then "and with 8k tokens?") folded under its first
    question. The first line is never one."""
    lines = [line for line in question.splitlines() if line.strip()]
    chain: list[str] = []
    for line in reversed(lines[1:]):
        if not is_follow_on(line):
            break
        chain.append(line)
    return chain[::-1]


def _follow_on_spans(question: str, norm: str) -> list[tuple[int, int, str]]:
    """Where, in the normalised text, each such line sits (start, end, the line), oldest first."""
    spans: list[tuple[int, int, str]] = []
    end = len(norm)
    for line in reversed(follow_on_lines(question)):
        last = normalize(line)
        if not last or not norm[:end].endswith(last):
            break
        spans.append((end - len(last), end, line))
        end -= len(last)
        while end and norm[end - 1].isspace():
            end -= 1
    return spans[::-1]


def _own_line_labels(x: Extraction, question: str) -> Extraction:
    """Each follow-on line's numbers with the labels its own words give them: read with the
    message before it, "…最多能并发多少\nand with 65536?" bound 65536 to 并发 (sessions)."""
    own: dict[int, Quantity] = {}
    for start, _end, line in _follow_on_spans(question, x.text):
        own.update({q.start + start: q for q in extract(line).quantities})
    # its problem too: "not a whole number" was the earlier line's 并发 speaking, not 0.95's (trial)
    return replace(x, quantities=[replace(q, label=own[q.start].label, unit=own[q.start].unit, problem=own[q.start].problem)
                                  if q.start in own else q for q in x.quantities])


# More memory than any one GPU has (the largest, MI355X and B300, have 288 GB): a total.
ONE_GPU_MOST_GIB = 300


class _Facts:
    """The values of one question (and its log), with the problems found while reading them."""

    def __init__(self, x: Extraction, log_numbers: dict[str, float] | None, question: str = ""):
        self.x = x
        self.problems: list[dict[str, str]] = []
        self.notes: list[dict[str, str]] = []
        self._reported: set[str] = set()
        # The follow-on lines' spans, oldest first: a later line's value replaces an earlier one.
        self.spans = [(a, b) for a, b, _line in _follow_on_spans(question, x.text)] if question else []
        self.follow: dict[str, Quantity] = {}  # a bare number of a follow-on line, bound to the one value it can change
        for span in self.spans:
            self._bind_follow_on(x, span)
        for text in x.garbled:
            self._report(f"garbled:{text}", _msg("problem.garbled", text=text))
        self.log: dict[str, list[tuple[str, Decimal]]] = {}
        for raw_key, number in (log_numbers or {}).items():
            key = LOG_KEYS.get(raw_key)
            if key is not None and number is not None and number > 0:
                self.log.setdefault(key, []).append((raw_key, Decimal(str(number)) * LOG_SCALE.get(raw_key, 1)))

    def has(self, key: str) -> bool:
        return self.x.has(key) or key in self.log

    def asked(self, key: str) -> bool:
        return self.x.has(key)

    def _bind_follow_on(self, x: Extraction, span: tuple[int, int]) -> None:
        """What a follow-on line's lone number changes: "and with 32768?" after max-model-len 8192."""
        inside = [q for q in x.quantities if span[0] <= q.start < span[1]]
        before = [q for q in x.quantities if q.start < span[0]]
        bare = [q for q in inside if not q.label and q.usable and q.unit in ("count", "ratio", "bytes")]
        if len(bare) == 1 and not any(q.label for q in inside) and _JUST_A_NUMBER.fullmatch(x.text[span[0]:span[1]]):
            value = bare[0].value
            if value is not None and 0 < value < 1:  # "and with 0.95?": a share, the memory one unless a ratio was given
                labels = {"kv_cache_ratio"} if x.has("kv_cache_ratio") else {"gpu_memory_utilization"}
            else:
                labels = {q.label for q in before if q.label in _ADJUSTABLE and q.unit == bare[0].unit
                          and q.label not in ("gpu_memory_utilization", "kv_cache_ratio")
                          and (value is None or value <= _MOST.get(q.label, value))}
            if len(labels) == 1:
                self.follow[labels.pop()] = bare[0]
            elif labels:  # after max-model-len 8192 and max-num-seqs 256: which one it changes is asked
                names = {lang: t("calculations.sep.list", lang).join(_name(k, lang) for k in sorted(labels)) for lang in LANGS}
                self._report("follow_up", _msg("follow_up_which", value=bare[0].text, names=names))
        gpus = [q for q in inside if q.label == "gpu_count"]
        if gpus and not any(q.label == "tensor_parallel_size" for q in inside) and any(
                q.label == "tensor_parallel_size" for q in before):
            self.follow["tensor_parallel_size"] = gpus[0]  # "…tp 2\nand with 4 GPUs?": the model is split over them

    def _stage(self, q: Quantity) -> int:
        """0 for the question's own values, n for the nth follow-on line's."""
        return next((n for n, (a, b) in enumerate(self.spans, 1) if a <= q.start < b), 0)

    def get(self, key: str) -> Value | None:
        """The one value for `key`. Two different values, a range or a bad number become a problem
        (asked about) and None; a question value wins over the log's, with a note when they differ.
        A follow-on last line's value replaces the earlier one ("and with 32768?"), said in a note."""
        found = self.x.by_label(key)
        if key in self.follow:
            found = found + [replace(self.follow[key], label=key)]
        bad = [q for q in found if not q.usable]
        if bad:
            self._problem(key, bad[0])
            return None
        values = sorted({q.value for q in found})
        top = max((self._stage(q) for q in found), default=0) if key in _STAGED else 0
        later = [q for q in found if top and self._stage(q) == top]
        if len(values) > 1 and later and len({q.value for q in later}) == 1 and len(later) < len(found):
            old = max((q for q in found if self._stage(q) < top), key=self._stage)  # the value it replaces
            note = _msg("follow_up_value", name=_names(key), new=later[0].text, old=old.text)
            if note not in self.notes:  # each planner of a chain asks again
                self.notes.append(note)
            found, values = later[:1], [later[0].value]
        if len(values) > 1:
            self._report(key, _msg("twice_in_question", name=_names(key), values=_join(q.text for q in found)))
            return None
        logged = sorted({v for _, v in self.log.get(key, [])})
        if found:
            q = found[0]
            card = card_memory(self.x.text, q.value) if key == "gpu_memory" else None
            if card is not None:
                name, reported = card
                self.notes.append(_msg("card_memory", text=q.text, card=name.upper(), mib=f"{reported / 2**20:,.0f}",
                                       gib=f"{reported / GIB:.1f}"))
                return Value(key, _number(reported), "question", q.text, q.approximate)
            if key == "gpu_memory" and q.value is not None and q.value > ONE_GPU_MOST_GIB * GIB:
                # "on one 800GB GPU" gave 403 full-length requests (trial): no GPU has that much,
                # so it is a total, and split the wrong way it is a wrong number.
                self._report(key, _msg("problem.gpu_memory_total", text=q.text, most=ONE_GPU_MOST_GIB))
                return None
            if q.unit == "bytes" and q.scale in ("gb", "g", "mb", "kb", "tb"):
                self.notes.append(_msg("binary_units", text=q.text, scale=q.scale, unit=q.scale[0].upper()))
            binary = self._binary_k(key, q)
            if binary is not None:
                return binary
            if logged and logged != [q.value]:
                self.notes.append(_msg("question_over_log", setting=key, logged=_plain(logged[0]), text=q.text))
            return Value(key, _number(q.value), "question", q.text, q.approximate)
        if len(logged) > 1:
            self._report(key, _msg("log_gives_several", name=_names(key), values=_join((_plain(v) for v in logged), "and")))
            return None
        if logged:
            raw_key = self.log[key][0][0]
            return Value(key, _number(logged[0]), "log", raw_key)
        return None

    def _binary_k(self, key: str, q: Quantity) -> Value | None:
        """The value of an "Nk" read in 1024s, with the note that says why; None when it is read as
        written (noted, for a count: "4k" tokens are 4,000 or 4,096, the answer moves by one request)."""
        if q.value is None:
            return None
        binary = q.value / 1000 * 1024
        if key == "max_model_len" and q.scale == "ki":
            # vLLM reads --max-model-len 16K as 16384 (16k as 16000): "16K" computed as
            # 16,000 gave 31 requests where vLLM's 16384 gives 30 (trial).
            self.notes.append(_msg("binary_k", text=q.text, value=_plain(binary)))
            return Value(key, _number(binary), "question", q.text, q.approximate)
        if self._in_1024s(key, q):
            self.notes.append(_msg("binary_elsewhere", text=q.text, value=_plain(binary)))
            return Value(key, _number(binary), "question", q.text, q.approximate)
        if q.scale in ("k", "ki") and q.unit == "count":
            self.notes.append(_msg("decimal_k", text=q.text, value=_plain(q.value), binary=_plain(binary)))
        return None

    def _in_1024s(self, key: str, q: Quantity) -> bool:
        """Whether "Nk" means N × 1024 here: that size is written out in the question or its log ("32k"
        beside a pasted "Maximum concurrency for 32,768 tokens"), or the same setting was given in
        1024s before it ("max-model-len 32768", then "改成 16k 呢"); both were read in 1000s (trial).
        Only token sizes count: "--max-num-seqs 2048" made "2k" tokens 2,048 (review)."""
        if q.scale != "k" or q.unit != "count" or q.value is None or q.value % 1000:
            return False
        binary = q.value / 1000 * 1024
        sizes = [o.value for label in _TOKEN_SIZES for o in self.x.by_label(label) if o.value is not None and not o.scale]
        sizes += [v for label in _TOKEN_SIZES for _raw, v in self.log.get(label, [])]
        same = [o.value for o in self.x.by_label(key) if o.value is not None and not o.scale]
        return binary in sizes or any(v >= 1024 and v % 1024 == 0 and v % 1000 for v in same)

    def _problem(self, key: str, q: Quantity) -> None:
        kind = q.problem if q.problem in ("range", "negative", "too_large", "not_integer") else "other"
        shown = q.text[:24] if kind == "too_large" else q.text
        self._report(key, _msg(f"problem.{kind}", name=_names(key), text=shown))

    def _report(self, key: str, text: dict[str, str]) -> None:
        if key not in self._reported:
            self._reported.add(key)
            self.problems.append(text)


# The labels that are token counts of a request or a context, for reading "Nk" (`_Facts._in_1024s`).
# Not the bare "tokens" label: "--max-num-batched-tokens 4096" is no request size (review).
_TOKEN_SIZES = ("max_model_len", "tokens_per_request", "input_tokens", "output_tokens", "max_concurrency_tokens")


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _plain(value: Decimal | float | int) -> str:
    return f"{_number(Decimal(str(value))):,}" if not isinstance(value, bool) else str(value)


# ---------------------------------------------------------------- one planner per tool

class _Plan:
    """Collects the arguments of one tool call, the values shown, and what is missing."""

    def __init__(self, tool: str, facts: _Facts):
        self.tool, self.facts = tool, facts
        self.args: dict = {}
        self.values: list[Value] = []
        self.missing: list[str] = []
        self.notes: list[dict[str, str]] = []
        self.lead: list[dict[str, str]] = []  # see CapacityAnswer.lead
        self.defaults: list[dict[str, str]] = []

    def need(self, key: str, arg: str, value: Value | None, convert: Callable = int) -> None:
        if value is None:
            if key not in self.missing and key not in self.facts._reported:  # a reported problem is asked about already
                self.missing.append(key)
            return
        self.args[arg] = convert(value.value)
        self.values.append(replace(value, value=self.args[arg]))  # shown as the tool gets it (GiB, not bytes)

    def optional(self, arg: str, value: Value | None, convert: Callable = int) -> None:
        if value is not None:
            self.need(arg, arg, value, convert)

    def default(self, key: str, arg: str, value: int | float, note: dict[str, str]) -> None:
        """A documented default, used only with a note that says so (dropped when nothing is computed)."""
        self.args[arg] = value
        self.values.append(Value(key, value, "default", note["en"]))
        self.defaults.append(note)


_PER_GPU = re.compile(r"per (?:gpu|card|device|rank)|/ ?gpu|each gpu|每张卡|每卡|单卡|每个 ?gpu|每张 ?gpu|after tp|tp ?后|切分后")
_WHOLE_MODEL = re.compile(r"(?:whole|entire|full) model|per model|for the model|(?:before|without) (?:tp|tensor[ -]parallel)"
                          r"|整个模型|全模型|tp ?前|切分前|不切分")


def _kv_bytes_whose(text: str, written: str) -> str | None:
    """Whether a KV-bytes-per-token figure is said to be one GPU's or the whole model's
    ("320 KiB per token (before TP)", "256 KiB per token per GPU", "每张卡每 token KV 80 KiB"):
    "gpu", "model" or None when the words of its own clause, around it, do not say."""
    low = text.lower()
    at = low.find(written.lower())
    if at < 0:
        return None
    # Only the figure's own clause: "(8 KV heads, so 2 per GPU)" or "; the whole model fits" is
    # about something else (review). "(before TP)" right after it is its own.
    before = re.split(r"[,，;；。\n]", low[max(0, at - 24):at])[-1]  # "每张卡每 token KV 80 KiB"
    after = re.split(r"[,，;；。\n]", low[at + len(written):at + len(written) + 40])[0]
    near = before + " " + after
    if _PER_GPU.search(near):
        return "gpu"
    return "model" if _WHOLE_MODEL.search(near) else None


_OTHER_PARALLEL = re.compile(r"data[ _-]?parallel|数据并行|(?<![\w-])-dp\b|(?<![\w-])dp ?[=:]|replicas?\b|副本|pipeline[ _-]?parallel|流水线并行"
                             r"|(?<![\w-])-pp\b|(?<![\w-])pp ?[=:]")


def _tensor_parallel(f: _Facts) -> Value | None:
    """The tensor-parallel size: as given, or else the GPU count the question names ("4x A100
    80GB", "8 张 H800"), said so in a note. Left at 1, "Llama-3.1-70B on 4x A100 80GB, weights
    131 GiB" was told its weights do not fit and vLLM would not start."""
    tp = f.get("tensor_parallel_size")
    if tp is not None or "tensor_parallel_size" in f._reported or f.x.has("tensor_parallel_size"):
        return tp
    if _OTHER_PARALLEL.search(f.x.text):
        return None  # "8x A100 with --data-parallel-size 8": one replica per GPU, nothing split (review)
    count = f.get("gpu_count") if f.x.has("gpu_count") else None
    if count is None or count.value <= 1:
        return None
    note = _msg("gpus_as_tp", text=count.written, n=count.value)
    if note not in f.notes:
        f.notes.append(note)
    return Value("tensor_parallel_size", count.value, "question", count.written, count.approximate)


def _framework(facts: _Facts) -> str:
    text = facts.x.text
    vllm_blocks = any(raw == "num_gpu_blocks" for raw, _ in facts.log.get("num_blocks", ()))  # V0's "# GPU blocks: N"
    if _FASTDEPLOY.search(text) or "num_blocks" in facts.log and "kv_cache_tokens" not in facts.log and not vllm_blocks:
        return "fastdeploy"
    return "vllm" if _VLLM.search(text) or "kv_cache_tokens" in facts.log or vllm_blocks else "fastdeploy"


# The engines' defaults the answers use when the question does not say: vLLM's and FastDeploy's
# gpu_memory_utilization, and each engine's KV-cache block size.
DEFAULT_UTILIZATION = Decimal("0.9")
DEFAULT_BLOCK_SIZE = {"vllm": 16, "fastdeploy": 64}


def _block_size(plan: _Plan) -> None:
    value = plan.facts.get("block_size")
    if value is not None:
        plan.need("block_size", "block_size", value)
    elif "block_size" in plan.facts._reported:
        return  # given twice, or as a range: asked about, never defaulted
    else:
        engine = _framework(plan.facts)
        plan.default("block_size", "block_size", DEFAULT_BLOCK_SIZE[engine], _msg(f"default.block_size_{engine}"))


def _request_tokens(plan: _Plan, arg: str, allow_max_model_len: bool = False) -> None:
    """Tokens of one request: a stated total, or input + output, or plain "N tokens"; never input alone."""
    f = plan.facts
    total, given_in, given_out = f.get("tokens_per_request"), f.get("input_tokens"), f.get("output_tokens")
    if total is not None and (given_in is not None or given_out is not None) and _restated_later(f):
        # A chat follow-up "what about avg 4k tokens per request?" after "2k 输入 + 6k 输出" states
        # the request anew; it was asked which of the two was right (trial).
        parts = " + ".join(v.written for v in (given_in, given_out) if v is not None)
        note = _msg("follow_up_value", name=_names("tokens_per_request"), new=total.written, old=parts)
        if note not in f.notes:
            f.notes.append(note)
        plan.need("tokens_per_request", arg, total)
        return
    if given_in is not None and given_out is not None:
        summed = given_in.value + given_out.value
        if total is not None and total.value != summed:
            f._report("tokens_per_request", _msg("sum_mismatch", given_in=given_in.written, given_out=given_out.written, total=total.written))
            return
        plan.values += [given_in, given_out]
        plan.args[arg] = int(summed)
        plan.values.append(Value("tokens_per_request", summed, "derived", f"{given_in.written} + {given_out.written}",
                                 given_in.approximate or given_out.approximate))
        return
    if total is not None and (given_in is not None or given_out is not None):
        # "each request 4k tokens + 1k output": the 1k was dropped and 4k read as the whole
        # request. Whether the stated total already holds the part is the asker's to say.
        part = given_in or given_out
        which = "input" if given_in is not None else "output"
        f._report("tokens_per_request", _msg(f"part_unclear_{which}", part=part.written, total=total.written))
        return
    if total is not None:
        plan.need("tokens_per_request", arg, total)
        return
    if given_in is not None or given_out is not None:
        plan.values.append(given_in or given_out)
        plan.missing.append("output_tokens" if given_in is not None else "input_tokens")
        return
    plain = f.get("tokens")
    if plain is not None:
        plan.need("tokens_per_request", arg, Value("tokens_per_request", plain.value, plain.source, plain.written, plain.approximate))
        return
    longest = f.get("max_model_len") if allow_max_model_len else None
    if longest is not None:
        plan.need("max_model_len", arg, longest)
        plan.notes.append(_msg("full_length"))
        return
    if "tokens_per_request" not in f._reported:
        plan.missing.append("tokens_per_request")


def _restated_later(f: _Facts) -> bool:
    """Whether a follow-on line gives the request's total tokens after the input and output
    were given before it."""
    totals = [f._stage(q) for q in f.x.by_label("tokens_per_request")]
    parts = [f._stage(q) for q in f.x.by_label("input_tokens") + f.x.by_label("output_tokens")]
    return bool(totals) and bool(parts) and min(totals) > max(parts)


def _plan_kv_concurrency(f: _Facts) -> _Plan:
    plan = _Plan("kv_concurrency", f)
    plan.need("num_blocks", "num_blocks", f.get("num_blocks"))
    _request_tokens(plan, "avg_tokens_per_request", allow_max_model_len=True)
    _block_size(plan)
    _blocks_at_new_size(plan)
    plan.optional("max_num_seqs", f.get("max_num_seqs"))
    return plan


def _blocks_at_new_size(plan: _Plan, arg: str = "num_blocks") -> None:
    """A new block_size under a block count the server logged at the old one: the KV memory is
    the same, so the blocks are fewer or more. "那 block_size 改成 128 呢" after num_blocks_global
    17131 computed 17131 blocks of 128, twice the tokens (probe); so did a question's block_size
    over a log's num_blocks_global and block_size 64 (review)."""
    f = plan.facts
    if arg not in plan.args or not plan.args.get("block_size"):
        return
    sizes = f.x.by_label("block_size") + ([f.follow["block_size"]] if "block_size" in f.follow else [])
    blocks = f.x.by_label("num_blocks")
    logged = [int(value) for _raw, value in f.log.get("block_size", ())]
    if any(f._stage(q) for q in blocks):
        return  # the follow-up gives the blocks too
    if blocks and any(f._stage(q) for q in sizes):  # the question's own count, a later line's size
        earlier = [q for q in sizes if not f._stage(q)]
        old = int(earlier[-1].value) if earlier else logged[-1] if logged else None
    elif not blocks and sizes and logged:  # the log's count, at the log's size
        old = logged[-1]
    elif not blocks and any(f._stage(q) for q in sizes):  # the log's count, its size unsaid
        old = None
    else:
        return
    engine = _framework(f)
    source = "blocks_at_new_size" if old is not None else "blocks_at_default_size"
    old = old if old is not None else DEFAULT_BLOCK_SIZE[engine]
    new = plan.args["block_size"]
    if old == new:
        return
    counted = plan.args[arg]
    plan.args[arg] = counted * old // new
    plan.values = [v for v in plan.values if v.key != "num_blocks"]
    plan.values.insert(0, Value("num_blocks", plan.args[arg], "derived", f"{_plain(counted)} × {old} ÷ {new}"))
    plan.notes.append(_msg(source, blocks=_plain(counted), old=old, new=new, new_blocks=_plain(plan.args[arg]),
                           engine="vLLM" if engine == "vllm" else "FastDeploy"))


def _plan_blocks_needed(f: _Facts) -> _Plan:
    plan = _Plan("blocks_needed", f)
    plan.need("sessions", "sessions", f.get("sessions"))
    _request_tokens(plan, "tokens_per_session", allow_max_model_len=True)
    _block_size(plan)
    return plan


def _plan_kv_tokens(f: _Facts) -> _Plan:
    plan = _Plan("kv_tokens_concurrency", f)
    kv = f.get("kv_cache_tokens")
    if kv is None and f.has("max_concurrency_tokens") and f.has("max_concurrency_x"):
        per, times = f.get("max_concurrency_tokens"), f.get("max_concurrency_x")
        if per is not None and times is not None:
            derived = round(Decimal(str(per.value)) * Decimal(str(times.value)))
            kv = Value("kv_cache_tokens", int(derived), "derived", f"{_plain(per.value)} × {times.value}", True)
            plan.notes.append(_msg("derived_kv_size", per=_plain(per.value), times=times.value))
    plan.need("kv_cache_tokens", "kv_cache_tokens", kv)
    longest = f.get("max_model_len")
    logged = f.get("max_concurrency_tokens")
    # "500,000 tokens of KV cache, 64 concurrent requests: the largest max-model-len?" is the
    # same division the other way round; the call then checks that 64 of that length fit.
    wanted = "kv_cache_tokens" in plan.args and longest is None and _ASK_LONGEST.search(f.x.text) and f.has("sessions")
    sessions = f.get("sessions") if wanted else None
    # In whole blocks, as vLLM counts them: 500,000 ÷ 64 = 7,812 tokens each held 63.9 requests,
    # since 7,812 takes 489 blocks of 16; ⌊31,250 ÷ 64⌋ = 488 blocks, 7,808 tokens, holds 64.
    size = f.get("block_size")
    block = int(size.value) if size is not None and size.value >= 1 else 16
    per = (plan.args["kv_cache_tokens"] // block // int(sessions.value)) * block if sessions is not None and sessions.value >= 1 else 0
    # A request length the asker states is what their requests take; --max-model-len only bounds
    # one: "上下文 32k，平均每个请求 4k token，并发 200 能跑吗" was computed for 32,000-token requests,
    # 14 at once instead of 114 (trial).
    # Only a whole request: a prompt alone ("prompts are about 2000 tokens") still takes the bound (review).
    stated = f.has("tokens_per_request") or (f.has("input_tokens") and f.has("output_tokens"))
    if longest is not None and not stated:
        plan.need("max_model_len", "tokens_per_request", longest)
    elif longest is not None:
        _request_tokens(plan, "tokens_per_request")
        plan.values.append(longest)
        if plan.args.get("tokens_per_request", 0) > longest.value:
            # vLLM refuses a request longer than its context (HTTP 400): 45 of 10,000 tokens "fit"
            # at --max-model-len 4096 (review). The bound is what fits, said so.
            plan.notes.append(_msg("over_max_model_len", stated=_plain(plan.args["tokens_per_request"]), limit=longest.written))
            plan.args["tokens_per_request"] = int(longest.value)
    elif per > 0:
        plan.values.append(sessions)
        plan.need("max_model_len", "tokens_per_request",
                  Value("max_model_len", per, "derived",
                        f"⌊{_plain(plan.args['kv_cache_tokens'])} ÷ {block} ÷ {_plain(sessions.value)}⌋ × {block}"))
    elif logged is not None and not f.has("tokens_per_request") and not f.has("tokens"):
        # "Maximum concurrency for 32,768 tokens per request: 0.82x": the length vLLM computed
        # the figure for is its max_model_len; asking for it back asked for what was pasted.
        plan.need("max_model_len", "tokens_per_request", Value("max_model_len", logged.value, logged.source, logged.written))
    else:
        _request_tokens(plan, "tokens_per_request")
        if "tokens_per_request" in plan.missing:
            plan.missing[plan.missing.index("tokens_per_request")] = "max_model_len"
    plan.optional("max_num_seqs", f.get("max_num_seqs"))
    plan.optional("block_size", f.get("block_size"))  # whole blocks per request; vLLM's 16 unless given
    # A --max-model-len past the named checkpoint's context is refused before any concurrency:
    # "Qwen2.5-32B-Instruct … --max-model-len 65536" was told "vLLM prints 5.01x" (trial).
    if (over := _context_over_limit(f.x)) is not None:
        plan.lead.append(over)
    return plan


_TORCH_DTYPE_FP32 = re.compile(r"torch_dtype\W{0,4}(?:torch\.)?float32")
_DTYPE_FLAG = re.compile(r"--dtype[ =]|\bdtype ?= ?['\"]?(?:float32|fp32)")


def _dtype(plan: _Plan) -> None:
    x = plan.facts.x
    if x.kv_cache_dtype:
        plan.args["dtype"] = x.kv_cache_dtype
        plan.values.append(Value("dtype", x.kv_cache_dtype, "question", "--kv-cache-dtype"))
    elif x.dtypes == ("float32",) and _TORCH_DTYPE_FP32.search(x.text) and not _DTYPE_FLAG.search(x.text):
        # A pasted config.json's float32 is the checkpoint's: vLLM's --dtype auto serves it in
        # 16 bits, and the KV cache follows (the tool gave 2 bytes, `ask` 4, for one config; review).
        plan.args["dtype"] = "bfloat16"
        plan.values.append(Value("dtype", "bfloat16", "question", "torch_dtype float32, served in 16 bits by --dtype auto"))
    elif len(x.dtypes) == 1:
        plan.args["dtype"] = x.dtypes[0]
        plan.values.append(Value("dtype", x.dtypes[0], "question", x.dtypes[0]))
    elif len(x.dtypes) > 1:
        plan.facts._report("dtype", _msg("several_dtypes", dtypes=_join(x.dtypes)))
    else:
        plan.missing.append("dtype")


def _plan_kv_bytes(f: _Facts) -> _Plan:
    if not any(f.asked(key) for key in ("num_layers", "num_kv_heads", "head_dim", "kv_lora_rank", "qk_rope_head_dim",
                                        "hidden_size", "num_attention_heads")) and (model := named_model(f.x.text)) is not None:
        # "Qwen2.5-72B 每个 token 的 KV cache 多大" asked for the layers, KV heads and head_dim the
        # built-in table has, above a team page that gives 320 KiB (trial)
        return _plan_model_shape(f, model)
    plan = _Plan("kv_bytes_per_token", f)
    plan.need("num_layers", "num_layers", f.get("num_layers"))
    if f.asked("kv_lora_rank") or f.asked("qk_rope_head_dim"):  # MLA (DeepSeek): one latent per token, no KV heads
        plan.need("kv_lora_rank", "kv_lora_rank", f.get("kv_lora_rank"))
        plan.need("qk_rope_head_dim", "qk_rope_head_dim", f.get("qk_rope_head_dim"))
        _dtype(plan)
        return plan
    kv_heads = f.get("num_kv_heads")
    if kv_heads is None and f.asked("num_attention_heads"):
        heads = f.get("num_attention_heads")
        f._report("num_kv_heads", _msg("kv_heads", heads=heads.written if heads else ""))
    else:
        plan.need("num_kv_heads", "num_kv_heads", kv_heads)
    head_dim = f.get("head_dim")
    hidden, heads = f.get("hidden_size") if f.asked("hidden_size") else None, f.get("num_attention_heads") if f.asked("num_attention_heads") else None
    if head_dim is None and hidden is not None and heads is not None and hidden.value % heads.value == 0:
        head_dim = Value("head_dim", hidden.value // heads.value, "derived", f"hidden_size {hidden.written} ÷ {heads.written} heads")
    plan.need("head_dim", "head_dim", head_dim)
    _dtype(plan)
    plan.optional("tensor_parallel_size", _tensor_parallel(f))
    return plan


# A KV cache's dtype said in words, not as the flag: "fp8 KV cache", "kv cache fp8", "KV cache 用 FP8".
# (The model's own format, "an FP8 model", says nothing of its KV cache: vLLM's auto keeps bf16.)
# Not a checkpoint's own format before "KV cache" ("Qwen2.5-72B-Instruct-FP8 KV cache": its weights
# are FP8, review), and not one the asker says is off ("without fp8 kv cache", "没开 fp8 kv cache";
# negation.denied_before).
_KV_DTYPE_WORDS = re.compile(r"(?<![\w-])(fp8(?:_e4m3|_e5m2)?|int8)[ _-]?kv\b|kv[ _-]?cache ?(?:用|使用|设为|设成|改成|改为|是|为|in|as|=|:)? ?"
                             r"(fp8(?:_e4m3|_e5m2)?|int8)\b")


def _without_kv_dtype(text: str) -> str:
    """The text without what it says of the KV cache's dtype, flag or words, so that the format
    left is the weights': "Qwen2.5-7B, fp8 KV cache" is a bf16 checkpoint (its weights were
    asked for as if unknown, and a sizing counted them at one byte)."""
    return _KV_DTYPE_WORDS.sub(" ", _KV_DTYPE.sub(" ", text))


def _kv_dtype_in_words(text: str) -> str | None:
    from .negation import denied_before

    m = _KV_DTYPE_WORDS.search(text)
    if m is None or denied_before(text, m.start()):
        return None
    return m.group(1) or m.group(2)


def _plan_model_shape(f: _Facts, model: ModelShape) -> _Plan:
    """kv_bytes_per_token from the built-in table of published shapes ("Qwen2.5-7B" names
    28 layers, 4 KV heads, head_dim 128), for a question that names the model but not them."""
    plan = _Plan("kv_bytes_per_token", f)
    for key, value, field_name in (("num_layers", model.layers, "num_hidden_layers"), ("num_kv_heads", model.kv_heads, "num_key_value_heads"),
                                   ("head_dim", model.head_dim, "head_dim")):
        plan.need(key, key, Value(key, value, "model", f"{model.name} config.json `{field_name}`"))
    said = f.x.kv_cache_dtype or _kv_dtype_in_words(f.x.text)
    if said:
        plan.args["dtype"] = said
        plan.values.append(Value("dtype", said, "question", "--kv-cache-dtype" if f.x.kv_cache_dtype else f"{said} KV cache"))
    else:  # vLLM's --kv-cache-dtype auto keeps the model's bf16, whatever format its weights are in
        plan.args["dtype"] = "bfloat16"
        plan.values.append(Value("dtype", "bfloat16", "model", f"{model.name} `torch_dtype`, --kv-cache-dtype auto"))
    tp = _tensor_parallel(f)
    if tp is not None and not model.splits_over(int(tp.value)):
        # vLLM refuses it at start-up; a KV budget for it (44.8 requests on 8 × A10) read as if it would run.
        f._report("tensor_parallel_size", _msg("tp_does_not_divide", model=model.name, tp=tp.value, heads=model.heads,
                                               kv_heads=model.kv_heads))
    else:
        plan.optional("tensor_parallel_size", tp)
    plan.notes.append(_msg("model_table", name=model.name))
    if (over := _context_over_limit(f.x)) is not None:
        plan.notes.append(over)
    return plan


def _context_over_limit(x: Extraction) -> dict[str, str] | None:
    """Said when the context a question plans for is longer than the named checkpoint's
    config.json allows: vLLM refuses that --max-model-len at start-up, so a KV budget for it
    ("4.2 requests of 131072 tokens on Qwen2.5-7B-Instruct") read as a plan that would run."""
    limit = context_limit(x.text)
    planned = [q.value for q in x.by_label("max_model_len") if q.usable]
    requested = [q.value for q in x.by_label("tokens_per_request") if q.usable]
    if limit is None or max(planned + requested, default=0) <= limit.tokens:
        return None
    length = int(max(planned + requested))
    # A request that long needs a --max-model-len that long: said so when only the request was given.
    setting = _msg("context_over_limit.flag" if length in planned else "context_over_limit.request", length=f"{length:,}",
                   flag=length)  # as typed on the command line, without the thousands separator
    base = ({lang: "" for lang in LANGS} if limit.base_tokens is None else
            _msg("context_over_limit.base", name=limit.checkpoint.removesuffix("-Instruct"), tokens=f"{limit.base_tokens:,}"))
    values = dict(checkpoint=limit.checkpoint, tokens=f"{limit.tokens:,}", length=f"{length:,}", base=base, setting=setting)
    if limit.yarn_tokens is None:
        return _msg("context_over_limit.none", **values)
    if length > limit.yarn_tokens:  # YaRN is documented, but not this far
        return _msg("context_over_limit.past_yarn", yarn=f"{limit.yarn_tokens:,}", **values)
    return _msg("context_over_limit.yarn", yarn=f"{limit.yarn_tokens:,}", original=limit.yarn_original,
                factor=f"{limit.yarn_tokens / limit.yarn_original:.1f}", **values)


def _table_weights(f: _Facts) -> Value | None:
    """The weights of a model the table knows, in bf16: its parameters × 2 bytes. Not for a
    quantized checkpoint (AWQ, FP8, GGUF…): those keep some layers in bf16 and add scales, so
    parameters × bits is no sure figure, and vLLM's "Model loading took" is asked for instead."""
    model = named_model(f.x.text)
    text = _without_kv_dtype(f.x.text)
    if model is None or _FOUR_BIT.search(text) or _EIGHT_BIT.search(text) or _GGUF_TYPE.search(text) or _OWN_FORMAT.search(text):
        return None
    weights = model.params_b * Decimal(10**9) * 2
    return Value("weights", _number(weights), "model", f"{model.name}: {_plain(model.params_b)}B × 2 B (bf16)", True)


# vLLM logs "Model loading took N GiB" per worker, so per GPU: the tool's weights are the
# whole model's, split over tensor_parallel_size. Taken as the whole, 33.88 GiB at TP 2 was
# split again and the KV cache overstated by 45%. A log said to come from another setup ("on a
# single H200", "earlier", "moving to 2x A100", "之前在 H200 上") holds that run's whole model;
# "moving average", "we moved to vLLM 0.6.3", "单卡每 token" (per card) and "(before TP)" beside
# a KV figure say no such thing (review).
_ELSEWHERE = re.compile(r"(?:on|with|using) (?:a |one )?single (?:gpu|card|[ah]\d+)|(?:on|with) one (?:gpu|card)|\b1 ?x ?gpu"
                        r"|\b(?:earlier|previously)\b|\bbefore,|(?:moving|moved|migrat\w*|switch\w*) (?:it |this |that )?to (?:\d+ ?x|[ah]\d|tp\b|tensor)"
                        r"|在单卡上?|单卡上|一张卡上|之前在|以前在|换到|迁移到", re.I)
_PER_GPU_WEIGHTS = re.compile(r"(?:model )?loading took[\s:]*(?:about |~)?([\d.]+) ?gi?b", re.I)


def _plan_kv_capacity(f: _Facts) -> list[_Plan]:
    """kv_cache_capacity, preceded by kv_bytes_per_token when the model's shape is given instead of bytes."""
    plan = _Plan("kv_cache_capacity", f)
    gib = lambda v: round(float(Decimal(str(v)) / GIB), 3)  # noqa: E731 - the quantities hold bytes
    memory = f.get("gpu_memory")
    if memory is None and not f.asked("gpu_memory") and (card := _one_size_card(f.x.text)) is not None:
        # "Qwen2.5-7B on one 4090": a card sold in one size says its memory (as nvidia-smi reports it)
        memory = Value("gpu_memory", _number(card[1]), "derived", f"{card[0].upper()}, {card[1] / 2**20:,.0f} MiB")
    plan.need("gpu_memory", "gpu_memory_gib", memory, gib)
    weights = f.get("weights")
    tp_value = f.get("tensor_parallel_size")  # stated: the log's run is the one asked about
    logged = _PER_GPU_WEIGHTS.search(f.x.text)
    if (weights is not None and tp_value is not None and tp_value.value > 1 and logged and not _ELSEWHERE.search(f.x.text)
            and Decimal(logged.group(1)) * GIB == Decimal(str(weights.value))):
        plan.notes.append(_msg("weights.per_gpu_log", text=weights.written, tp=tp_value.value))
        weights = replace(weights, value=_number(Decimal(str(weights.value)) * int(tp_value.value)),
                          written=f"{tp_value.value} × {weights.written}")
    if weights is None and "weights" not in f._reported:
        weights = _table_weights(f)
    plan.need("weights", "weights_gib", weights, gib)
    util = f.get("gpu_memory_utilization")
    if util is not None:
        plan.need("gpu_memory_utilization", "gpu_memory_utilization", util, float)
    elif "gpu_memory_utilization" not in f._reported:
        plan.default("gpu_memory_utilization", "gpu_memory_utilization", float(DEFAULT_UTILIZATION), _msg("default.gpu_memory_utilization"))
    if f.has("max_model_len") or not any(f.asked(k) for k in ("tokens_per_request", "input_tokens", "output_tokens")):
        plan.optional("max_model_len", f.get("max_model_len"))
    else:  # "how many 8k requests can it hold at once": the concurrency at that length (trial)
        _request_tokens(plan, "max_model_len")
    tp = _tensor_parallel(f)
    plan.optional("tensor_parallel_size", tp)
    given = f.get("kv_bytes_per_token")
    plans = [plan]
    if given is not None:
        whose = _kv_bytes_whose(f.x.text, given.written) if tp is not None and tp.value > 1 else "gpu"
        if whose == "gpu":
            plan.need("kv_bytes_per_token", "kv_bytes_per_token", given)
        elif whose == "model":
            per_gpu = math.ceil(given.value / tp.value)
            plan.need("kv_bytes_per_token", "kv_bytes_per_token",
                      Value("kv_bytes_per_token", per_gpu, "derived", f"{given.written} ÷ tensor_parallel_size {tp.value}"))
            plan.notes.append(_msg("kv_model_split", given=given.written, tp=tp.value))
        else:
            f._report("kv_bytes_per_token", _msg("per_gpu_kv", given=given.written, tp=tp.value))
    elif any(f.asked(k) for k in ("num_layers", "num_kv_heads", "head_dim", "kv_lora_rank")):
        shape = _plan_kv_bytes(f)
        plans.insert(0, shape)  # its result fills kv_bytes_per_token when the chain runs
    elif (model := named_model(f.x.text)) is not None:
        plans.insert(0, _plan_model_shape(f, model))
    else:
        plan.missing.append("kv_bytes_per_token")
    return plans


def _plan_kv_memory(f: _Facts) -> list[_Plan]:
    """kv_tokens_from_memory, preceded by kv_bytes_per_token when the model's shape is given instead of bytes."""
    plan = _Plan("kv_tokens_from_memory", f)
    plan.need("kv_cache_memory", "kv_cache_gib", f.get("kv_cache_memory"), lambda v: round(float(Decimal(str(v)) / GIB), 3))
    if f.has("max_model_len"):
        plan.optional("max_model_len", f.get("max_model_len"))
    elif any(f.asked(k) for k in ("tokens_per_request", "input_tokens", "output_tokens")):
        # "each request 20k tokens, how many at once?": the concurrency is at that length; left
        # out, the answer stopped at the token count and never divided.
        _request_tokens(plan, "max_model_len")
    given = f.get("kv_bytes_per_token")
    plans = [plan]
    if given is not None:
        plan.need("kv_bytes_per_token", "kv_bytes_per_token", given)
    elif any(f.asked(k) for k in ("num_layers", "num_kv_heads", "head_dim", "kv_lora_rank")):
        plans.insert(0, _plan_kv_bytes(f))  # its result fills kv_bytes_per_token when the chain runs
    elif (model := named_model(f.x.text)) is not None:
        plans.insert(0, _plan_model_shape(f, model))
    else:
        plan.missing.append("kv_bytes_per_token")
    return plans


def _plan_kv_needed(f: _Facts) -> list[_Plan]:
    """kv_memory_needed, preceded by kv_bytes_per_token when the model's shape is given instead of bytes."""
    plan = _Plan("kv_memory_needed", f)
    plan.need("sessions", "sessions", f.get("sessions"))
    _request_tokens(plan, "tokens_per_session", allow_max_model_len=True)
    plan.optional("tensor_parallel_size", _tensor_parallel(f))
    given = f.get("kv_bytes_per_token")
    if given is not None:
        tp = plan.args.get("tensor_parallel_size", 1)
        if tp > 1 and _kv_bytes_whose(f.x.text, given.written) == "gpu":  # "80 KiB per token per GPU": the whole is TP times it
            plan.need("kv_bytes_per_token", "kv_bytes_per_token", Value("kv_bytes_per_token", given.value * tp, "derived",
                                                                        f"{given.written} × tensor_parallel_size {tp}"))
            plan.args["kv_bytes_per_token_per_gpu"] = given.value
        else:
            plan.need("kv_bytes_per_token", "kv_bytes_per_token", given)
        return [plan]
    if any(f.asked(k) for k in ("num_layers", "num_kv_heads", "head_dim", "kv_lora_rank")):
        return [_plan_kv_bytes(f), plan]  # its result fills kv_bytes_per_token when the chain runs
    if (model := named_model(f.x.text)) is not None:
        shape = _plan_model_shape(f, model)
        weights = _table_weights(f)
        if weights is not None and {"sessions", "tokens_per_session"} <= plan.args.keys():
            # "需要多少显存" asks for all of it: the KV cache alone read as the answer (trial).
            kv = Decimal(plan.args["sessions"]) * plan.args["tokens_per_session"] * model.kv_bytes_per_token(_kv_dtype_bytes(f.x))
            plan.notes.append(_msg("weights_beside_kv", model=model.name, weights=_gib(Decimal(str(weights.value)) / GIB),
                                   total=_gib((Decimal(str(weights.value)) + kv) / GIB)))
        return [shape, plan]
    plan.missing.append("kv_bytes_per_token")
    return [plan]


def _plan_decode(f: _Facts) -> _Plan:
    plan = _Plan("fastdeploy_decode_budget", f)
    plan.need("num_blocks", "total_blocks", f.get("num_blocks"))
    ratio = f.get("kv_cache_ratio")
    prefill = f.get("prefill_blocks") if ratio is None else None
    if ratio is not None:
        plan.need("kv_cache_ratio", "kv_cache_ratio", ratio, float)
    elif prefill is not None and "num_blocks" in plan.args and "kv_cache_ratio" not in f._reported:
        derived = round(prefill.value / plan.args["total_blocks"], 4)
        plan.values.append(prefill)
        plan.need("kv_cache_ratio", "kv_cache_ratio", Value("kv_cache_ratio", derived, "derived",
                                                               f"{_plain(prefill.value)} ÷ {_plain(plan.args['total_blocks'])}"), float)
    elif "kv_cache_ratio" not in f._reported:
        plan.default("kv_cache_ratio", "kv_cache_ratio", 0.75, _msg("default.kv_cache_ratio"))
    _block_size(plan)
    _blocks_at_new_size(plan, "total_blocks")  # a log's 17220 blocks of 64 are 8610 of 128 (trial: 551 for 275)
    out = f.get("output_tokens")
    if out is not None:
        plan.need("output_tokens", "avg_output_tokens", out)
    elif _ASK_SEQS.search(f.x.text) and "output_tokens" not in f._reported:
        plan.missing.append("output_tokens")
    return plan


# The logprobs message's sizes that FastDeploy fixes when it is built, not per request: its
# msgsnd sends (MAX_BSZ * (K + 1) + 2) * 4 + … bytes with MAX_BSZ 512 and K 20 as macros
# (custom_ops/gpu_ops/save_output_msg_with_topk.cc), the FAQ formula's 512 and 20.
_COMPILED_SIZES = frozenset({"max_batch", "top_logprobs"})


def _plan_logprobs(f: _Facts) -> _Plan:
    plan = _Plan("logprobs_message_size", f)
    mtp = bool(f.x.mtp)
    plan.args["mtp"] = mtp
    plan.values.append(Value("mtp", mtp, "question" if f.x.mtp is not None else "default", "MTP on" if mtp else "MTP off"))
    if f.x.mtp is None:
        from .tools.capacity import LOGPROBS_MESSAGE_BYTES_MTP

        plan.notes.append(_msg("mtp_off", mtp_bytes=f"{LOGPROBS_MESSAGE_BYTES_MTP:,}"))
    examples = {"max_batch": 512, "top_logprobs": 20, "mtp_tokens": 6}
    used_example = []
    for key, example in examples.items():
        if key == "mtp_tokens" and not mtp:
            continue
        value = f.get(key)
        if value is not None and key in _COMPILED_SIZES and value.value < example:
            # The message holds 512 slots of 20 logprobs whatever a request asks: "top_logprobs=5"
            # computed 40,976 B, "fits under 65536", an all-clear for a hang still to come (trial).
            plan.args[key] = example
            plan.values.append(Value(key, example, "default", "FastDeploy's fixed message size"))
            plan.notes.append(_msg("compiled_size", setting=key, given=value.written, size=example))
        elif value is not None:
            plan.need(key, key, value)
        elif key not in f._reported:
            plan.args[key] = example
            plan.values.append(Value(key, example, "default", "FastDeploy FAQ example"))
            used_example.append(f"{key} {example}")
    if used_example:
        plan.notes.append(_msg("faq_example", values=_join(used_example, "example")))
    msgmax = f.get("msgmax")
    if msgmax is not None:
        plan.need("msgmax", "msgmax", msgmax)
    elif "msgmax" not in f._reported:
        plan.default("msgmax", "msgmax", 8192, _msg("default.msgmax"))
    msgmnb = f.get("msgmnb")
    if msgmnb is None and msgmax is not None and _queue_is_the_limit(plan.args, msgmax.value, f.x.text):
        # msgmax raised alone: at msgmnb's default no message of this size fits in a queue, and the
        # send still blocks. "已经 sysctl -w kernel.msgmax=1048576 了，还是卡" was told the article's
        # cause was unlikely to be theirs (trial). Not when some requests go through ("n=1 正常"):
        # then the queue holds the messages, and the hang has another cause.
        from .tools.capacity import DEFAULT_MSGMNB

        plan.default("msgmnb", "msgmnb", DEFAULT_MSGMNB, _msg("default.msgmnb", msgmnb=f"{DEFAULT_MSGMNB:,}"))
    else:
        plan.optional("msgmnb", msgmnb)
    return plan


def _queue_is_the_limit(args: dict, msgmax, text: str) -> bool:
    """Whether msgmnb's default is what still blocks: the message fits the asker's msgmax but not a
    default queue, msgmnb is not named, and no request is said to go through."""
    from .tools.capacity import DEFAULT_MSGMNB, _message_bytes

    if any(k not in args for k in ("mtp", "max_batch", "top_logprobs")):
        return False
    size = _message_bytes(bool(args["mtp"]), int(args["max_batch"]), int(args["top_logprobs"]), int(args.get("mtp_tokens", 6)))
    return DEFAULT_MSGMNB < size <= msgmax and "msgmnb" not in text.lower() and not _WORKS_SOMETIMES.search(text)


# Some logprobs requests work: the IPC carries the messages ("n=1 正常，n=2 就 hang 住").
# A shape of partial success, not any "works": "still doesn't work", "不正常" are no such (review).
_WORKS_SOMETIMES = re.compile(r"\bn\s*=\s*1\b[^。，,.;；\n]{0,12}(?<![不没])(?:正常|works?|fine|ok)"
                              r"|(?:有的|部分|有些|一部分|\bsome (?:requests?|of them|calls?))[^。，,.;；\n]{0,20}"
                              r"(?<![不没])(?:正常|能返回|可以返回|works?|fine|go(?:es)? through|succeed|returns?)", re.I)


# ---------------------------------------------------------------- routing

# torch's OOM message says "total capacity of 79.33 GiB": pasted, it is not a capacity question.
_OOM_MESSAGE_WORDS = re.compile(r"has a total capacity of|tried to allocate", re.I)


def _asks_anything(text: str) -> bool:
    text = _OOM_MESSAGE_WORDS.sub(" ", text)
    return bool(_ASKING.search(text) or _ASK_CONC.search(text) or _ASK_KV.search(text) or _ASK_BYTES.search(text) or _WHAT_IF.search(text))


_FIGURE = re.compile(r"how (?:much|big|large)|多少|多大|(?<!好)几个(?:请求|并发|会话|用户|token)|几路|(?:怎么|如何|帮我|帮忙)计算|计算(?:一下|出|公式)"
                     r"|算一下|算算|估算|(?<![a-z])(?:compute|calculate|estimate)\b(?! capability)"
                     r"|够不够|(?<!不)够吗|够用吗|放得下|装得下|(?<![a-z])enough\b.{0,80}\?")  # not "是 KV block 不够吗", a cause


# Concurrency asked for as a figure ("能并发多少", "how many run at once", "max concurrency"), not
# stated as a load ("5 并发、每个请求 20 张图片", "200 concurrent users, the server never runs
# more than 100"): a stated load with a problem asks for the problem's fix.
_CONC_FIGURE = re.compile(r"how many|多少|(?<!好)几个(?=[^，。；,;.!！\n]{0,30}(?:[?？]|$))|几路|(?:最大|最多|能|可以)(?:同时|并发)|max(?:imum)? concurrency|what concurrency"
                          r"|concurrency (?:can|will|would|do|does)|(?:will|would|does|do|can|could)\b[^.?!\n]{0,40}\bfit\b|\bfits?\b[^.!\n]{0,40}\?"
                          # a load and a card, asked whether one takes the other: "need 50 concurrent 8k
                          # requests, will a single A100 40GB do it?" computed nothing (trial)
                          # (a card named between them: "how can we handle this?" asks for a fix, review)
                          r"|(?:will|would|can|could)\b(?: it\b|[^.?!\n]{0,30}?\b(?:[ahlbtv]\d{1,3}g?s?|h\d{2,3}s?|a6000s?|[1-5]0[5-9]0s?|gpus?|cards?)\b)"
                          r"[^.?!\n]{0,20}?\b(?:do it|handle (?:it|that|this|them|the load)|cope|keep up"
                          r"|take (?:it|that|the load)|hold (?:it|that|them)|sustain (?:it|that|this))\b[^.!\n]{0,20}\?"
                          # "… util 0.95 instead of 0.92: KV tokens and concurrency at 32k?" (trial)
                          r"|\bkv (?:cache )?tokens and concurrency\b[^.!\n]{0,40}\?|\bconcurrency (?:at|for|with) \d[^.!\n]{0,30}\?"
                          # a target load asked whether it fits: "能不能支持 200 并发", "并发 200 能扛住吗",
                          # "can it handle 200 concurrent requests?" computed nothing (trial)
                          r"|(?:能不能|能否|可不可以|可否|是否能|能)(?:支持|扛住?|撑住?|顶住?|跑|带|承受)[^，,。；;？?\n\d]{0,6}\d[\d.]*\s*[万千k]?\s*(?:个|路)?\s*并发"
                          r"|并发\s*(?:数\s*)?\d[\d.]*\s*[万千k]?[^，,。；;\n]{0,8}(?:扛得?住|撑得?住|顶得?住|跑得?动|扛不扛|撑不撑|行不行|能不能|能否)"
                          # (a modal opening its clause, its subject and the verb: "why would vllm run 200
                          # concurrent … so slowly?" and "… hang when we run 200 concurrent" ask why, review)
                          r"|(?:^|[,;:?!，；：？！]\s*|\.\s+|\b(?:and|so|but)\s+)(?:can|could|will|would)\s+(?:it|this|that|vllm|the (?:server|box|node|gpu|card|setup|deployment)"
                          r"|(?:a|an|one|the|my|our)\s+(?:single\s+)?[\w.-]+(?:\s+[\w.-]+)?)\s+(?:handle|serve|support|sustain|take|run|hold)\s+"
                          r"(?:~|about |around |roughly )?\d[\d,.]*k?\+? ?(?:concurrent|simultaneous|parallel)"
                          r"|(?<![\"'=])capacity|容量|能跑几|能撑")


# "Is there a flag to cap how much memory the KV cache may use?", "怎么限制 KV cache 用多少显存":
# how much is the setting's subject, and the asker wants the setting, not a figure.
# Only the verbs that bound an amount: "max_num_seqs 设置多少合适" and "decide how many sequences"
# do ask for a figure.
_SETTING_AMOUNT = re.compile(r"\b(?:cap|capping|limit|limiting|restrict|restricting)\s+how (?:much|many|big|large)"
                             r"|限制[^，,。；;？?！!\n]{0,16}?(?:多少|多大)")


def _pastes_a_crash(question: str) -> bool:
    """Whether the question's pasted lines show the server failing (tools/logs.is_crash_line)."""
    from .questions import might_paste

    if not might_paste(question):
        return False
    from .cleaning import split_question
    from .tools.logs import is_crash_line

    return any(is_crash_line(line) for line in split_question(question[:MAX_CHARS]).errors)


def _asks_for_a_number(text: str) -> bool:
    """Whether the sentences ask for a figure, not only about a case that has sizes in it.
    "What if" words alone do not: "改成 float16 后又报 OOM", "换成 vLLM 之后占到 160G" say what
    was done; a what-if that wants a figure asks for it ("改成 65536，还能并发几个？")."""
    text = _SETTING_AMOUNT.sub(" ", text)
    return bool(_FIGURE.search(text) or _CONC_FIGURE.search(text) or _ASK_KV.search(text) or _ASK_BYTES.search(text)
                or _DECODE.search(text) or _ASK_BLOCKS.search(text))


def _asking(question: str) -> str:
    """The part of a question that can ask for a calculation: its sentences, not what it
    pasted, normalized as `extract` reads text. torch's "has a total capacity of 23.65 GiB"
    and a log's "KV cache usage" are not the asker wanting capacity figures. Split as
    written, before normalizing: `Extraction.text` is one lower-cased line, on which a
    pasted log cannot be told from the sentences around it (a vLLM start-up log pasted alone
    drew a "more numbers needed" block for a calculation nobody asked for)."""
    from .questions import might_paste

    text = question[:MAX_CHARS]
    if might_paste(text):
        from .cleaning import split_question

        parts = split_question(text)
        if parts.pasted or parts.errors:
            text = "\n".join(parts.prose)
    return normalize(_OOM_MESSAGE_WORDS.sub(" ", text))


# The engines whose logs the missing-numbers list points to, and whose arithmetic the weights
# note is (`--tensor-parallel-size`, bf16 unless a format is named).
_LOGGED_ENGINES = frozenset({"vllm", "fastdeploy"})


def _other_engine(text: str, ours: frozenset[str] = frozenset({"fastdeploy"})) -> bool:
    """Whether the question names a serving product, and none of `ours`: the logprobs message
    is FastDeploy's IPC queue (a vLLM user whose logprobs requests hang has another cause),
    and where to read a calculation's missing numbers is said for vLLM and FastDeploy only."""
    from .scope import detect

    products = detect(text).products
    return bool(products) and not ours & set(products)


def _says_gpu_memory(asked: str) -> bool:
    """Whether the asker's own sentences give a GPU's memory ("On an H100 80GB, how many…"),
    not only a pasted error ("GPU 0 has a total capacity of 79.10 GiB", review)."""
    return extract(asked).has("gpu_memory")


def _names_another_gpu(x: Extraction) -> bool:
    """A model to size, or two GPU sizes: the GPU asked about is not the one whose KV cache was logged."""
    return named_model(x.text) is not None or len({q.value for q in x.by_label("gpu_memory")}) > 1


def _logprobs_ruled_out(question: str) -> bool:
    """"我们没开 logprobs，请求还是卡住": the asker says logprobs is off, so its message size is
    no figure to compute (it opened the answer above the article that fits, trial)."""
    from .negation import ruled_out

    return any("logprob" in name.lower() for name in ruled_out(question))


# "有多少 block 不清楚" says the block count is unknown: no question for it. It was routed to
# blocks_needed, which asked back for the concurrency the asker wanted (probe).
_UNKNOWN_AFTER = re.compile(r"\s*(?:也|还)?(?:不清楚|不知道|不确定|不晓得|未知|查不到|看不到)")
_UNKNOWN_BEFORE = re.compile(r"(?:don'?t|do not|not sure|no idea|unsure)(?: (?:know|of|about))? ?$")


def _asks_blocks(text: str) -> bool:
    """Whether the text asks for a number of blocks, not only says it does not know it."""
    return any(not _UNKNOWN_AFTER.match(text, m.end()) and not _UNKNOWN_BEFORE.search(text[max(0, m.start() - 16):m.start()])
               for m in _ASK_BLOCKS.finditer(text))


def route(x: Extraction, facts: _Facts, asked: str) -> str | None:
    """The capacity tool a question asks for, or None when it is not a capacity question.
    `asked` is the part of the question that can ask (see `_asking`)."""
    if (_LOGPROBS.search(x.text) and (_MSG_WORDS.search(x.text) or facts.asked("msgmax") or facts.asked("msgmnb"))
            and not _other_engine(x.text) and not (_logprobs_ruled_out(x.text) and not _asks_for_a_number(asked))):
        return "logprobs_message_size"
    t = asked
    if not t.strip():
        return None  # a log pasted with no sentence around it asks for no figure: vLLM logged its own
    if facts.asked("kv_cache_ratio") or facts.has("prefill_blocks") or _DECODE.search(t):
        return "fastdeploy_decode_budget"
    if _asks_blocks(t) and not _ASK_BYTES.search(t):
        return "blocks_needed"
    shape = any(facts.asked(k) for k in ("num_layers", "num_kv_heads", "head_dim", "kv_lora_rank"))
    logged_tokens = facts.has("kv_cache_tokens") or facts.has("max_concurrency_tokens")  # vLLM's log has the answer's input already
    if _asks_anything(t) and not logged_tokens and (facts.asked("kv_cache_memory") or (
            facts.has("kv_cache_memory") and (_ASK_CONC.search(t) or _ASK_KV.search(t)))):
        return "kv_tokens_from_memory"  # the KV cache's own memory: no GPU size or weights needed
    # "How much memory do 64 sessions of 32k need at 320 KiB per token?": the KV cache a load
    # takes, not what a GPU holds (no GPU size or KV-cache size given).
    if (facts.asked("sessions") and _ASK_MEMORY.search(t)
            and (facts.has("kv_bytes_per_token") or shape or any(facts.asked(k) for k in ("tokens_per_request", "tokens", "max_model_len")))
            and not (facts.has("gpu_memory") or facts.has("kv_cache_memory") or facts.has("weights"))):
        return "kv_memory_needed"
    # Blocks given ("8 块 A100 80G, num_gpu_blocks 2048, block_size 16, avg request 4k") are the
    # KV cache already measured: the GPU's size beside them asked for weights to estimate it again.
    if (facts.has("num_blocks") and _ASK_CONC.search(t) and not facts.has("kv_cache_ratio") and not shape
            and not _WHAT_IF.search(t) and not facts.asked("gpu_memory_utilization")):
        return "kv_concurrency"  # the blocks as they are; a what-if on the memory share changes them (review)
    # A start-up log's "Model loading took 14.2 GiB" is the weights, but its "GPU KV cache
    # size" already holds what they would be used to estimate.
    # A model the shape table knows, on a card of one size or asked at a context length, is a
    # vLLM memory budget: "Qwen2.5-7B on one GPU, max-model-len 32768" asked for FastDeploy's
    # block count; now it asks for the GPU's memory.
    known = (not logged_tokens and not facts.has("num_blocks") and not _FASTDEPLOY.search(x.text)
             and named_model(x.text) is not None)
    # With vLLM's own KV cache size logged, a GPU's size is no reason to estimate it again
    # unless the asker wonders what another size would do: torch's "GPU 0 has a total capacity
    # of 79.10 GiB" in a pasted OOM made an upper bound (30 requests) of the logged 467,920
    # tokens' 28.
    # ... but the one GPU named beside a logged KV cache, with no model to size, is where that cache is:
    # "On an H100 80GB: GPU KV cache size: 458,752 tokens … Can it handle 100 concurrent requests?"
    # asked for the weights (review). Two GPUs named ("this log is from our A10 … on an H100?") ask about the other.
    memory = (facts.asked("gpu_memory") and (not logged_tokens or bool(_WHAT_IF.search(t))
                                             or (_says_gpu_memory(t) and _names_another_gpu(x)))) or (
        facts.asked("weights") and not logged_tokens) or (
        known and (_one_size_card(x.text) is not None or facts.asked("max_model_len") or bool(_ASK_CONC.search(t))))
    if memory and _asks_anything(t):
        return "kv_cache_capacity"
    if _ASK_BYTES.search(t) or (shape and _asks_anything(t)):
        return "kv_bytes_per_token"
    vllm_cache = facts.has("kv_cache_tokens") or facts.has("max_concurrency_tokens")
    if vllm_cache and not facts.has("num_blocks") and (_ASK_CONC.search(t) or _WHAT_IF.search(t) or _ASK_KV.search(t) or facts.asked("max_model_len")):
        return "kv_tokens_concurrency"
    relevant = ("num_blocks", "tokens_per_request", "tokens", "input_tokens", "output_tokens", "max_num_seqs", "block_size",
                "gpu_count", "max_model_len", "sessions")
    if _ASK_CONC.search(t) and any(facts.has(k) for k in relevant):
        return "kv_concurrency"
    return None


_PLANNERS = {"kv_concurrency": _plan_kv_concurrency, "blocks_needed": _plan_blocks_needed, "kv_tokens_concurrency": _plan_kv_tokens,
             "kv_bytes_per_token": _plan_kv_bytes, "fastdeploy_decode_budget": _plan_decode, "logprobs_message_size": _plan_logprobs}


def _pasted_log_apart(question: str, log_numbers: dict[str, float] | None) -> tuple[str, dict[str, float] | None]:
    """The question without its pasted informational log lines, and what those lines log as
    log numbers (as `ask --log` reads them). Read as the asker's own values, a start-up log's
    every figure was a candidate ("[api_server.py:1043]", "took 8.231 seconds"), and its
    `'max_model_len': 32768` clashed with the 65536 the asker wanted to try. Commands and
    error lines stay: `--max-model-len 65536` on a command line is the asker's value."""
    from .questions import might_paste

    if not might_paste(question):
        return question, log_numbers
    from .cleaning import split_question
    from .tools.logs import numbers_in

    logs = set(split_question(question).logs)
    if not logs:
        return question, log_numbers
    kept = "\n".join(line for line in question.splitlines() if line.strip()[:2000] not in logs)
    return kept, {**numbers_in("\n".join(logs)), **(log_numbers or {})}


def capacity_answer(question: str, log_numbers: dict[str, float] | None = None,
                    log_crashed: bool = False) -> CapacityAnswer | None:
    """Read a capacity question (plus numbers from its log) and run the tool it asks for, or say what
    is missing. None when the question is not a capacity question. `log_crashed`: the log given
    beside the question (`ask --log`) shows the server failing."""
    from .questions import FD

    question = FD.sub("FastDeploy", question)  # "FD 起 32k": FastDeploy's logs and defaults
    asked = _asking(question)
    whole = question
    question, log_numbers = _pasted_log_apart(question, log_numbers)
    x = _own_line_labels(extract(question), question)
    facts = _Facts(x, log_numbers, question)
    tool = route(x, facts, asked)
    if tool is None or (not _asks_for_a_number(asked) and (log_crashed or _pastes_a_crash(whole))):
        # A log that states its KV cache size and ends in a CUDA OOM traceback, under "the pod
        # keeps restarting": the concurrency it allows, which nobody asked for, led the answer
        # above the crash (trial). Asked for ("how many requests fit?"), it is still computed.
        return None
    if (tool == "kv_cache_capacity" and _ASKS_SIZING.search(asked) and not _ASK_CONC.search(asked) and named_model(x.text) is not None
            and not facts.has("tensor_parallel_size") and not facts.has("gpu_count")):
        # "Qwen2.5-72B 32k 需要几张 A100 80G": how many GPUs, which one GPU's KV budget does not
        # say; the sizing note (weights_note) counts them, with the context's KV cache.
        return None
    chained = {"kv_cache_capacity": _plan_kv_capacity, "kv_tokens_from_memory": _plan_kv_memory, "kv_memory_needed": _plan_kv_needed}
    plans = chained[tool](facts) if tool in chained else [_PLANNERS[tool](facts)]
    # vLLM named wins: "从 FastDeploy 换到 vLLM" reads vLLM's logs from now on.
    engine = "vllm" if "vllm" in x.text.lower() else "fastdeploy" if _FASTDEPLOY.search(x.text) else ""
    answer = CapacityAnswer(tool, engine=engine)
    if tool == "kv_bytes_per_token" and (x.has("kv_lora_rank") or x.has("qk_rope_head_dim")):
        answer.formula = "kv_bytes_per_token_mla"
    for plan in plans:
        answer.values += [v for v in plan.values if v not in answer.values]
        answer.missing += [m for m in plan.missing if m not in answer.missing]
        answer.notes += plan.notes
        answer.lead += plan.lead
        answer.defaults += plan.defaults
    answer.problems = facts.problems
    answer.notes += facts.notes
    _note_bystanders(x, answer)
    from_table = any(v.source == "model" for v in answer.values)
    if (answer.missing or from_table) and (not _asks_for_a_number(asked) or _other_engine(x.text, _LOGGED_ENGINES)):
        # "4090 24G, MAX_INPUT_LENGTH=8191: is it memory or a wrong setting?" states sizes
        # and asks something, but no figure: a list of what a calculation would need, above
        # the answer, only gets in its way. Where to read the missing numbers is said for
        # vLLM and FastDeploy; LM Studio's or Triton's asker would be sent to the wrong logs.
        return None
    if answer.missing or answer.problems:
        return answer
    from .tools import call_tool

    for plan in plans:
        if plan.tool in chained and answer.calls:
            shape = answer.calls[-1].value  # the kv_bytes_per_token call before it
            per_gpu = shape.bytes_per_token_per_gpu
            if plan.tool == "kv_memory_needed":  # the whole model's, and each GPU's exactly
                plan.args.update(kv_bytes_per_token=shape.bytes_per_token, kv_bytes_per_token_per_gpu=per_gpu)
                answer.values.append(Value("kv_bytes_per_token", shape.bytes_per_token, "derived", "kv_bytes_per_token"))
            else:
                plan.args["kv_bytes_per_token"] = per_gpu
                answer.values.append(Value("kv_bytes_per_token", per_gpu, "derived", "kv_bytes_per_token"))
        call = call_tool(plan.tool, plan.args)
        answer.calls.append(call)
        if call.error:
            answer.error = call.error
            break
    _note_asked_load(answer, facts)
    _note_batch_ceiling(answer, facts)
    return answer


def _note_asked_load(answer: CapacityAnswer, facts: "_Facts") -> None:
    """"Need 50 concurrent 8k requests, will a single A100 40GB do it?" was told 21.5 full-length
    requests fit at once, and the 50 asked about was left to the reader (trial): the load the
    question states is set against the KV cache computed, first among the notes."""
    if answer.error or not answer.calls or answer.tool not in ("kv_cache_capacity", "kv_tokens_concurrency"):
        return
    counts = facts.x.by_label("sessions")
    if len(counts) != 1 or counts[0].value is None or counts[0].problem:
        return
    if _OBSERVED_RUNNING.search(facts.x.text[counts[0].end:counts[0].end + 40]) or _SEEN_BEFORE.search(
            facts.x.text[max(0, counts[0].start - 24):counts[0].start]):
        observed = True  # requests seen running, of whatever length, are no load to fit at the full context (trial 4)
    else:
        observed = False
    call, result = answer.calls[-1], answer.calls[-1].value
    if answer.tool == "kv_cache_capacity":
        tokens, kv = call.arguments.get("max_model_len"), result.kv_tokens
        # Requests as long as the question says, not the context limit: "max-model-len 32768, 100
        # users averaging 2k tokens each" was told 100 × 32,768 does not fit (review).
        lengths = {q.value for q in facts.x.by_label("tokens_per_request") if q.usable}
        if len(lengths) == 1:
            tokens = int(lengths.pop())
        elif facts.x.by_label("tokens_per_request"):
            return
    else:
        tokens, kv = result.tokens_per_request, result.kv_cache_tokens
    if not tokens or not getattr(result, "weights_fit", True):
        return
    fits = kv / int(tokens)
    per_request = int(tokens)
    if answer.tool == "kv_tokens_concurrency":
        # In whole blocks, as its figure above is: "about 455 at once" sat beside "456 … they fit,
        # the KV cache holds up to 458" (review).
        block = int(call.arguments.get("block_size", 16))
        per_request = math.ceil(int(tokens) / block) * block
        fits = (kv // block) / (per_request // block)
    sessions = int(counts[0].value)
    if observed:
        if sessions > fits:  # more run than full-length ones fit: they are shorter, on average at most kv / sessions
            answer.notes.insert(0, _msg("load.observed", sessions=_plain(sessions), tokens=_plain(tokens), kv=_plain(kv),
                                        mean=_plain(math.floor(kv / sessions))))
        return
    need = sessions * per_request
    key = "load.fits" if sessions <= math.floor(fits) else "load.over"
    answer.notes.insert(0, _msg(key, sessions=_plain(sessions), tokens=_plain(tokens), need=_plain(need), kv=_plain(kv),
                                fits=_plain(math.floor(fits))))
    if min(sessions, math.floor(fits)) > _DEFAULT_CEILING["vllm"] and not facts.has("max_num_seqs"):
        answer.lead.append(_msg("ceiling.vllm"))  # held by the KV cache, not all scheduled at once


# A count the asker observed running, not a load asked about: "I regularly see 40 requests running at
# once" against the log's 3.20x was told the 40 "do not fit; the rest wait" (trial 4): they run, shorter.
_OBSERVED_RUNNING = re.compile(r"^\s*(?:concurrent\s+)?(?:requests?|reqs?|seqs?|sequences?)?\s*(?:are\s+|is\s+)?(?:running|in flight|being served)"
                               r"|^\s*(?:个)?(?:请求)?\s*(?:同时)?(?:在跑|在运行|在处理|在执行|跑着)", re.I)
_SEEN_BEFORE = re.compile(r"(?:\bsee|\bseeing|\bsaw|\bobserve[ds]?|\bshows?|\bRunning:|看到|看着|显示|观察到|监控上|实际上?有?)\s*(?:about|around|~|约|大概)?\s*$", re.I)


# The batch ceiling each engine has when nobody sets it (the KB's capacity articles say them).
_DEFAULT_CEILING = {"vllm": 256, "fastdeploy": 8}
# The engine a tool's figures belong to when the question names none.
_ENGINE_OF_TOOL = {"kv_tokens_concurrency": "vllm", "kv_cache_capacity": "vllm", "fastdeploy_decode_budget": "fastdeploy"}


def _note_batch_ceiling(answer: CapacityAnswer, facts: "_Facts") -> None:
    """A concurrency the KV cache allows is not one the server runs: "Qwen2.5-7B on one H100,
    how many concurrent?" was told 262.9 full-length requests at once, where vLLM schedules
    256 unless --max-num-seqs says more, and FastDeploy decodes 8 (trial). Said beside the
    figure when it passes the default and the question sets no ceiling."""
    if answer.error or not answer.calls or facts.has("max_num_seqs"):
        return
    result = answer.calls[-1].value
    fits = next((getattr(result, name) for name in ("concurrent_requests", "max_num_seqs_supported",
                                                      "max_concurrency_at_max_model_len") if getattr(result, name, None) is not None), None)
    engine = _ENGINE_OF_TOOL.get(answer.tool) if answer.engine not in _DEFAULT_CEILING else answer.engine
    if fits is None or engine is None or getattr(result, "limited_by", "kv_cache") != "kv_cache":
        return
    note = _msg(f"ceiling.{engine}")
    if fits > _DEFAULT_CEILING[engine] and note not in answer.lead:
        answer.lead.append(note)  # said under the figure it limits (CapacityAnswer.lead)


# A log line's date and time ("05-12 09:59:01", "2024-05-12T09:59:01.123") are not values to ask about.
_TIMESTAMP = re.compile(r"\b\d{2,4}-\d{1,2}(?:-\d{1,2})?(?:[ t]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?|\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?"
                        # and a log line's source position ("[api_server.py:1043]", "scheduler.cc:212")
                        r"|[\w./-]+\.(?:py|pyx|cc|cpp|cu|cuh|h|hpp|c|go|rs|java|js|ts):\d+")


def _note_bystanders(x: Extraction, answer: CapacityAnswer) -> None:
    """Say which numbers were not used: GPU counts (never blocks), and numbers without a label when
    something is missing (the asker may have meant one of them)."""
    gpus = x.by_label("gpu_count")
    used = {v.value for v in answer.values if v.key == "tensor_parallel_size"}
    if gpus and gpus[0].value not in used:  # "4x A100 … --tensor-parallel-size 4": the 4 is used, as TP
        answer.notes.append(_msg("gpu_count_not_blocks", text=gpus[0].text))
    if answer.missing:
        stamps = [m.span() for m in _TIMESTAMP.finditer(x.text)]
        loose = [q.text for q in x.unbound() if not any(a <= q.start < b for a, b in stamps)][:3]
        if loose:
            answer.notes.append(_msg("unclear_numbers", values=_join(loose)))


def capacity_call(question: str, log_numbers: dict[str, float] | None = None) -> "ToolCall | None":
    """The tool call that answers a capacity question, when every value was there (else None)."""
    answer = capacity_answer(question, log_numbers)
    return answer.call if answer is not None else None


# ---------------------------------------------------------------- the text shown above the KB article

def _shown(value: Value, lang: str) -> str:
    number = value.value if isinstance(value.value, (bool, str)) else _plain(value.value)
    source = t(f"calculations.source.{value.source}", lang, written=value.written) if value.source != "default" \
        else t("calculations.source.default", lang)
    return t("calculations.shown", lang, name=_name(value.key, lang), approx="≈ " if value.approximate else "", number=number, source=source)


def _values_line(values: list[Value], lang: str) -> str:
    return "; ".join(_shown(v, lang) for v in values)


def explain(answer: "CapacityAnswer | ToolCall", lang: str) -> str:
    """Markdown for the answer's top: result, formula with numbers, values used and their sources, and
    notes; or, when something is missing, the formula, what is missing and where to read it."""
    lang = pick_lang(lang)
    if not isinstance(answer, CapacityAnswer):  # a bare ToolCall (e.g. from capacity_call)
        answer = CapacityAnswer(answer.name, [answer])
    h = texts("calculations", lang)
    # What limits or voids the figure is said right under it, not among the notes: "about 1509
    # at once" stood as the answer, with "vLLM schedules 256 by default" five lines below (trial).
    lead = answer.lead if answer.computed else []
    if answer.computed:
        lines = [f"**{h['heading.done']}** ({answer.tool})", ""]
        for call in answer.calls:
            result = call.result
            text = result.get("explanation", {}).get(lang) if isinstance(result.get("explanation"), dict) else None
            if text:
                lines += [text, ""]
            if call is answer.calls[-1]:
                for note in lead:
                    said = note[lang]
                    lines += [f"**{said[:1].upper()}{said[1:]}{'。' if lang == 'zh' else '.'}**", ""]
            formula = result.get(f"formula_{lang}") or result["formula"]  # a tool may give its formula per language
            lines += [f"{h['heading.formula']}`{formula}`", ""]
        if answer.values:
            lines.append(h["heading.values"])
            lines += [f"- {_shown(v, lang)}" for v in answer.values]
    else:
        formula = t(f"calculations.formula.{answer.formula or answer.tool}", lang)
        lines = [f"**{h['heading.missing']}** ({answer.tool})", "", f"{h['heading.formula']}{formula}", ""]
        if answer.error:
            lines.append(answer.error)
        if answer.missing:
            lines.append(h["heading.need"])
            for key in answer.missing:
                where = (answer.engine and _catalog_key("where", f"{key}.{answer.engine}")) or _catalog_key("where", key)
                lines.append(f"- {_name(key, lang)}" + (f" — {t(where, lang)}" if where else ""))
        if answer.problems:
            lines += _after_list(lines, h["heading.ask"])
            lines += [f"- {p[lang]}" for p in answer.problems]
        given = [v for v in answer.values if v.source in ("question", "log")]
        if given:
            lines += _after_list(lines, h["heading.given"] + t("calculations.sep.given", lang).join(
                f"{_name(v.key, lang)} = " + (v.written if v.source == "question" else f"`{v.written}: {_plain(v.value)}`")
                for v in given))
    notes = (answer.defaults if answer.computed else []) + answer.notes
    if notes:
        lines += ["", h["heading.notes"]]
        lines += [f"- {n[lang]}" for n in notes]
    return "\n".join(lines).rstrip()


def _after_list(lines: list[str], line: str) -> list[str]:
    """`line` as its own paragraph: right under a bullet, markdown would read it as the
    bullet's continuation ("… instead Given: tokens per request = 32k")."""
    return ["", line] if lines and lines[-1].startswith("- ") else [line]


# ---------------------------------------------------------------- weights beyond the GPUs

# Bytes per parameter as a question names the weights' format; bf16/fp16 when it names none.
# The KV cache's own dtype says nothing about the weights' ("--kv-cache-dtype fp8").
# GGUF's types need their suffix, or GGUF named in the model's sentence: a bare "Q4" is a
# quarter ("we need it by Q4"). Q5/Q6 GGUF are neither 4 nor 8 bits: no sure bound (review).
_FOUR_BIT = re.compile(r"awq|gptq|int4|4[ -]?bit|w4a16|q4_[a-z0-9_]+|gguf|nf4|bnb|bitsandbytes|exl2|marlin|(?:nv|mx)?fp4")
_SIXTEEN_BIT = re.compile(r"bf16|fp16|bfloat16|float16|16[ -]?bit|half precision")
_EIGHT_BIT = re.compile(r"fp8|int8|8[ -]?bit|w8a8|w8a16|q8_[a-z0-9_]+")
_GGUF_TYPE = re.compile(r"(?<![a-z0-9])q([2-8])(?:_[a-z0-9_]+)?(?![a-z0-9])")
_SENTENCE = re.compile(r"[.?!] |[。？！\n]")
_KV_DTYPE = re.compile(r"kv[-_ ]cache[-_ ]dtype[ =:]*\S*")
# Checkpoints published in FP8 or another format of their own: a size alone says nothing of their bytes.
# R1's distilled models are Qwen and Llama checkpoints in bf16, not R1's own FP8.
_OWN_FORMAT = re.compile(r"deepseek[-_ ]?(?:v3|r1)(?![-_ ]?distill)|671\s*b\b|kimi[-_ ]?k2|gpt[-_ ]?oss")  # 671B: DeepSeek-V3/R1, FP8
# Weights held outside the GPUs: offloaded, split over pipeline stages, or, in the engines that
# run a model across CPU and GPU, placed layer by layer ("--moe_device numa", llama.cpp's
# `-ngl 20` and `--n-cpu-moe`, `-ot exps=CPU`, `device_map="auto"`, 卸载到内存).
_SPREAD = re.compile(r"offload|pipeline[-_ ]parallel|(?<![\w-])-pp\b|swap[-_ ]space|moe[-_ ]?device|(?:n[-_ ])?cpu[-_ ]moe"
                     r"|n[-_ ]gpu[-_ ]layers|(?<![\w-])-ngl\b|override[-_ ]tensors?|(?<![\w-])-ot\b|device_map|卸载(?:到|至)")
# The asker says the model runs on what they have: a generation speed they measured ("Q4_K_M
# gave ~10 tok/s", "只有 3 token/s") or "能跑，但…". The weights are held somewhere, so "more
# than your GPU holds, no setting changes that" is contradicted by the asker (a fastllm user
# running Qwen3-235B on one 4090 with its MoE layers on NUMA nodes was told so, trial). Not a
# speed wanted ("I need 50 tok/s"), a 不能跑, a question ("现在能跑起来了吗", "runs fine?"), nor
# something else that works ("works fine on 4x A100", "the gateway works fine"; review).
_RUNS = re.compile(r"\d\s*(?:tok(?:en)?s?\s*/\s*s(?:ec)?|t/s|tokens?\s+(?:per|a|/)\s*s(?:ec(?:ond)?)?)\b|每秒\s*\d+(?:\.\d+)?\s*(?:个)?\s*tokens?"
                   r"|(?<![不没])(?:能|可以)(?:正常)?(?:跑|运行|推理)(?:起来|通)?了?(?=\s*(?:[，,。.；;]|但|$))(?![^，,。.；;]*[吗么嘛?？])"
                   r"|(?<![不没])跑(?:起来|通)了(?!\s*[吗么嘛?？])"
                   r"|\b(?:it|model)\s+(?:runs|loads)\s+(?:fine|ok|okay|well)\b(?!\s*[?？])(?!\s+(?:on|with|under|in)\b)"
                   r"|\bloads?\s+(?:fine|ok|okay)\b(?!\s*[?？])|\bloaded\s+(?:fine|successfully)\b")
_WANTED = re.compile(r"(?:need|want|target|expect|hope|aim|get to|reach|需要|想要|希望|目标|要求|达到|至少|最少)[^，,。.；;]{0,16}$")
_CLAUSE = re.compile(r"[，,。.；;？?！!\n]")
# Fine-tuning, not serving: "预训练模型" and `from_pretrained` are a checkpoint being loaded.
_TRAINING = re.compile(r"微调|精调|(?<!预)训练|fine[- ]?tun|\bsft\b|q-?lora|\btrain(?:ing)?\b|zero[-_ ]?(?:stage[-_ ]?)?[23]\b|\bfsdp\b")
_ZH_COUNT = re.compile(r"(?<![一两二三四五六七八九十百])([一两二三四五六七八九十]{1,3})\s*(?:张|块)")
_ZH_DIGITS = {c: i for i, c in enumerate("一二三四五六七八九", 1)} | {"两": 2}


def _zh_number(text: str) -> int | None:
    """一 … 九十九 as an int ("十二" is 12, not 2), or None."""
    tens, _, ones = text.partition("十")
    if "十" not in text:
        return _ZH_DIGITS.get(text) if len(text) == 1 else None
    high = _ZH_DIGITS.get(tens, 0 if tens else 1) if len(tens) <= 1 else None
    low = _ZH_DIGITS.get(ones, 0 if not ones else None) if len(ones) <= 1 else None
    return None if high in (None, 0) or low is None else high * 10 + low


# "Qwen2.5-72B 32k 上下文需要几张卡", "how many GPUs for Llama-3.1-70B", "需要多少显存": a sizing
# question that names no GPU. The weights' size is certain; the KV cache's needs the model's shape.
# GPUs named after "on"/"in": "2x a100", "one l4", "a single 4090", "8 h100s", "two gpus".
_ON_GPUS = (r"(?:(?:a|an|one|two|four|eight|single|my|\d+\s*[x×]?)\s+){0,2}(?:nvidia\s+|rtx\s*)?"
            r"(?:[ahlbtv]\d{1,3}g?s?|h\d{2,3}s?|a6000s?|[1-5]0[5-9]0s?|mi\d{3}x?|gpus?|cards?)\b")
# ("几张 80G 的卡": a card's memory between the count and the card; it was read as no sizing
# question, and the weights' floor, 2 cards, said without the 32k context's KV cache; trial)
_COUNT_PATTERN = (r"(?:几|多少)\s*(?:张|块|个|台)?\s*(?:\d+\s*g(?:i?b)?\s*(?:显存)?\s*(?:的)?\s*)?"
                  r"(?:卡|显卡|gpus?\b|[ah]\d{2,3}\b|h20\b|a6000\b|4090\b)"
                  r"|(?:几|多少)\s*(?:张|块)\s*(?=[？?。]|$)"
                  r"|多少\s*显存|显存\s*(?:要|需要)\s*多(?:少|大)"
                  r"|how\s+many\s+(?:gpus?|cards|[ah]\d{2,3}s?|a6000s?|devices)\b|number\s+of\s+gpus"
                  r"|how\s+much\s+(?:gpu\s+)?(?:memory|vram)|what\s+gpus?\s+(?:do|would|should)\s+i\s+need")
# will it fit: "单卡 L40S 跑 Qwen2.5-32B 能起来吗", "will Qwen2.5-72B fit on 2x A100"
_FIT_PATTERN = (r"能(?:不能)?(?:起来|跑起来|跑|放下|装下|部署)(?:吗|[？?])|(?:跑|放|装)得(?:动|起来|下)|够不够|够吗|够用吗"
                r"|\bwill\s+(?:it|this|that|the\s+model|\S+)\s+fit\b|\b(?:does|would)\s+(?:it|this|that)\s+fit\b|enough\s+(?:gpu\s+)?(?:memory|vram)"
                # yes/no, on GPUs: "Can Llama-3.1-70B run on 2x A100 80GB with 32k context?", "…, will it
                # start?"; not "can it run in docker", "will it run slower?" (review)
                rf"|^\s*(?:can|could)\s+(?:i\s+|we\s+)?\S+\s+(?:run|be\s+served|be\s+loaded|fit)\s+(?:on|in)\s+{_ON_GPUS}"
                rf"|^\s*(?:can|could)\s+(?:i|we)\s+(?:run|serve|load|fit)\s+\S+\s+(?:on|in)\s+{_ON_GPUS}"
                r"|\bwill\s+it\s+(?:start|load|run|fit)\s*[?？]?\s*$")
_ASKS_SIZING = re.compile(f"{_COUNT_PATTERN}|{_FIT_PATTERN}")
# How many GPUs or how much memory, in so many words. Whether it fits ("能跑吗", "能起来？") asks
# a count only of GPUs the question names: "这个 hf 版本的 GLM4 到底哪个 vllm 能跑？" asks which
# release supports a model, and "怎么查 NCCL，让 4 卡能起来？" how to start on the four cards it
# has; both were told how many 80, 48 and 24 GB cards the weights take (trial).
_ASKS_COUNT = re.compile(_COUNT_PATTERN)
# The common serving GPUs' classes as sold (GB) and the least memory a card of the class
# reports (GiB): an H100 80GB has 79.6, an L40S 44.5, an A10 22.5.
SIZING_GPUS = ((80, 79), (48, 44), (24, 22))


def _weights_alone(text: str, params: Decimal, weights: Decimal, per_param: Decimal, fmt: str) -> dict[str, str] | None:
    """How many GPUs of each common size the weights alone need, for a sizing question that
    names none: certain as a floor; the KV cache on top needs the model's layers and KV
    heads, which the question does not give, so the note says so instead of guessing."""
    if not _ASKS_COUNT.search(text):
        return None
    least = {gb: _least_gpus(weights, Decimal(gib)) for gb, gib in SIZING_GPUS}
    counts = {"en": ", ".join(f"{n} × {gb} GB" for gb, n in least.items()),
              "zh": "、".join(f"{gb} GB 的卡 {n} 张" for gb, n in least.items())}
    return _msg("weights.size_only", params=_plain(params), weights=f"{weights:.0f}", bytes=_plain(per_param),
                fmt=_msg(f"weights.format_{fmt}"), counts=counts)


def _model_sentence(text: str, start: int, end: int) -> str:
    """The sentence of `text` that holds the span (a model's size)."""
    begin = max((m.end() for m in _SENTENCE.finditer(text, 0, start)), default=0)
    stop = next((m.start() for m in _SENTENCE.finditer(text, end)), len(text))
    return text[begin:stop]


def asks_sizing(question: str) -> bool:
    """Whether a question asks how many GPUs, or how much memory, a model needs."""
    return bool(_ASKS_SIZING.search(normalize(question)))


# A rate of requests ("每秒 200 个 2k 请求", "200 req/s"): how many run at once depends on how long
# each takes, which the question does not say; the sizing beside it is for the requests counted.
# Requests, not tokens: "每秒输出 50 个 token" is a decode speed (review).
_RATE = re.compile(r"(?:每秒|每分钟)(?:钟)?\s*(?:有|来|进来|处理|发|打)?\s*\d*\s*(?:[kK万千])?\s*(?:个|条|次)?\s*(?:\d+\s*[kK]\s*(?:的)?\s*)?(?:请求|调用|query|queries|requests?)"
                   r"|(?:请求|调用)\s*(?:数)?\s*\d*\s*(?:个|条|次)?\s*(?:/|每)\s*(?:秒|分钟)"
                   r"|(?:requests?|reqs?|queries|calls?) ?(?:per|/|a|an|each|every) ?(?:second|sec|s|minute|min)\b|\bqps\b|\brps\b")


def weights_note(question: str) -> dict[str, str] | None:
    """Said above the answer when the weights cannot fit (see `weights_verdict`)."""
    return weights_verdict(question)[0]


def weights_verdict(question: str) -> tuple[dict[str, str] | None, bool]:
    """(the note, whether the asker's GPUs are too small for the weights alone: the fix list
    under the note then offers no setting that only tunes memory, newcomer trial). The note is
    said above the answer when a question names a model size and a GPU that cannot hold its
    weights at all ("Qwen2.5-14B on one A10 24GB, OOM, lowered --gpu-memory-utilization,
    no effect"): no flag the articles offer fixes that, and the fix list read as if one did.
    Only when it is certain: one size, one GPU memory, the weights (parameters × bytes of the
    format the question names, bf16 when none) above the GPUs' whole memory. With no GPU
    count (or one), it says how many such GPUs the weights need at least, rounded up to a
    power of two as tensor-parallel sizes are, which holds whatever the asker has."""
    x = extract(question)
    text = _without_kv_dtype(x.text)
    if _TRAINING.search(text) or _other_engine(x.text, _LOGGED_ENGINES):
        # "Llama-2-70b on one A100 40GB with litgpt?": its manual runs it in 4-bit (bnb.nf4-dq) on
        # one card; "no flag changes that, use --tensor-parallel-size" is vLLM's arithmetic (trial).
        # Fine-tuning holds gradients and optimizer states beside the weights, several times
        # their size: the weights' floor is a server's arithmetic too ("单机 4 张 A10 全量微调
        # internlm2.5-7b" was told one card holds it).
        return None, False
    # The format is the one said with the model, in its sentence: "Our other services all run
    # bf16" after "DeepSeek-R1 671B: how many H200?" is not the model's (review).
    model = next((q for q in x.quantities if q.unit == "params" and q.usable), None)
    said = text if model is None else _model_sentence(text, model.start, model.end)
    gguf_bits = {m.group(1) for m in _GGUF_TYPE.finditer(said) if "gguf" in said or "_" in m.group(0)}
    if gguf_bits - {"4", "8"} or len(gguf_bits) > 1:
        return None, False  # Q5_K_M, Q6_K: between the sizes this note knows
    if gguf_bits == {"8"}:
        said += " 8-bit"  # "GGUF Q8", "q8 gguf", "Q8_0"
    stated = _EIGHT_BIT.search(said) or _FOUR_BIT.search(said) or _SIXTEEN_BIT.search(said)
    if _SPREAD.search(text) or (_OWN_FORMAT.search(text) and not stated):
        return None, False  # offloaded, split over pipeline stages, or a checkpoint of its own format: no sure bound
    if _runs_here(text) and not _ASKS_SIZING.search(text):
        return None, False  # it runs: held in part off the GPUs, or in a format the question does not name
    sizes = {q.value for q in x.quantities if q.unit == "params" and q.usable}
    memories = {q.value for q in x.by_label("gpu_memory") if q.usable}
    if x.by_label("weights"):
        return None, False  # the asker's own figure ("model weights take 9.3 GiB") beats a bf16 guess
    if _kv_cache_was_sized(question):
        return None, False  # the engine loaded the weights and sized its KV cache: they fit (a quantization the question does not name)
    if len(sizes) != 1 or len(memories) > 1:
        return None, False
    # "GPTQ-Int8", "Q8_0 GGUF": the bits named win over a format that is usually 4-bit
    per_param = Decimal(1) if _EIGHT_BIT.search(said) else Decimal("0.5") if _FOUR_BIT.search(said) else Decimal(2)
    fmt = "4bit" if per_param == Decimal("0.5") else "8bit" if per_param == 1 else "16bit"
    quantize = _msg("weights.quantize") if fmt == "16bit" else {lang: "" for lang in LANGS}
    params = sizes.pop()
    model = named_model(x.text)
    if model is not None and abs(model.params_b - params) <= params / 5:
        params = model.params_b  # "Qwen2.5-7B" has 7.61B: the name's 7 left a GiB out of its bf16 weights, and 0.35 of its AWQ ones
    weights = params * Decimal(10**9) * per_param / GIB
    gpu, count = _asker_gpus(x, text, memories)
    sizing = bool(_ASKS_COUNT.search(text) or gpu is not None and _ASKS_SIZING.search(text))
    over = gpu is not None and weights > gpu * (count or 1)  # the GPUs named cannot hold the weights at all
    if sizing and model is not None and (kv := _context_kv(x, model)) is not None:
        # A plan with a context: weights and KV cache per GPU class. Whether the asker's own
        # GPUs can hold the weights still decides the fix list under it ("Can Llama-3.1-70B
        # run on one A100 80GB with 32k context?" listed "lower --max-model-len", review).
        note = _weights_with_kv(x, params, weights, per_param, fmt, model, *kv)
        return _followed(note, _context_over_limit(x), _msg("weights.rate") if _RATE.search(text) else None), over
    if gpu is None:
        return _weights_alone(text, params, weights, per_param, fmt), False
    needed = _least_gpus(weights, gpu)
    values = dict(params=_plain(params), weights=f"{weights:.0f}", gpu=_gib(gpu), needed=needed, bytes=_plain(per_param),
                  fmt=_msg(f"weights.format_{fmt}"), quantize=quantize)
    if not over:
        if not sizing:
            return None, False
        # "ERNIE-4.5-21B-A3B bf16 跑 32k 需要几张卡？A800 80G": a model the table does not know
        # got an OOM article and no figure (trial). The weights' floor is sure; the KV cache is not.
        floor = _msg("weights.fit_floor", **{**values, "needed": _least_gpus(weights, gpu * DEFAULT_UTILIZATION)})
        on_top = _msg("weights.kv_on_top")
        return {lang: floor[lang] + on_top[lang] for lang in LANGS}, False
    note = _msg("weights.need_gpus", **values) if count is None or count == 1 else _msg(
        "weights.do_not_fit", count=count, total=_gib(gpu * count), **values)
    if sizing:  # "需要几张 A100 80G" for 128k: the weights' count is only the floor
        on_top = _msg("weights.kv_on_top")
        note = {lang: note[lang] + on_top[lang] for lang in LANGS}
    return note, True


def _runs_here(text: str) -> bool:
    """Whether the asker says the model runs, in a clause that names no other engine: "the same
    model runs fine under ollama", "vllm 加载 OOM，ollama 能跑" are a 4-bit build elsewhere, and
    vLLM's bf16 weights still do not fit (review). A speed asked for is no speed measured."""
    for m in _RUNS.finditer(text):
        begin = max((c.end() for c in _CLAUSE.finditer(text, 0, m.start())), default=0)
        end = next((c.start() for c in _CLAUSE.finditer(text, m.end())), len(text))
        clause = text[begin:end]
        if _WANTED.search(text[begin:m.start()]) or _other_engine(clause, _LOGGED_ENGINES):
            continue
        return True
    return False


def _asker_gpus(x: Extraction, text: str, memories: set[Decimal]) -> tuple[Decimal | None, int | None]:
    """(one GPU's memory in GiB, how many) as the question names them: the memory given (the
    card's real figure when it is sold by a round one), else a card sold in one size ("需要几张
    H200"); the count from the tensor-parallel size the extraction read (--tensor-parallel-size,
    -tp), else a count ("4x A100"), else one written in Chinese numerals (十二张)."""
    if memories:
        memory = next(iter(memories))
        card = card_memory(x.text, memory)
        gpu = (card[1] if card else memory) / GIB
    else:
        named = _one_size_card(x.text)
        gpu = named[1] / GIB if named is not None else None
    tp = {q.value for q in x.by_label("tensor_parallel_size") if q.usable}
    counts = {q.value for q in x.by_label("gpu_count") if q.usable} | {int(m.group(1)) for m in _COUNT_BEFORE_SIZE.finditer(text)}
    zh = {_zh_number(m.group(1)) for m in _ZH_COUNT.finditer(text)} - {None}
    count = next((int(s.pop()) for s in (tp, counts, zh) if len(s) == 1), None)
    return gpu, count


# A count with each card's memory between it and the card: "4 张 24G 卡", "4 x 24GB GPUs" (the
# count was not read, and a 13B model that DJL split over two of the four cards was said not to
# fit its one card, trial).
_COUNT_BEFORE_SIZE = re.compile(r"(?<![\d.])(\d{1,2})\s*(?:张|块|x|×)\s*\d+\s*g(?:i?b)?\s*(?:显存)?\s*(?:的)?\s*(?:卡|显卡|gpus?\b|cards?\b)")


# Figures only a server that has loaded its weights prints: its KV cache's size, or what a
# request needs beyond it ("12.00 GiB KV cache is needed, which is larger than the available
# KV cache memory (2.1 GiB)" on a 4090 that a bf16 count of "Qwen2.5-32B" says cannot hold it).
_KV_SIZED = ("kv_cache_tokens", "kv_cache_memory_gib", "max_concurrency_tokens", "num_gpu_blocks", "num_blocks_global",
             "total_block_num", "kv_cache_max_len", "kv_needed_gib", "kv_available_gib")


def _kv_cache_was_sized(question: str) -> bool:
    low = question.lower()
    if "kv cache" not in low and "blocks" not in low and "block_num" not in low:
        return False  # no KV-cache figure can be there: the log's patterns need not run
    from .tools.logs import numbers_in

    numbers = numbers_in(question)
    return any(name in numbers for name in _KV_SIZED)


def _kv_dtype_bytes(x: Extraction) -> int:
    """Bytes per KV element: 1 with an fp8/int8 --kv-cache-dtype, else 2 (vLLM's auto keeps bf16)."""
    said = x.kv_cache_dtype or _kv_dtype_in_words(x.text)  # the flag, or "fp8 KV cache" in words (it was bf16's 320 KiB)
    return 1 if said and "8" in said else 2


def _context_kv(x: Extraction, model: ModelShape) -> tuple[int, int, Decimal] | None:
    """(tokens per request, requests, KV GiB) for a sizing question that states one context
    length ("128k context", "max-model-len 32768") of a model the table knows, at the KV
    dtype the question sets (bf16, vLLM's auto, when none)."""
    lengths = {q.value for q in x.by_label("max_model_len") + x.by_label("tokens_per_request") if q.usable}
    sessions = {q.value for q in x.by_label("sessions") if q.usable}
    if len(lengths) != 1 or len(sessions) > 1:
        return None
    tokens, requests = int(lengths.pop()), int(sessions.pop()) if sessions else 1
    kv = Decimal(model.kv_bytes_per_token(_kv_dtype_bytes(x))) * tokens * requests / GIB
    return tokens, requests, kv


def _weights_with_kv(x: Extraction, params: Decimal, weights: Decimal, per_param: Decimal, fmt: str, model: ModelShape,
                     tokens: int, requests: int, kv: Decimal) -> dict[str, str]:
    """The sizing answer when the model's shape is known: weights plus the KV cache of the
    stated context, and the least GPUs of each common size that hold both at the memory share
    vLLM uses. Only a floor: nothing is counted for activations, so the real count can only be
    higher; a named card is counted on its own."""
    named = _one_size_card(x.text)
    memories = {q.value for q in x.by_label("gpu_memory") if q.usable}
    sizes = [(named[0].upper(), named[1] / GIB)] if named else (
        [(f"{_gib(m / GIB)} GiB", m / GIB) for m in memories] if len(memories) == 1 else [(f"{gb} GB", Decimal(gib)) for gb, gib in SIZING_GPUS])
    total = weights + kv
    # vLLM uses gpu_memory_utilization of each GPU (0.9 unless set): two A100 80G hold 144 GiB,
    # not 160, and "at least 2" for 145 GiB could not start (trial).
    shares = {q.value for q in x.by_label("gpu_memory_utilization") if q.usable and 0 < q.value <= 1}
    util = shares.pop() if len(shares) == 1 else DEFAULT_UTILIZATION
    counts = {"en": ", ".join(f"{_least_gpus(total, gib * util)} × {name}" for name, gib in sizes),
              "zh": "、".join(f"{name} 的卡 {_least_gpus(total, gib * util)} 张" for name, gib in sizes)}
    per_token = model.kv_bytes_per_token(_kv_dtype_bytes(x))
    return _msg("weights.with_kv", params=_plain(params), weights=f"{weights:.0f}", bytes=_plain(per_param),
                fmt=_msg(f"weights.format_{fmt}"), model=model.name, tokens=f"{tokens:,}",
                requests={"zh": str(requests), "en": "one request" if requests == 1 else f"{requests} requests"},
                per_token=f"{per_token / 1024:g}", kv=_gib(kv), total=_gib(total), counts=counts, util=_plain(util))


def _followed(note: dict[str, str], *extras: dict[str, str] | None) -> dict[str, str]:
    """The note with each further sentence after it, in each language."""
    for extra in extras:
        if extra is not None:
            note = {lang: f"{note[lang]}{'。' if lang == 'zh' else '. '}{extra[lang]}" for lang in LANGS}
    return note


def _least_gpus(weights: Decimal, gpu: Decimal) -> int:
    """How many GPUs of `gpu` GiB the weights need at least, as a tensor-parallel size: a power of two."""
    return 1 << max(0, math.ceil(math.log2(weights / gpu)))


def _gib(value: Decimal) -> str:
    """A memory size in GiB to one decimal, without a trailing .0 (24, 22.5)."""
    return f"{value:.1f}".removesuffix(".0")
