"""Grounded answers from an OpenAI-compatible chat endpoint, with tool calls.

The endpoint may be the very vLLM that is failing, so every call has a connect and a total
time limit, and any failure (down, slow, HTTP 500, garbage) raises `LLMError`; the caller
then answers from the KB with a one-line note. Small models handle tools badly (loops,
echoes, malformed arguments), so the tool loop is bounded, arguments are validated against
the schema with the error fed back, identical repeated calls are refused, and the assistant
message beside tool calls carries "" rather than null (some servers reject null).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit, urlunsplit

from . import i18n
from .config import Settings
from .names import setting_key
from oncall_common.errors import AssistantError
from oncall_common.lang import PASTED_FLAG, PASTED_PATH, detect_lang, is_cjk

class LLMError(AssistantError):
    """The LLM could not give a usable answer; the message says why in one line.

    `tool_calls` keeps the calls made before the failure: their results are still facts.
    """

    tool_calls: list = []


@dataclass
class LLMResult:
    text: str
    model: str
    citations: list  # the passages cited, in the order of their [n] in text
    tool_calls: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    covered: bool = True  # False: the model found that the passages do not answer the question
    unverified: bool = False  # it shows a flag or variable that no passage holds (streamed before it was checked)


# The first line the model is told to write when the passages do not answer the question
# (i18n llm.system_prompt). Retrieval decides from scores; the model has read the passages,
# so its "not covered" turns a grounded answer into a refusal.
NOT_COVERED = "[NOT IN KB]"


_MARK_LEAD = " \t\r\n*_`"  # what may come before the mark: space, markdown emphasis, code quotes
_MARK_TAIL = " \t\r\n*_`:："  # ... and after it


def strip_not_covered(text: str) -> tuple[str, bool]:
    """(the text without the not-covered mark, whether the text opened with it)."""
    head = text.lstrip(_MARK_LEAD)
    if head.upper().startswith(NOT_COVERED):
        return head[len(NOT_COVERED):].lstrip(_MARK_TAIL), True
    return text, False


_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_THINK = re.compile(r"^\s*<think>.*?(?:</think>\s*|$)", re.S)


def strip_reasoning(text: str) -> str:
    """The reply without a leading reasoning block: a model served without a reasoning parser
    (Qwen3, DeepSeek-R1) sends `<think>…</think>` first, and it reached the user, "I am not
    sure" and all (trial). An unclosed block is all reasoning. Templates that open the block
    in the prompt (R1 distills, QwQ) send only its end: all before a `</think>` that no
    `<think>` opened is reasoning too (review), as vLLM's deepseek_r1 parser reads it."""
    if text.lstrip().startswith(_THINK_OPEN):
        return _THINK.sub("", text, count=1)
    close = text.find(_THINK_CLOSE)
    if close >= 0 and _THINK_OPEN not in text[:close]:
        return text[close + len(_THINK_CLOSE):].lstrip()
    return text


# Models whose chat template opens the reasoning block in the prompt (R1 distills, QwQ, the
# "-Thinking" releases): served without a reasoning parser, they stream the reasoning with no
# `<think>` before it, only a `</think>` after.
_REASONING_MODEL = re.compile(r"(?i)(?:^|[-_/ .:])(?:(?:r1|qwq|think|thinking|reasoning|reasoner)(?=$|[-_/ .:])|distill)")


class _DropThink:
    """Streams tokens through, holding back a leading `<think>…</think>` block. For a model
    whose template opens the block itself (`template_opens`), everything is held until its
    `</think>`, or, when none comes, until the end: its reasoning streamed to the asker, and
    was dropped only from the final answer (review)."""

    def __init__(self, emit: Callable[[str], None], template_opens: bool = False) -> None:
        self.emit, self.head, self.state = emit, "", "start"  # start → (thinking | held →) open
        self.template_opens = template_opens
        self.scanned = 0  # how much of a held head was searched for the closing tag

    def __call__(self, delta: str) -> None:
        if self.state == "open":
            self.emit(delta)
            return
        self.head += delta
        if self.state == "start":
            lead = self.head.lstrip()
            if lead.startswith(_THINK_OPEN):
                self.state = "thinking"
            elif len(lead) >= len(_THINK_OPEN) or not _THINK_OPEN.startswith(lead):
                if not self.template_opens:
                    self.state, rest, self.head = "open", self.head, ""
                    self.emit(rest)
                    return
                self.state = "held"
        if self.state == "thinking":
            # Only the tail can hold the closing tag: the reasoning itself is thrown away as it
            # comes, so a long one costs no more than a short one (review: it was quadratic).
            if _THINK_CLOSE in self.head:
                rest = self.head.split(_THINK_CLOSE, 1)[1].lstrip()
                self.state, self.head = "open", ""
                if rest:
                    self.emit(rest)
            else:
                self.head = self.head[-len(_THINK_CLOSE):]
        elif self.state == "held":
            # Kept whole (it is the answer if no tag comes), searched only where new text is.
            at = self.head.find(_THINK_CLOSE, max(0, self.scanned - len(_THINK_CLOSE)))
            self.scanned = len(self.head)
            if at >= 0:
                rest = self.head[at + len(_THINK_CLOSE):].lstrip()
                self.state, self.head = "open", ""
                if rest:
                    self.emit(rest)

    def parsed_reasoning(self) -> None:
        """The server's reasoning parser sent the reasoning apart: stop holding for a tag."""
        self.template_opens = False
        if self.state == "held":
            self.state, held, self.head = "open", self.head, ""
            if held:
                self.emit(held)

    def flush(self) -> None:
        if self.state in ("start", "held") and self.head:
            self.emit(self.head)
        self.state, self.head = "open", ""


