"""Every parser of user text finishes in linear time on adversarial input of up to 8 kB.

One short question once froze the whole server: `"多少 请求" + 300 spaces + "1"` (336 bytes)
took 12.9 s in a backtracking regex, and the cost grew about L⁴. So each parser that reads a
question, a log, a Slack message or a model's text gets hypothesis-generated input built the
way backtracking is triggered (long runs of one fragment between a prefix and a suffix that
almost match) and must finish within a small time budget, and must not raise anything but a
user-facing AssistantError.

Run deterministically by default (fixed examples, a fixed seed); `ASSISTANT_FUZZ=500` explores
500 random examples per parser instead.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oncall_common.errors import AssistantError

MAX_BYTES = 8192
BUDGET_S = 0.5  # for ≤ 8 kB: the linear parsers take a few ms; the backtracking ones took seconds to weeks
EXPLORE = int(os.environ.get("ASSISTANT_FUZZ", "0"))
FUZZ = settings(max_examples=EXPLORE or 40, derandomize=not EXPLORE, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Pieces of real questions and logs, and the characters regexes treat specially.
FRAGMENTS = [
    " ", "  ", "\t", "\n", "\u3000", "1", "9", "0", "17131", "1,024", ",", ".", "0.9", "k", "K", "万", "千", "w", "x",
    "多少", "请求", "并发", "个", "块", "每个", "平均", "为", "是", "：", "，", "。", "token", "tokens", "blocks", "block",
    "block_size", "num_blocks_global", "max_num_seqs", "max-model-len", "--max-model-len=", "gpu_memory_utilization",
    "how many ", "concurrent", "per request", "GiB", "GB", "%", "TP", "=", ":", "-", "_", "/", "\\", "'", '"',
    "[", "]", "(", ")", "[1]", "[1, 2", "*", "**", "|", "#", "`", "```", "<@U1>", "<@", "<", ">", "@", "http://", "https://a.b/",
    "a", "A", "Ab", "AB", "aB1_", "x" * 30, "显存", "卡住", "显存不足", "CUDA out of memory", "NCCL error", "GPU KV cache size:",
    "Maximum concurrency for ", "Waiting for free blocks in KV cache", "free_list_len: 0", "vllm", "FastDeploy", "v0.8.5",
    "INFO 07-01 12:00:00 ", "Traceback (most recent call last):", "  File \"x.py\", line 1", "ERROR", "\ufffd", "é", "😀",
]
fragment = st.sampled_from(FRAGMENTS)


def _clip(text: str) -> str:
    return text.encode("utf-8")[:MAX_BYTES].decode("utf-8", errors="ignore")


@st.composite
def adversarial(draw) -> str:
    """A prefix, one unit repeated up to the size limit, and a suffix: the shape that makes a
    backtracking regex try every split of the run."""
    prefix = "".join(draw(st.lists(fragment, max_size=4)))
    unit = "".join(draw(st.lists(fragment, min_size=1, max_size=3)))
    suffix = "".join(draw(st.lists(fragment, max_size=4)))
    size = draw(st.integers(min_value=256, max_value=MAX_BYTES))
    repeats = max(1, (size - len(prefix.encode()) - len(suffix.encode())) // max(1, len(unit.encode())))
    return _clip(prefix + unit * repeats + suffix)


mixed = st.lists(st.one_of(fragment, st.text(max_size=12)), max_size=400).map(lambda parts: _clip("".join(parts)))
inputs = st.one_of(adversarial(), mixed, st.text(max_size=2000).map(_clip))

KNOWN = [  # the inputs of the report, and the shapes that were quadratic elsewhere
    "多少 请求" + " " * 7900 + "1",
    "how many " + "9" * 7990,
    "num_blocks " + "9" * 7000 + " how many concurrent requests",
    "[" * 8000 + "x](http://e.x)",
    "a" + " " * 8000 + ".",
    "[1, " * 2000,
    "| " * 4000,
    "**" + "a*" * 3000,
    "<@" + "U" * 8000,
    "GPU KV cache size: " + "1," * 4000,
    "每个请求平均" + "1" * 3000 + " " * 3000 + "token",
    "max_num_seqs" + " " * 8000,
    "block_size" + "是" * 2700,
    "KV cache " + "9" * 7990,  # the KV-cache figures' patterns, tried at every digit of a run
    "why is this slow?\nf()" + ".g()" * 22 + " x",  # a chained call not ending in ")": ×2.2 a call (review)
]


def _timed(parse: Callable[[str], object], text: str, budget: float = BUDGET_S) -> None:
    """Run parse(text) within budget. Over budget once may be the machine: a second run must be
    within it too, which a super-linear parser never is."""
    for attempt in range(2):
        started = time.perf_counter()
        try:
            parse(text)
        except AssistantError:
            pass  # a message for the person, e.g. "the question is empty"
        elapsed = time.perf_counter() - started
        if elapsed <= budget:
            return
    raise AssertionError(f"{parse.__name__} took {elapsed:.2f} s on {len(text.encode())} bytes starting {text[:60]!r}")


def _with_examples(fn):
    for text in KNOWN:
        fn = example(text=_clip(text))(fn)
    return fn


# ---------------------------------------------------------------- the parsers, each on its own

def _capacity(text: str) -> None:
    from assistant.calculations import capacity_call

    capacity_call(text)


def _question(text: str) -> None:
    from assistant.questions import query_text, validate_question

    query_text(validate_question(text, MAX_BYTES))


def _lang(text: str) -> None:
    from oncall_common.lang import cjk_count, detect_lang

    detect_lang(text)
    cjk_count(text)


def _cleaning(text: str) -> None:
    from assistant.cleaning import retrieval_text, split_question

    split_question(text)
    retrieval_text(text)


def _scope(text: str) -> None:
    from assistant.scope import detect

    detect(text)


def _slack_question(text: str) -> None:
    from assistant.interfaces.slack import thread_question

    thread_question(f"<@UBOT> {text}", [{"user": "U1", "text": text}, {"bot_id": "B1", "text": text}], "UBOT")


def _slack_format(text: str) -> None:
    from assistant.interfaces.slack import split_message, to_mrkdwn

    split_message(to_mrkdwn(text))


def _model_text(text: str) -> None:
    from assistant.llm import fix_citations, looks_like_garbage

    fix_citations(text, ["p1", "p2", "p3"])
    looks_like_garbage(text, text)


def _metrics(text: str) -> None:
    from assistant.tools.serving import parse_metrics

    parse_metrics(text)


def _mdx(text: str) -> None:
    from ingest.mdx import mdx_to_markdown

    mdx_to_markdown(text)


def _docsite(text: str) -> None:
    from ingest.docsite import unwrap_doc_site_markup

    unwrap_doc_site_markup(text)


STANDALONE = [_capacity, _question, _lang, _cleaning, _scope, _slack_question, _slack_format, _model_text, _metrics, _mdx,
              _docsite]


@pytest.mark.parametrize("parse", STANDALONE, ids=lambda f: f.__name__.strip("_"))
def test_parser_is_fast_on_adversarial_text(parse):
    @FUZZ
    @_with_examples
    @given(text=inputs)
    def check(text: str) -> None:
        _timed(parse, text)

    check()


# ---------------------------------------------------------------- the parsers that need the index

def test_log_diagnosis_is_fast_on_adversarial_logs(bundled_kb):
    from assistant.tools.logs import diagnose_text

    def diagnose(text: str) -> None:
        diagnose_text(text, bundled_kb)

    @FUZZ
    @_with_examples
    @given(text=inputs)
    def check(text: str) -> None:
        _timed(diagnose, text)

    check()


def test_tokenizer_and_typo_correction_are_fast_on_adversarial_text(bundled_kb):
    from ingest.tokenize import ascii_tokens, correct_typos, normalize, split_cjk

    index = bundled_kb.index
    prefixes = sorted({t[:2] for t in index.doc_freq if t.isascii() and len(t) >= 4})

    def tokenize(text: str) -> None:
        correct_typos(index.tokenizer(text), index.doc_freq.keys())
        ascii_tokens(split_cjk(normalize(text))[0])

    @FUZZ
    @_with_examples
    @example(text=" ".join(p + "qzx" + str(i % 10) for i, p in enumerate(prefixes * 40))[:MAX_BYTES])  # unknown words near many terms
    @given(text=inputs)
    def check(text: str) -> None:
        _timed(tokenize, text)

    check()


def test_whole_answers_are_fast_on_adversarial_questions(bundled_settings, bundled_kb):
    """End to end without an LLM: validation, cleaning, retrieval, capacity parsing, the answer.

    The question's embedding is handed in ready-made (answer_question's `early`): model
    inference is linear but slow on long input (about 1.5 ms per token here, up to ~3 s for
    the 2,000 characters query_text keeps), and it is not a parser. Everything else counts."""
    from assistant.answer import answer_question
    from assistant.questions import Background, EarlyEmbedding, query_text

    vector = bundled_kb.embedder.embed_queries(["vLLM CUDA out of memory"])

    def answer(text: str) -> None:
        early = EarlyEmbedding(query_text(text.strip()), Background(lambda: vector))
        answer_question(text, bundled_settings, kb=bundled_kb, use_llm=False, early=early)

    @settings(FUZZ, max_examples=EXPLORE or 15)
    @_with_examples
    @given(text=inputs)
    def check(text: str) -> None:
        _timed(answer, text, budget=1.0)

    check()
