"""Checking a question, and starting its embedding early.

Both run before the heavy modules are imported: `ask` validates the question and starts
embedding it in a thread (the model runs in C without the GIL) and only then imports
retrieval and loads the index, so a cold start pays for the two side by side.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from oncall_common.errors import BadQuestion, QuestionTooLarge

# Retrieval and scope read at most this much of a question (or a question plus its log
# lines): past it, a pasted log only adds noise and time.
MAX_QUERY_CHARS = 8000


# FastDeploy as its users write it ("FD 起 32k 的服务，最多并发多少", trial); "ulimit fd" and
# "open fds" are file descriptors, in lower case.
FD = re.compile(r"(?<![A-Za-z0-9_$-])FD(?![A-Za-z0-9_=-])")


def query_text(question: str) -> str:
    """What retrieval reads (embedded, and tokenised for keywords): the question's prose and
    error lines (pasted code, config and command lines are left out, see cleaning.py), cut to
    what e5 reads. "FD" is searched as the FastDeploy the KB writes: "FD 起 --max-model-len 32768，
    最多能并发多少" got a vLLM article the word "FastDeploy" did not."""
    if not might_paste(question):
        return FD.sub("FastDeploy", question[:2000])
    from .cleaning import retrieval_text

    return FD.sub("FastDeploy", retrieval_text(question)[:2000])


# The programs cleaning._INLINE_COMMAND cuts out of a sentence, as plain substrings: a cheap
# test that keeps the cleaner unimported for ordinary one-line questions.
_INLINE_COMMAND_HINTS = (" -m ", "vllm serve ", "docker run ", "docker compose ", "docker-compose ", "torchrun ",
                         "llamafactory-cli ", "lmdeploy serve ", "CUDA_VISIBLE_DEVICES=")


def might_paste(question: str) -> bool:
    """Whether a question can hold pasted lines at all. A one-line question is read whole
    (a lone pasted line *is* the question), so the cleaner is not even imported for it,
    unless it holds a command line: after its sentence ("temperature is ignored. Server:
    python3 -m vllm… --max-model-len 32768"), or before the asker's words ("vllm serve …
    --tensor-parallel-size 4 OOM", whose flags outweighed its one word; trial)."""
    text = question.strip()
    return "\n" in text or any(hint in text for hint in _INLINE_COMMAND_HINTS)


def validate_question(question: str, max_bytes: int) -> str:
    """Reject what cannot be a question, with a message a person can act on."""
    if not isinstance(question, str):
        raise BadQuestion("the question must be text", "send the question as a string")
    if "\x1b" in question:  # a coloured terminal capture
        from .names import ANSI_CODE

        question = ANSI_CODE.sub("", question)
    text = question.strip()
    if not text:
        raise BadQuestion("the question is empty", 'ask something, e.g. "why are requests stuck?"')
    size = len(text.encode("utf-8", errors="replace"))
    if size > max_bytes:
        raise QuestionTooLarge(
            f"the question is {size} bytes; the limit is {max_bytes}",
            "paste only the relevant log lines, and send the log separately: `ask --log FILE` reads a whole log; over HTTP the `log` "
            "field takes its tail, within the request body limit (max_body_bytes, 64 kB by default)",
        )
    control = sum(1 for ch in text if (ord(ch) < 32 and ch not in "\n\r\t") or ch == "\ufffd")
    if "\x00" in text or control > max(2, 0.05 * len(text)):
        raise BadQuestion("the input looks like binary data, not a question", "paste text, not a binary file")
    scripts = _letter_scripts(text)
    if scripts:
        raise BadQuestion(f"the input does not read as text in any language (its letters come from {scripts} writing systems)",
                          "ask in Chinese or English; paste log lines as they were printed")
    return text


# One writing system, one count: Japanese writes kanji, hiragana, katakana and their marks
# (a review found an ordinary Japanese question refused as six "systems"); Korean, Hangul and hanja.
_SCRIPT_FAMILY = {name: "CJK" for name in ("CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "IDEOGRAPHIC", "HANGUL",
                                           "HALFWIDTH", "BOPOMOFO")}