class _HoldMark:
    """Streams one turn's tokens through, except that the first few are held until it is
    clear whether the reply opens with the not-covered mark; the mark, and the space or
    colon after it, never reach the user."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
        self.head = ""
        self.open = False
        self.after_mark = False  # still dropping what follows the mark

    def __call__(self, delta: str) -> None:
        if self.open:
            if self.after_mark:
                delta = delta.lstrip(_MARK_TAIL)
                self.after_mark = not delta
            if delta:
                self.emit(delta)
            return
        self.head += delta
        start = self.head.lstrip(_MARK_LEAD).upper()
        if len(start) >= len(NOT_COVERED) or not NOT_COVERED.startswith(start):
            self.flush()

    def flush(self) -> None:
        if not self.open:
            self.open = True
            rest, marked = strip_not_covered(self.head)
            self.after_mark = marked and not rest
            if rest:
                self.emit(rest)


log = logging.getLogger(__name__)


def redact_url(url: str) -> str:
    """The URL without user:password or query values, for logs: the LLM's address may carry
    credentials in either (`?api_key=…`, `?key=…` on some gateways)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if "@" in parts.netloc:
        parts = parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1])
    if parts.query:
        parts = parts._replace(query="&".join(f"{pair.split('=', 1)[0]}=***" for pair in parts.query.split("&") if pair))
    if parts.fragment:
        parts = parts._replace(fragment="***")
    return urlunsplit(parts)


def _client(settings: Settings):
    import openai

    return openai.OpenAI(
        base_url=settings.llm_base_url.rstrip("/"),
        api_key=settings.llm_api_key or "not-needed",
        timeout=openai.Timeout(settings.llm_timeout, connect=settings.llm_connect_timeout),
        max_retries=0,
    )


def _explain(exc: Exception, settings: Settings, waited_for_first: bool) -> str:
    """One line for the person asking. It never names the endpoint: answers and notes go to
    HTTP and Slack clients, and the URL may carry credentials. The log gets the redacted URL."""
    import openai

    log.warning("LLM call to %s failed: %s", redact_url(settings.llm_base_url), type(exc).__name__)
    if isinstance(exc, openai.APITimeoutError):
        if waited_for_first:
            silence = min(settings.llm_first_token_timeout, settings.llm_timeout)
            return f"the LLM did not answer in time (nothing within {silence:g} s)"
        return "the LLM did not answer in time"
    if isinstance(exc, openai.APIConnectionError):
        return "the LLM is unreachable"
    if isinstance(exc, openai.APIStatusError):
        return f"the LLM returned HTTP {exc.status_code}"
    return "the LLM's reply could not be used"  # the exception's name is for the log, not for the asker (trial)


def resolve_model(client, settings: Settings) -> str:
    if settings.llm_model:
        return settings.llm_model
    models = client.models.list(timeout=_budget(settings, settings.llm_first_token_timeout))
    first = next(iter(models), None)
    if first is None:
        raise LLMError("the LLM serves no model", "set ASSISTANT_LLM_MODEL")
    return first.id


def _budget(settings: Settings, remaining: float):
    """Time limits for one request: connect, then at most llm_first_token_timeout of silence
    (waiting for the first chunk, or between chunks), all within what is left of the answer."""
    import openai

    remaining = max(0.5, remaining)
    silence = min(settings.llm_first_token_timeout, remaining)
    return openai.Timeout(remaining, connect=min(settings.llm_connect_timeout, remaining), read=silence)


def passages_for(kb, retrieval, lang: str, limit: int) -> list:
    """The evidence the model sees: key sections of the top articles, in the asker's language."""
    out = []
    order = ("causes", "fixes", "checks", "signatures", "symptoms", "other")
    for art in retrieval.articles[:3]:
        langs = kb.article_langs(art.doc_id)
        chunks = kb.article_chunks(art.doc_id, lang if lang in langs else (langs[0] if langs else lang))
        ranked = sorted((c for c in chunks if c.kind != "question"), key=lambda c: order.index(c.kind) if c.kind in order else 9)
        take = 3 if not out else 2
        out.extend(ranked[:take])
    return out[:limit]


def build_messages(question: str, passages: list, lang: str, grounded: bool, context: str = "") -> list[dict]:
    numbered = "\n\n".join(f"[{i}] {c.title}\n{c.text}" for i, c in enumerate(passages, 1))
    user = f"Passages:\n\n{numbered}\n\n"
    if not grounded:
        user += i18n.t("llm.no_cover", lang) + "\n\n"
    if context:
        user += f"{context}\n\n"
    user += f"Question: {question}"
    return [{"role": "system", "content": i18n.t("llm.system_prompt", lang)}, {"role": "user", "content": user}]


CITATION_REF = re.compile(r"\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\]")  # bounded: int() of 5,000 digits raises
_SPACE_BEFORE_PUNCT = re.compile(r"(?<! ) +([.,;。，；])")


# Code in an answer: a fenced block (to its end, or the answer's if cut) or an inline span.
# Its `outputs[1]` is an index, and its " ." (`docker cp x:/a .`) a command's argument.
_CODE_SPAN = re.compile(r"```.*?(?:```|$)|`[^`\n]+`", re.S)


def _prose_parts(text: str) -> list[tuple[str, bool]]:
    """`text` cut into (part, is_code) in order."""
    parts: list[tuple[str, bool]] = []
    last = 0
    for m in _CODE_SPAN.finditer(text):
        parts += [(text[last:m.start()], False), (m.group(0), True)]
        last = m.end()
    return parts + [(text[last:], False)]