NOISE_MIN_LETTERS = 20
NOISE_MIN_SCRIPTS = 6  # a Japanese question mixes four (kanji, hiragana, katakana, Latin); noise mixes dozens
NOISE_TOP_SHARE = 0.5


def _letter_scripts(text: str) -> int:
    """How many writing systems the letters of text mix when that many, none of them leading,
    say it is noise (0 otherwise). 300 random Unicode characters (Ethiopic, Tibetan, Mongolian,
    unassigned code points…) were answered with the CUDA OOM article, tentative (newcomer),
    as if they were a question. A question's letters are mostly of one or two systems."""
    if text.isascii():
        return 0
    import unicodedata
    from collections import Counter

    counts: Counter[str] = Counter()
    for ch in unicodedata.normalize("NFKC", text):  # full-width ＧＰＵ is Latin
        if ch.isascii():
            if ch.isalpha():
                counts["LATIN"] += 1
        elif unicodedata.category(ch) == "Cn":
            counts["UNASSIGNED"] += 1
        elif ch.isalpha() and unicodedata.category(ch) != "Lm":  # not a modifier letter (ー, 々 read as letters)
            script = unicodedata.name(ch, "").split(" ")[0]
            counts[_SCRIPT_FAMILY.get(script, script)] += 1
    letters = sum(counts.values())
    if letters < NOISE_MIN_LETTERS or len(counts) < NOISE_MIN_SCRIPTS or counts.most_common(1)[0][1] >= NOISE_TOP_SHARE * letters:
        return 0
    return len(counts)


class Background:
    """Run one call in a thread and hand back its result or exception."""

    def __init__(self, fn, *args) -> None:
        import threading

        self._value = None
        self._error: BaseException | None = None
        self.started = time.perf_counter()  # a caller's total counts from here when it waited for this
        self._thread = threading.Thread(target=self._run, args=(fn, *args), daemon=True)
        self._thread.start()

    def _run(self, fn, *args) -> None:
        started = time.perf_counter()
        try:
            self._value = fn(*args)
        except BaseException as exc:  # re-raised in the caller's thread
            self._error = exc
        self.elapsed_ms = (time.perf_counter() - started) * 1000

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


@dataclass
class EarlyEmbedding:
    """An embedding of `text` already under way."""

    text: str
    pending: Background

    @classmethod
    def start(cls, settings, text: str) -> "EarlyEmbedding":
        def embed():
            # Imported here, in the thread: numpy and the model load overlap the caller's work.
            from ingest.embedders import get_embedder

            embedder = get_embedder(settings.embedder, threads=settings.embed_threads,
                                    base_url=settings.embed_base_url, api_key=settings.embed_api_key)
            return embedder.embed_queries([text])

        return cls(text, Background(embed))

    def for_text(self, text: str) -> Background | None:
        """The pending result if it was started for this exact text (a log changes the query)."""
        return self.pending if text == self.text else None


# The engine's own figures, quoted in a question ("the stats line only shows Running: 3 reqs,
# Pending: 0"): nothing waits, and the KV cache, where given, is far from full.
# Said in prose as often: "pending 0 个", "KV cache 使用率才 20%", "KV 用了 12%" (trial).
# (Strings: compiled by `re` on first use, not at `ask`'s import.)
_QUEUE = r"(?i)\b(?:waiting|pending|queued?)\s*[:=]?\s*(\d+)(?!\s*(?:%|s\b|ms\b|秒|分钟))"
_KV_USAGE = (r"(?i)kv[ _-]?(?:cache|缓存)?\s*(?:usage|使用率|占用率?|利用率|用了|占了|用量)\s*(?:只有|才|一直在|一直|大概|约|就|是|:|=)*\s*"
             r"(\d+(?:\.\d+)?)\s*%")
QUIET_KV_PCT = 50.0


def quiet_stats(text: str) -> bool:
    """Whether the engine figures a text quotes show a server with nothing queued and, where
    the KV cache's use is given, at most QUIET_KV_PCT of it in use: a question that says so has ruled
    out a full KV cache or a long queue itself. "stalls at ~100 concurrent requests, but the
    vllm stats line only shows Running: 3 reqs, Pending: 0" was answered, as sure, with the
    hung-requests article's KV-cache levers (trial)."""
    queues = [int(m.group(1)) for m in re.finditer(_QUEUE, text)]
    usage = [float(m.group(1)) for m in re.finditer(_KV_USAGE, text)]
    return bool(queues or usage) and not any(queues) and all(u <= QUIET_KV_PCT for u in usage) and not _stats_trouble(text)


def _stats_trouble(text: str) -> bool:
    from .tools.logs import STATS_TROUBLE

    return bool(STATS_TROUBLE.search(text))


@dataclass(frozen=True)
class Tail:
    """What `tail_within` kept of a long input: its last whole lines (or, when one line alone
    is too long, that line's end), how big the input was, and how much was kept."""

    text: str
    whole_bytes: int
    lines: int  # 0 when `text` is the end of one long line
    chars: int
    head_lines: int = 0  # opening lines kept too (`head_and_tail`)


def tail_within(text: str, max_bytes: int, total: int = 0) -> Tail | None:
    """The last whole lines of `text` that fit in `max_bytes`, where a pasted log's error
    usually is; None when it fits as it is. `total`: the input's size when `text` is already
    its end. Shared by `ask -` and the chat adapters: a 10 kB log pasted into Slack was refused
    as too large while `ask -` answered it (trial)."""
    if len(text.strip().encode("utf-8")) <= max_bytes:
        return None
    whole = max(total, len(text.encode("utf-8")))
    kept: list[str] = []
    size = 0
    lines = text.strip().splitlines()
    for line in reversed(lines):
        cost = len(line.encode("utf-8")) + 1
        if size + cost > max_bytes:
            break
        kept.append(line)
        size += cost
    if not kept:
        # One line longer than the limit (a paragraph pasted without breaks): its end, cut at
        # a character boundary, rather than nothing.
        end = lines[-1].encode("utf-8")[-max_bytes:].decode("utf-8", errors="ignore")
        return Tail(end, whole, 0, len(end))
    body = "\n".join(reversed(kept))
    return Tail(body, whole, len(kept), len(body))


def head_and_tail(text: str, max_bytes: int) -> Tail | None:
    """A chat message over the limit: its opening prose (up to a quarter of the room; the
    asker's words above a pasted log) and its last whole lines, a code fence reopened when the
    cut falls inside one. The tail alone kept a log's closing fence, not its opening one, so
    the question after the log was read as code and ignored (review). None when it fits."""
    if len(text.strip().encode("utf-8")) <= max_bytes:
        return None
    from .cleaning import split_question

    lines = text.strip().splitlines()
    head: list[str] = []
    size = 0
    for line in lines:
        cost = len(line.encode("utf-8")) + 1
        # only the asker's words: an unfenced log's first INFO lines pushed its traceback out (review)
        if line.lstrip().startswith("```") or size + cost > max_bytes // 4 or not split_question(line).prose:
            break
        head.append(line)
        size += cost
    rest = lines[len(head):]
    room = max_bytes - size - 4
    tail = tail_within("\n".join(rest), room)
    # tail_within measures the text stripped: an indented rest that "fits" so still must be cut (review)
    kept = tail.text.splitlines() if tail is not None else "\n".join(rest).strip().splitlines()
    if tail is None:
        tail = Tail("\n".join(kept), len(text.encode("utf-8")), len(kept), 0)
    before = rest[:len(rest) - len(kept)] if tail.lines else rest
    if sum(line.lstrip().startswith("```") for line in before) % 2:
        kept = ["```", *kept]  # the cut fell inside a fenced block
    body = "\n".join(head + kept)
    return Tail(body, max(tail.whole_bytes, len(text.encode("utf-8"))), tail.lines, len(body), len(head))