def _is_index(part: str, m: re.Match) -> bool:
    """Whether `[n]` in code is an index (`outputs[1]`, `x[0][2]`, `f()[3]`), not a citation
    (" [3]" after a space, which a stray backtick may have pulled into a "code span")."""
    return m.start() > 0 and (part[m.start() - 1].isalnum() or part[m.start() - 1] in "_])")


def _prose_refs(text: str) -> list[re.Match]:
    return [m for part, code in _prose_parts(text) for m in CITATION_REF.finditer(part) if not (code and _is_index(part, m))]


def fix_citations(text: str, passages: list, keep_numbers: bool = False) -> tuple[str, list]:
    """Renumber [n] by first use, drop numbers that match no passage, and return the cited
    passages in that order, so the JSON citations always agree with the text. Code is left as
    written: its `[1]` is an index (a review found `outputs[1]` renumbered).

    `keep_numbers`, for an answer the user has already seen streamed: its [n] stay as they
    were shown, and the citations are the passages up to the highest one cited, so [3] is
    still the third (numbers that match no passage are dropped all the same)."""
    mapping: dict[int, int] = {}
    refs = _prose_refs(text)
    for m in refs:
        for n in (int(x) for x in m.group(1).split(",")):
            if 1 <= n <= len(passages) and n not in mapping:
                mapping[n] = len(mapping) + 1
    if keep_numbers:
        mapping = {n: n for n in mapping}

    def repl(m: re.Match) -> str:
        kept = [f"[{mapping[int(x)]}]" for x in m.group(1).split(",") if int(x) in mapping]
        return "".join(dict.fromkeys(kept))

    def rewrite(src: str) -> str:
        # (?<! ) starts a match only at the first space of a run: without it a long run of
        # spaces is rescanned from every position (quadratic).
        return "".join(CITATION_REF.sub(lambda m, p=part: m.group(0) if _is_index(p, m) else repl(m), part) if code
                       else _SPACE_BEFORE_PUNCT.sub(r"\1", CITATION_REF.sub(repl, part)) for part, code in _prose_parts(src))

    if keep_numbers:
        shown_as_is = all(int(x) in mapping for m in refs for x in m.group(1).split(","))
        fixed = text if shown_as_is else rewrite(text)
        return fixed.strip(), list(passages[:max(mapping, default=0)])
    return rewrite(text).strip(), [passages[n - 1] for n in mapping]


# A sentence ends at ASCII punctuation followed by space ("kernel.msgmax" and "0.9" do not
# end one), or at Chinese punctuation, which needs no space after it.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")


def _sentences(line: str) -> list[tuple[str, str]]:
    """(sentence, the space after it) for each sentence of one line."""
    out: list[tuple[str, str]] = []
    last = 0
    for m in _SENTENCE_END.finditer(line):
        if m.end() == len(line) and m.start() == m.end():
            break  # the zero-width end after a final 。
        if m.start() == last and not m.group(0):
            continue
        out.append((line[last:m.start()], m.group(0)))
        last = m.end()
    if last < len(line):
        out.append((line[last:], ""))
    return out


def _drop_sentences(text: str, drop: Callable[[str], bool]) -> tuple[str, int]:
    """`text` without the sentences `drop` picks, and how many went; a line left empty goes too."""
    dropped = 0
    lines = []
    for line in text.split("\n"):
        kept: list[str] = []
        for sentence, space in _sentences(line):
            if drop(sentence):
                dropped += 1
                continue
            kept += [sentence, space]
        rebuilt = "".join(kept).rstrip()
        if _LIST_MARKER.fullmatch(rebuilt) and dropped:
            continue  # "1. Run --foo now." without its sentence: not a bare "1."
        if rebuilt or not line.strip():
            lines.append(rebuilt if rebuilt else line)
    return "\n".join(lines), dropped


_LIST_MARKER = re.compile(r"\s*(?:\d{1,3}[.)、]|[-*+•])\s*")


def drop_unsupported(text: str, n_passages: int) -> tuple[str, int]:
    """The answer without its sentences whose every citation points at no passage, and how
    many went. Renumbering alone left "Set --foo-bar 7 to fix it [9]." as an uncited
    statement of fact; a sentence that cites a real passage too, or nothing, stays."""
    def unsupported(sentence: str) -> bool:
        # ([0] is never a citation: `outputs[0]` in a code line deleted the line; review)
        numbers = [n for m in CITATION_REF.finditer(sentence) for n in map(int, m.group(1).split(",")) if n]
        return bool(numbers) and not any(1 <= n <= n_passages for n in numbers)

    # Code's indexes are no citations: masked while sentences are judged line by line (a
    # fenced block's lines are judged one by one, out of their fence). The mask character is
    # taken out of the text first: one already there would have come back as "[" (review).
    text = text.replace(_MASK, "")
    masked = "".join(CITATION_REF.sub(lambda m, p=part: _MASK + m.group(0)[1:] if _is_index(p, m) else m.group(0), part)
                     if code else part for part, code in _prose_parts(text))
    kept, dropped = _drop_sentences(masked, unsupported)
    return kept.replace(_MASK, "["), dropped


_MASK = "\ue000"  # a private-use character no answer holds


# A command-line flag, an environment variable or a config key named in an answer
# ("--enable-prefix-caching", "export NCCL_P2P_DISABLE=1", "set VLLM_KV_TURBO to 1",
# `kv_turbo_mode: true`): the exact strings an on-call engineer types, so the ones to check.
# An upper-case name counts where it is set or read, in words too ("set the environment
# variable X to 1", "把环境变量 `X` 设成 1", `X=`, `export X`, `$X`, `ENV X`, `- name: X`), and
# anywhere when it has an engine's or a library's prefix (VLLM_, FD_, NCCL_…): error codes
# (RESOURCE_EXHAUSTED, CUDA_ERROR_OUT_OF_MEMORY) are quoted, not typed (review). A snake_case
# name counts where it is set: `x: value`, `x=…`, "set x", "打开 x" (trial: only `--x`, `X=`
# and `export X` were checked); a name merely mentioned ("per logprobs_message_size, …") or
# a code block's variables are not (review). (ASCII boundaries: a Chinese character beside a
# name is no part of it; backticks and ** around a name are its markup.)
_UPPER = r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![A-Za-z0-9_])"
_Q = r"[`*]{0,2}"  # markup around a name
_SET_AFTER = rf"(?={_Q}(?: ?[=:] ?| to [\w\"'`]| ?(?:设成|设为|设置为|设置成|改成|改为|调成|调为)))"
_ENV_PREFIX = r"(?:VLLM|FD|FLAGS|NCCL|HF|HUGGINGFACE|PYTORCH|TORCH|OMP|MKL|TRANSFORMERS|SGLANG|LMDEPLOY|TGI|OLLAMA|RAY|GLOO|UCX|NVIDIA|TRITON|XLA|PADDLE)_(?!ERROR)"
_FLAG_NAME = r"(?<![A-Za-z0-9_-])--[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*"
_SETTING_NAME = re.compile(_FLAG_NAME +
                           r"|(?:(?<=export )|(?<=\$)|(?<=\$\{)|(?<=ENV )|(?<=name: )|(?<=environ\[.)|(?<=getenv\(.)"
                           rf"|(?<=variable )|(?<=variable `)|(?<=var )|(?<=var `)|(?<=环境变量 )|(?<=环境变量)|(?<=环境变量 `)|(?<=环境变量`)){_UPPER}"
                           rf"|(?<![A-Za-z0-9_.$-]){_UPPER}{_SET_AFTER}"
                           rf"|(?<![A-Za-z0-9_.$-]){_ENV_PREFIX}[A-Z0-9]+(?:_[A-Z0-9]+)*(?![A-Za-z0-9_])"
                           r"|(?:(?<=set )|(?<=set `)|(?<=enable )|(?<=enable `)|(?<=打开)|(?<=打开 )|(?<=打开 `)|(?<=开启)|(?<=开启 )"
                           r"|(?<=开启 `)|(?<=把 )|(?<=把 `))[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![A-Za-z0-9_/(]|\.[A-Za-z])"
                           rf"|(?<![A-Za-z0-9_./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![A-Za-z0-9_/(]|\.[A-Za-z]){_SET_AFTER}")
_FENCED = re.compile(r"```.*?(?:```|$)", re.S)
_FLAGS_ONLY = re.compile(_FLAG_NAME)
_WORD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*")


def invented_settings(text: str, known: str) -> list[str]:
    """The flags and environment variables `text` sets that `known` (the prompt: question,
    passages, tool results) never writes as a word of its own, in either spelling
    (--max-model-len, max_model_len). A real citation on a made-up flag ("start FastDeploy
    with --enable-logprobs-ipc-bypass=true [2]") passed every other check and read as the
    KB's fix. Whole names are compared: "--tp" is not known from "http"."""
    words = _WORD_NAME.findall(known)
    seen = {setting_key(w) for w in words} | {setting_key(part) for w in words if "." in w for part in w.split(".")}
    out: list[str] = []
    # A code block's own names (its variables, its calls) are code, not settings told to set;
    # its flags are checked as before.
    prose = _FENCED.sub(lambda b: " ".join(_FLAGS_ONLY.findall(b.group(0))), text)
    for m in _SETTING_NAME.finditer(prose):
        name = m.group(0)
        if setting_key(name) not in seen and name not in out:
            out.append(name)
    return out


# A figure as a word of its own: 54, 1,096,384, 0.95, 95%, and with its unit (96GB, 12k, 80 GiB).
# Parts of names are none (H100, v0.8.0, Llama-3.1-8B), nor are times and dates (10:05, 05-12).
# Chinese characters around it are no part of a name: "跑540个请求", "设为0.97即可" and "96GB 显存"
# were passed on as the KB's, cited (trial), since `\w` counts them as letters.
_FIGURE_UNIT = r"(?:\s?(?:GiB|GB|Gi|MiB|MB|Mi|KiB|KB|Ki|TiB|TB|Ti|ms|[kKMGTgx万])(?![A-Za-z0-9_]))?"
_FIGURE = re.compile(r"(?<![A-Za-z0-9_.:/-])\d{1,3}(?:,\d{3})+(?:\.\d+)?" + _FIGURE_UNIT + r"(?![A-Za-z0-9_:/-]|\.\d)"
                     r"|(?<![A-Za-z0-9_.,:/-])\d+(?:\.\d+)?" + _FIGURE_UNIT + r"(?![A-Za-z0-9_:/-]|[.,]\d)")
_SCALED = {"k": (1000, 1024), "K": (1000, 1024), "M": (1_000_000, 1_048_576), "万": (10_000,)}


def _figure(token: str) -> float:
    """The number of a figure, its unit left aside (96GB is 96, as a passage's "96 GB" is)."""
    return float(re.match(r"[\d,.]*\d", token).group(0).replace(",", ""))


def _figure_values(token: str) -> set[float]:
    """The values a figure may stand for: 12k is 12, 12,000 or 12,288; 2万 20,000."""
    v = _figure(token)
    return {v} | {v * f for f in _SCALED.get(token.rstrip()[-1:], ())}


def _rounded_from(token: str, seen: set[float]) -> bool:
    """Whether a figure in k or M is a known value rounded to that unit: 45k for 45,232, 1.1M
    for 1,096,384 (review: both were taken for inventions)."""
    scale = _SCALED.get(token.rstrip()[-1:])
    if not scale:
        return False
    v = _figure(token)
    decimals = len(token.split(".", 1)[1].rstrip("kKM万 ")) if "." in token else 0
    step = 10 ** -decimals
    return any(abs(x / f - v) <= step / 2 + 1e-9 for x in seen if x >= 1 for f in scale)


_ANY_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
# A number written in thousands groups is one value: its "096" is no 96 (review: "1,096,384"
# in a passage backed an invented "96 GB"). Only a whole run: "8192,16384" and the
# "1,2,4,…,256,512" of a list are items (a second review: their items became unbacked), and a
# run of three-digit items ("64,128,256,512") may be either, so its items count too, but for
# the ones with a leading zero.
_GROUPED = re.compile(r"(?<![0-9,.])[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?(?![0-9,])")


def _known_figures(known: str) -> set[float]:
    values: set[float] = set()
    # Figures as words, and any run of digits inside a name or version: "since vLLM 0.8" is
    # backed by a passage's "v0.8.0", "80 GB" by "A100-80GB".
    grouped = _GROUPED.findall(known)
    items = [item for run in grouped for item in re.split(r"[,.]", run) if not item.startswith("0")]
    tokens = [m.group(0) for m in _FIGURE.finditer(known)] + grouped + items + _ANY_NUMBER.findall(_GROUPED.sub(" ", known))
    for token in tokens:
        for v in _figure_values(token):  # the question's "32k" backs the answer's 32768
        # as the answer may round it, or say a share as a percentage
            if not math.isfinite(v):
                continue  # a run of 309 digits is no figure (it overflowed to inf)
            values |= {v, float(round(v)), float(math.floor(v)), round(v, 1), round(v, 2), round(v * 100, 2), round(v / 100, 4)}
    return values


def invented_figures(text: str, known: str) -> list[str]:
    """The figures `text` states that nothing in `known` (the prompt: question, passages,
    the calculation, tool results) holds, rounded or as a percentage. A fake endpoint that
    said "about 540 requests of 20,000 tokens run at once" where the calculation gave 54 was
    passed to the user, cited (trial): a wrong number is worse than none. Small whole numbers
    (steps, "2 GPUs") are left alone; the model may count."""
    seen = _known_figures(known)
    out: list[str] = []
    for m in _FIGURE.finditer(text):
        token = m.group(0)
        v = _figure(token)
        if (v >= 10 or v != int(v)) and not (_figure_values(token) & seen) and not _rounded_from(token, seen) and token not in out:
            out.append(token)
    return out


def drop_sentences_with_figures(text: str, figures: list[str]) -> tuple[str, int]:
    """The answer without its sentences that state any of `figures`, and how many went."""
    return _drop_sentences(text, lambda sentence: any(m.group(0) in figures for m in _FIGURE.finditer(sentence)))


def drop_sentences_naming(text: str, names: list[str]) -> tuple[str, int]:
    """The answer without its sentences that name any of `names`, and how many went."""
    return _drop_sentences(text, lambda sentence: any(m.group(0) in names for m in _SETTING_NAME.finditer(sentence)))


def llm_reachable(settings: Settings) -> bool:
    """Whether the LLM endpoint answers `/models` as an OpenAI-compatible server does (a JSON
    object with a `data` list): any 200 counted before, binary garbage included."""
    import urllib.request

    req = urllib.request.Request(settings.llm_base_url.rstrip("/") + "/models")
    if settings.llm_api_key:
        req.add_header("Authorization", f"Bearer {settings.llm_api_key}")
    try:
        with urllib.request.urlopen(req, timeout=min(2.0, settings.llm_connect_timeout)) as resp:
            if resp.status != 200:
                return False
            body = json.loads(resp.read(1_000_000).decode("utf-8"))
        return isinstance(body, dict) and isinstance(body.get("data"), list)
    except Exception:
        return False


def _refused_at_once(base_url: str) -> None:
    """Raise "unreachable" when nothing listens at the endpoint's address, before the
    openai client is imported (0.75 s): an LLM that is down cost every answer 1.2 s. Only a
    refused connection counts; anything slower or less certain (a timeout, DNS, a proxy in
    the environment) is left to the client, which reports it as before."""
    import os
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")):
        return
    try:
        url = urlsplit(base_url.strip())
        host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return
    if not host:
        return
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except ConnectionRefusedError:
        log.warning("LLM call to %s failed: %s", redact_url(base_url), "connection refused")
        raise LLMError("the LLM is unreachable") from None
    except OSError:
        return


# Longer than any answer the prompt asks for: the extractive answer's bound is 3,000.
MAX_LLM_ANSWER_CHARS = 8000


def looks_like_garbage(text: str, prompt: str) -> str | None:
    """Why an answer is unusable, or None. Catches what small models were seen to do."""
    stripped = text.strip()
    if len(stripped) < 8:
        return "the LLM returned an empty answer"
    if sum(ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\t\r") for ch in stripped) > 0.02 * len(stripped):
        return "the LLM returned unreadable text"
    if len(stripped) > MAX_LLM_ANSWER_CHARS:
        return f"the LLM's answer ran to {len(stripped):,} characters"  # a loop or a dump, not an answer (trial: 100 kB passed)
    words = stripped.split()
    if len(words) >= 40 and len(set(words)) / len(words) < 0.2:
        return "the LLM answer repeats itself"
    cjk = [ch for ch in stripped if is_cjk(ch)]
    if len(cjk) >= 200:
        # Chinese has no spaces to count words by: four-character runs say it ("显存不够。"
        # three thousand times passed; trial).
        joined = "".join(cjk)
        grams = [joined[i:i + 4] for i in range(0, len(joined) - 3)]
        if len(set(grams)) / len(grams) < 0.2:
            return "the LLM answer repeats itself"
    if len(stripped) >= 200 and stripped[:200] in prompt:
        return "the LLM echoed its prompt"
    if len(stripped) < 240 and not CITATION_REF.search(stripped) and _NON_ANSWER.search(stripped):
        return "the LLM gave no answer (it said it does not know)"  # the KB's own answer is better than none
    return None


# A reply that answers nothing: "I don't know.", "抱歉，我无法回答". Only short and uncited
# ones count; a grounded answer may well say "I am not sure which of these applies [1]".
_NON_ANSWER = re.compile(r"\b(?:i (?:do not|don['’]?t) know|i(?:['’]m| am) not sure|i cannot (?:answer|help)|i can['’]t (?:answer|help)"
                         r"|no (?:relevant )?information|unable to (?:answer|help|determine))\b"
                         r"|不知道|不清楚|无法回答|不能回答|没有相关信息|没有提到|无法确定", re.I)


@dataclass
class _Turn:
    content: str
    tool_calls: list[dict]  # {"id", "name", "arguments"}
    finish_reason: str | None = None  # "stop", "length", "tool_calls"; None when the stream never said


def _complete(client, model: str, messages: list, tools: list | None, on_token: Callable[[str], None] | None,
              deadline: float, settings: Settings, chunks_seen: list[int]) -> _Turn:
    """One chat request, always streamed: a streaming endpoint shows it is alive with its
    first chunk, so a hung one is given up after llm_first_token_timeout while a slow one that
    keeps sending may use the whole budget. The whole call ends by `deadline`."""
    kwargs: dict = {"model": model, "messages": messages, "temperature": 0.1, "stream": True,
                    "timeout": _budget(settings, deadline - time.monotonic())}
    if tools:
        kwargs["tools"] = tools
    parts: list[str] = []
    calls: dict[int, dict] = {}
    finish = None
    stream = client.chat.completions.create(**kwargs)
    try:
        for chunk in stream:
            chunks_seen[0] += 1
            if time.monotonic() > deadline:
                raise LLMError(f"the LLM did not finish within {settings.llm_timeout:g} s")
            if not chunk.choices:
                continue
            finish = getattr(chunk.choices[0], "finish_reason", None) or finish
            delta = chunk.choices[0].delta
            if delta is None:
                continue
            if on_token is not None and (getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)):
                # A reasoning parser splits the reasoning out already: no `</think>` will come in
                # the content, so nothing is held for it (review: streaming stopped for R1 served so).
                getattr(on_token, "parsed_reasoning", lambda: None)()
            if delta.content:
                parts.append(delta.content)
                if on_token is not None:
                    on_token(delta.content)
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index or 0, {"id": "", "name": "", "arguments": ""})
                if tc.id:
                    slot["id"] = tc.id
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
    finally:
        stream.close()
    ordered = [dict(v, id=v["id"] or f"call_{k}") for k, v in sorted(calls.items()) if v["name"]]
    return _Turn("".join(parts), ordered, finish)


def llm_answer(
    question: str,
    retrieval,
    kb,
    settings: Settings,
    lang: str,
    *,
    use_tools: bool = True,
    context: str = "",
    on_token: Callable[[str], None] | None = None,
    on_tool: Callable[[str], None] | None = None,
) -> LLMResult:
    """Ask the LLM; raise LLMError with a one-line reason when no usable answer comes back.

    The model is offered the tools the current caller may use (see tools.acting_for): all of
    them on the CLI, only the remote-safe ones, under the same checks, for HTTP and Slack."""
    from .tools import ToolCall, available, current_caller

    if not re.match(r"^https?://[^/\s]", settings.llm_base_url.strip()):
        # "not a url" read as "the LLM is unreachable", which sent people to check the server.
        raise LLMError("the LLM base URL (llm_base_url / ASSISTANT_LLM_BASE_URL) is not an http(s) URL",
                       "set it like http://127.0.0.1:8000/v1, in the config file or the environment, wherever it was set")
    _refused_at_once(settings.llm_base_url)
    try:
        import openai
    except ImportError as exc:  # a broken install, not a user error
        raise LLMError("the openai package is missing", "pip install openai") from exc
    caller = current_caller()
    deadline = time.monotonic() + settings.llm_timeout
    passages = passages_for(kb, retrieval, lang, settings.llm_passages)
    from .refusal import tentative

    # A close call is told to the model as it is told to the asker: the passages may not answer.
    messages = build_messages(question, passages, lang, retrieval.grounded and not tentative(retrieval), context)
    tools = [t.openai_schema(caller) for t in available(caller).values()] if use_tools else None
    records: list[ToolCall] = []
    seen: dict[str, object] = {}
    notes: list[str] = []
    chunks_seen = [0]  # in the current request: none when it fails means the endpoint sent nothing
    try:
        client = _client(settings)
        model = resolve_model(client, settings)
        turn = None
        for step in range(settings.llm_max_tool_steps + 1):
            if time.monotonic() > deadline:
                raise LLMError(f"the LLM did not finish within {settings.llm_timeout:g} s")
            offer = tools if (tools and step < settings.llm_max_tool_steps) else None
            chunks_seen[0] = 0
            held = _HoldMark(on_token) if on_token is not None else None  # each turn may open with the mark
            thinking = _DropThink(held, bool(_REASONING_MODEL.search(model))) if held is not None else None  # … after any reasoning block
            turn = _complete(client, model, messages, offer, thinking, deadline, settings, chunks_seen)
            if thinking is not None:
                thinking.flush()
                held.flush()
            if not turn.tool_calls:
                break
            if offer is None:  # tools were not offered but the model called one anyway
                if not (turn.content or "").strip():
                    raise LLMError("the LLM kept calling tools and never answered")
                notes.append("the LLM kept calling tools after the step limit; its last text is used")
                break
            messages.append({"role": "assistant", "content": turn.content or "",
                             "tool_calls": [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"] or "{}"}} for c in turn.tool_calls]})
            for c in turn.tool_calls:
                payload = _tool_turn(c, tools, seen, records, notes, settings, deadline, caller, on_tool)
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": json.dumps(payload, ensure_ascii=False, default=str)[:12000]})
    except LLMError as exc:
        exc.tool_calls = [r.to_dict() for r in records]
        raise
    except openai.OpenAIError as exc:
        raise _failed(_explain(exc, settings, waited_for_first=chunks_seen[0] == 0), records) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # malformed responses
        log.warning("malformed response from the LLM at %s", redact_url(settings.llm_base_url), exc_info=exc)
        raise _failed("the LLM sent a malformed response", records) from exc  # the exception's name is in the log line
    if turn is not None and not turn.content and not turn.tool_calls and chunks_seen[0] == 0:
        # A 200 whose body holds no stream events at all (a truncated JSON object, an HTML
        # page from a proxy) is not an empty answer: the endpoint speaks something else.
        raise _failed("the LLM's response was not an OpenAI-compatible stream (no events arrived)", records)
    if turn is not None and turn.content and not turn.tool_calls and _cut_off(turn):
        # "… [1]. Apply" was shown as the whole answer, with no note (trial): a reply stopped at
        # the model's length limit, or a stream that closed mid-sentence, is no answer.
        raise _failed("the LLM's answer was cut off before it finished", records)
    return _result(turn.content if turn else "", messages, passages, lang, model, records, notes, streamed=on_token is not None)


_ENDS_WHOLE = re.compile(r"(?:[.!?。！？)）\]】`*_:：\"'”’»]|\[\d{1,2}\])\s*$")
# A last line that is no sentence ends where it ends: a list item, a table row, a command, a
# URL, a code fence (review: complete answers ending in a list were taken for cut off).
_WHOLE_LINE = re.compile(r"^\s*(?:[-*+•]\s|\d{1,3}[.)、]\s?|\||```|>|\$ |sysctl |export |vllm |python |pip |docker |kubectl )|https?://")
_NORMAL_ENDS = frozenset({"stop", "tool_calls", "function_call", "eos_token", "stop_sequence", "eos", "end_turn"})
_BROKEN_ENDS = frozenset({"length", "abort", "error", "repetition", "content_filter", "cancelled"})


def _cut_off(turn: _Turn) -> bool:
    """Stopped at the length limit or aborted (vLLM's "abort", "error", "repetition": the
    endpoint may be the vLLM that is failing), or a stream that never said why it ended and
    stops mid-sentence (a server that leaves out finish_reason but ends its sentences is believed)."""
    reason = (turn.finish_reason or "").lower()
    if reason in _BROKEN_ENDS:
        return True
    if reason in _NORMAL_ENDS:
        return False
    last = turn.content.rstrip().rsplit("\n", 1)[-1]
    if _WHOLE_LINE.search(last) or (last and unicodedata.category(last[-1]) == "So"):
        return False
    return not _ENDS_WHOLE.search(turn.content)


def _tool_turn(c: dict, tools: list | None, seen: dict, records: list, notes: list[str], settings: Settings, deadline: float,
               caller, on_tool: Callable[[str], None] | None) -> dict:
    """Run one tool call the model asked for (a repeat of an earlier one is refused with its
    result), and return what the model is told."""
    from .tools import call_tool

    key = f"{c['name']}:{_canonical(c['arguments'])}"
    if key in seen:
        notes.append(f"refused a repeated call to {_shown_name(c['name'], tools)}")
        return {"error": "this exact call was already made; use its result instead of calling again", "earlier_result": seen[key]}
    remaining = max(1.0, min(settings.tool_timeout, deadline - time.monotonic()))
    record = call_tool(c["name"], c["arguments"], timeout=remaining, caller=caller)
    records.append(record)
    payload = {"error": record.error} if record.error else {"result": record.result}
    seen[key] = payload
    if on_tool:
        shown = _shown_name(record.name, tools)
        if shown != record.name:  # invented: neither its name nor its error (which repeats it) is echoed
            on_tool(f"→ {shown}: refused ({record.ms:.0f} ms)")
        else:
            on_tool(f"→ {shown}({json.dumps(record.arguments, ensure_ascii=False)[:120]}) "
                    f"{'error: ' + record.error if record.error else 'ok'} ({record.ms:.0f} ms)")
    return payload


def _unbacked(text: str, found: list[str], drop: Callable[[str, list[str]], tuple[str, int]], keys: tuple[str, str], lang: str,
              streamed: bool, notes: list[str], prompt_text: str, records: list) -> tuple[str, bool]:
    """`text` without the sentences naming `found` (settings or figures nothing backs), with a
    note; a streamed answer keeps them, flagged. Returns the text and whether it was flagged."""
    if not found:
        return text, False
    names = ", ".join(found[:4])
    if streamed:
        # On screen already, so flagged there; left out of the final answer too, which a page
        # shows in its place and feedback keeps, as an uncited sentence is (trial) — unless
        # nothing usable is left: then it stays, flagged, rather than fail as "empty" (review).
        notes.append(i18n.t(keys[0], lang, names=names))
        kept, _gone = drop(text, found)
        return (text if looks_like_garbage(kept, prompt_text) else kept), True
    text, gone = drop(text, found)
    notes.append(i18n.t(keys[1], lang, n=gone, names=names))
    why = looks_like_garbage(text, prompt_text)
    if why:
        raise _failed(why, records)
    return text, False


@functools.lru_cache(maxsize=1)
def _tool_words() -> str:
    """The tools' names and parameters: the model may name the tool it called ("per
    logprobs_message_size, one message is 133,136 bytes"); that sentence was deleted (review)."""
    from .tools import registry

    return " ".join(f"{name} {' '.join(t.parameters.get('properties', {}))}" for name, t in registry().items())


def _result(content: str, messages: list, passages: list, lang: str, model: str, records: list, notes: list[str],
            streamed: bool = False) -> LLMResult:
    """The model's last reply as an answer: checked for garbage, citations renumbered to the
    passages, and its "not covered" mark turned into `covered=False`."""
    text, judged_out = strip_not_covered(strip_reasoning(content))
    if judged_out and not text.strip():
        text = i18n.t("llm.judged_not_covered", lang)
    prompt_text = "\n".join(str(m.get("content", "")) for m in messages)
    why = looks_like_garbage(text, prompt_text)
    if why:
        raise _failed(why, records)
    supported, unsupported = drop_unsupported(text, len(passages))
    if unsupported:
        # A streamed answer is on screen already: flagged there, and left out of the final
        # answer, which a page shows in its place ("…[2]. Also reboot the moon." stayed in it,
        # its "[9]" gone, reading as backed: newcomer).
        notes.append(i18n.t("llm.uncited_shown" if streamed else "llm.dropped_uncited", lang, n=unsupported))
        text = supported
        why = looks_like_garbage(text, prompt_text)
        if why:
            raise _failed(why, records)
    # A flag or a figure nothing given to the model holds: dropped with its sentence, or, on
    # screen already, flagged and the answer is no sure match.
    known = prompt_text + "\n" + json.dumps([r.to_dict() for r in records], ensure_ascii=False)
    text, made_up_setting = _unbacked(text, invented_settings(text, known + "\n" + _tool_words()), drop_sentences_naming,
                                      ("llm.invented_shown", "llm.dropped_invented"), lang, streamed, notes, prompt_text, records)
    text, made_up_figure = _unbacked(text, invented_figures(text, known), drop_sentences_with_figures,
                                     ("llm.invented_figures_shown", "llm.dropped_invented_figures"), lang, streamed, notes,
                                     prompt_text, records)
    unverified = made_up_setting or made_up_figure
    fixed, cited = fix_citations(text, passages, keep_numbers=streamed)
    if not cited and passages and not judged_out and not any(r.error is None for r in records):
        # An answer that cites nothing cannot be checked against the KB; listing every
        # passage under it made unrelated articles look like its sources. (One drawn from
        # a tool's result, a capacity figure or a host probe, has that result to stand on.)
        raise _failed("the LLM answer cites no passage", records)
    if _other_language(fixed, lang):
        # The asker reads one of the two languages; the KB answers in it (the zh/en twin).
        raise _failed(f"the LLM answered in {'English' if lang == 'zh' else 'Chinese'}, not the asker's language", records)
    if judged_out:
        notes.append("the LLM found that the KB's passages do not answer this question; no fix is offered")
    return LLMResult(fixed, model, cited, [r.to_dict() for r in records], notes, covered=not judged_out, unverified=unverified)


_LANG_SAMPLE = 4000
# What detect_lang sets aside as pasted (flags with their values, paths), and URLs and snake_case names.
_PASTED_IN_LINE = re.compile(rf"https?://\S+|{PASTED_FLAG}|{PASTED_PATH}|\b\w+(?:_\w+)+\b")


def _other_language(text: str, lang: str) -> bool:
    """Whether an answer is written in the other language: for a Chinese asker, not one
    Chinese character outside code (commands and flags alone read as English); for an
    English one, mostly Chinese."""
    prose = re.sub(r"```.*?```|`[^`\n]*`", " ", text[:_LANG_SAMPLE], flags=re.S)  # a sample: the language shows early
    if lang == "zh":
        # Mostly English, even with a Chinese title quoted in it ("the passage titled 原因 [1]"
        # passed as Chinese; trial): a Chinese character for every four English words at least.
        if not any(is_cjk(ch) for ch in prose):
            return len(prose.split()) >= 4
        # Counted on the lines that hold Chinese, flags, paths and URLs set aside: a quoted
        # English log line, or a command, in a Chinese answer is pasted, not written (review).
        lines = [_PASTED_IN_LINE.sub(" ", line) for line in prose.split("\n") if any(is_cjk(ch) for ch in line)]
        words = sum(len(re.findall(r"[A-Za-z]{2,}", line)) for line in lines)
        cjk = sum(1 for line in lines for ch in line if is_cjk(ch))
        return words >= 12 and cjk < 0.25 * words
    return detect_lang(prose, particles=False) == "zh"  # an English answer may quote a lone 了 (review)


def _shown_name(name: str, tools: list | None) -> str:
    """A tool name fit for a note: one the model invented is not echoed to the user."""
    offered = {t["function"]["name"] for t in tools or []}
    return name if name in offered else "an unknown tool"


def _failed(message: str, records: list) -> LLMError:
    error = LLMError(message)
    error.tool_calls = [r.to_dict() for r in records]
    return error


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except ValueError:
        return arguments.strip()
