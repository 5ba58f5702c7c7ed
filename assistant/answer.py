"""Questions in, `Answer` out: validation, retrieval, and the extractive answer.

Every adapter (CLI, HTTP, Slack, eval) calls `answer_question`; none of them knows how
retrieval works. The extractive answer quotes the best article's own sections — likely
cause, fix with commands verbatim, what to check next — so it can never state a fix the KB
does not contain. When nothing relevant is found it says so and sets grounded=false.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from ingest.bylines import is_byline

from .config import Settings
from .i18n import t, texts
from .questions import MAX_QUERY_CHARS, EarlyEmbedding, query_text, validate_question
from .names import asked_identifiers, setting_key, setting_names
from oncall_common.lang import LANGS, detect_lang, is_cjk
from .refusal import tentative
from .retrieval import ArticleMatch, Retrieval, RetrievalParams, search

# A second article is offered as an alternative when its score is this close to the best.
AMBIGUITY_MARGIN = 0.12
# …and when it is itself nearly as relevant: a close score from a weak match is no alternative.
ALTERNATIVE_RELEVANCE = 0.8
# A team's own passage on the problem is quoted after the curated article that leads when it
# is second of all, or this close on evidence and as relevant as an alternative (see _team_passage).
TEAM_NOTE_MARGIN = 0.3
TEAM_NOTE_CHARS = 600
TEAM_SECOND_RELEVANCE = 0.7
# Passages from other documents are offered when this relevant compared with the best one.
PASSAGE_RELEVANCE = 0.85
# A pasted log adds this many of its problem lines to the query, and shows this many findings.
LOG_LINES_IN_QUERY = 5
LOG_FINDINGS_SHOWN = 6
# Quoted text is bounded: a passage this long, an answer this long; the rest stays behind
# the citation. A 12,000-character answer is a document, not an answer.
MAX_PASSAGE_CHARS = 1500
MAX_ANSWER_CHARS = 3000
# Sections of the best document quoted after it: among the first SIBLING_RANKS results,
# at least this relevant compared with the best, at most this many.
SIBLING_RANKS = 5
SIBLING_RELEVANCE = 0.75
MAX_SIBLINGS = 2
BEST_KEYWORD = 0.999  # a chunk's keyword score is relative to the KB's best keyword match
SIBLING_RESERVE = 300  # headings, citations and notes around the passages
BESIDE_RESERVE = 400  # a curated article offered beside a team's passages: title, tell-apart line, first fix
PAGE_ORDER_SPAN = 2  # sections of one page this close to the best match are quoted in page order
MIN_SIBLING_CHARS = 400  # less room than this and a sibling is left behind its citation
MAX_FOLLOWERS = 3  # sections after a page's opening, quoted when the opening is the best passage
MAX_LEAD_CHARS = 700  # a document's opening paragraph, quoted after a passage from further down
# A later chunk of the best section is quoted as its continuation only when it scored at least
# this share of the section's best chunk. Every row group of a big table "matches" a little
# (same header, rows of the same shape), and a question about one variable got ten
# unrelated rows quoted after the two that name it.
CONTINUATION_SHARE = 0.5
CONTINUATION_DISCOUNT = 0.9

# Why an answer is the KB's own text although an LLM was wanted: none is configured, the KB
# has nothing to ground it (so the LLM is not asked to guess), or the LLM call failed.
FallbackReason = Literal["llm_not_configured", "not_grounded", "llm_failed"]

@dataclass(frozen=True)
class Citation:
    id: str
    title: str
    source: str  # file path relative to the KB root
    section: str
    lang: str
    score: float
    text: str


@dataclass
class Answer:
    question: str
    answer: str
    lang: str
    grounded: bool
    citations: list[Citation]
    tool_calls: list[dict] = field(default_factory=list)
    backend: str = "extractive"
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # one-line explanations (e.g. why no LLM)
    # full | tentative (answered, but a close call: the text says to check it) | partial
    # (symptom covered, platform or subject not) | none
    coverage: str = "full"
    confidence: float | None = None  # the refusal model's P(the KB answers this question)
    # Why the text is the KB's own although an LLM was wanted (None: not wanted, or it answered).
    fallback_reason: FallbackReason | None = None

    def to_dict(self) -> dict:
        """The one JSON shape shared by `ask --json`, the HTTP API and the eval."""
        data = asdict(self)
        data["timings_ms"] = {k: round(v, 2) for k, v in self.timings_ms.items()}
        for c in data["citations"]:
            c["score"] = round(c["score"], 4)
        return data


def answer_question(
    question: str,
    settings: Settings,
    *,
    lang: str | None = None,
    top_k: int | None = None,
    mode: str = "hybrid",
    kb=None,
    use_llm: bool | None = None,
    use_tools: bool = True,
    log_text: str | None = None,
    log_first_line: int = 1,
    on_token=None,
    on_tool=None,
    early: EarlyEmbedding | None = None,
    trace: dict | None = None,
) -> Answer:
    """The one function every adapter calls.

    use_llm: None = use the LLM when one is configured; False = extractive only.
    log_text: a log to diagnose alongside the question (`ask --log FILE`); log_first_line is
    the number in the file of its first line (the tail of a long log starts deep inside it).
    on_token / on_tool: streaming callbacks for the LLM path.
    early: the question's embedding, already started by the caller (see questions.py).
    trace: receives the retrieval under "retrieval" (the eval ranks articles from it).
    """
    started = time.perf_counter()
    text = validate_question(question, settings.max_question_bytes)
    diagnosis, log_call = _diagnose(log_text, settings, log_first_line) if log_text is not None else (None, None)  # an empty log is a log
    query, stats_trouble = _log_query(text, diagnosis) if diagnosis is not None else (_without_lesser_log_lines(text, settings), False)
    query_vector = None
    pending = early.for_text(query_text(query)) if early is not None else None
    if kb is None:
        from .knowledge import open_kb

        # Embed the question while the index loads: the model runs in C without holding
        # the GIL, so on a cold start the two overlap instead of adding up.
        pending = pending or EarlyEmbedding.start(settings, query_text(query)).pending
        kb = open_kb(settings)
    if pending is not None:
        query_vector = pending.result()
        # An embedding started before this call (`ask` starts it while it imports) is part
        # of the answer's time: "total" was smaller than "embed".
        started = min(started, pending.started)
    loaded = time.perf_counter()
    result = search(kb.index, kb.embedder, query, RetrievalParams.from_settings(settings), query_vector=query_vector, mode=mode,
                    platform=diagnosis.platform if diagnosis is not None else "",
                    product=diagnosis.product if diagnosis is not None else "")
    result.flags = _after_follow_ons(text, {**_server_settings(text, diagnosis), **result.flags})  # the question's own win
    only_the_log = diagnosis is not None and _asks_only_about_the_log(text) and not stats_trouble
    if only_the_log:
        _the_log_decides(result, diagnosis, kb.index)
    elif diagnosis is not None:
        _the_log_leads(kb, result, diagnosis, text)
    if trace is not None:
        trace["retrieval"] = result
    if query_vector is not None:
        result.timings_ms["embed"] = pending.elapsed_ms  # ran alongside "load"
    answer_lang, notes = _answer_language(text, lang)
    calc = None
    log_numbers = diagnosis.numbers if diagnosis is not None else None
    if log_numbers or any(ch.isdigit() for ch in text):  # a calculation needs numbers; skip the parser otherwise
        from .calculations import capacity_answer

        crashed = diagnosis is not None and any(f.fatal for f in diagnosis.findings)
        calc = capacity_answer(text, log_numbers, crashed)  # the tool run, or what is missing (then nothing is computed)
    tool_calls = [c.to_dict() for c in (log_call, *(calc.calls if calc is not None else ())) if c is not None]
    fallback: FallbackReason | None = None
    llm_wanted = bool(settings.llm_base_url) and use_llm is not False
    answer = _not_a_problem(text, diagnosis, only_the_log, kb, answer_lang, log_first_line)
    if answer is not None:
        result.grounded, llm_wanted = False, False
    if use_llm and not settings.llm_base_url:
        fallback = "llm_not_configured"
        notes.append(t("llm.fallback_not_configured", answer_lang))
    if llm_wanted and not result.grounded:
        fallback = "not_grounded"
        notes.append(t("llm.fallback_not_grounded", answer_lang))
    elif llm_wanted:
        llm_started = time.perf_counter()
        try:
            answer = _from_llm(text, result, kb, settings, answer_lang, use_tools, diagnosis, calc, on_token, on_tool)
        except Exception as exc:  # LLMError, or anything the client library throws
            from .llm import LLMError

            if not isinstance(exc, LLMError):
                import logging

                logging.getLogger("assistant").warning("LLM answer failed: %s", type(exc).__name__)
            reason = exc.message if isinstance(exc, LLMError) else "the LLM's reply could not be used"
            fallback = "llm_failed"
            notes.append(t("llm.fallback_failed", answer_lang, reason=_reason_in(reason, answer_lang)))
            tool_calls += getattr(exc, "tool_calls", [])
        result.timings_ms["llm"] = (time.perf_counter() - llm_started) * 1000
    if answer is None:
        answer = _extractive(text, kb, result, diagnosis, calc, answer_lang, top_k or settings.top_k)
    answer.confidence = result.confidence
    answer.fallback_reason = fallback
    answer.tool_calls = tool_calls + answer.tool_calls
    answer.notes = notes + answer.notes
    answer.question = text
    answer.timings_ms = {
        "load": (loaded - started) * 1000,
        **result.timings_ms,
        "total": (time.perf_counter() - started) * 1000,
    }
    return answer


def _extractive(text: str, kb, result: Retrieval, diagnosis, calc, lang: str, top_k: int) -> Answer:
    """The answer from the KB alone, under what was computed from the question and the log."""
    # A computed figure answers the question; the article behind it is its background,
    # not one of several guesses, so no "It could also be" list follows it.
    computed = calc is not None and bool(calc.calls) and not calc.missing
    extras, weights_over = _above_the_answer(text, result, diagnosis, calc, lang)
    answer = compose(kb, result, lang, 1 if computed else top_k, weights_over, asked_text=text)
    if weights_over and answer.coverage == "tentative" and not _top_is_passage(result):
        # The weights cannot fit, which the note says with certainty, and no article is a
        # sure match: "Qwen2.5-14B 单卡 A10 24GB 能跑 32k 吗" quoted the multi-GPU NCCL
        # article under it (newcomer trial). The note stands alone, said as such.
        answer = Answer(text, t("answer.weights_alone", lang), lang, False, [], coverage="none")
    elif computed and not answer.grounded and not result.unseen and not result.foreign_products:
        # So does a computed figure no article covers: "Qwen2.5-32B 单卡 H20 96G，32k，能并发几个"
        # got its figure, then "I won't guess a fix", the KB's topics and an unrelated closest
        # entry (trial). A refusal that names what the KB lacks (LoRA, another product) stays.
        answer = Answer(text, t("answer.computed_alone", lang), lang, False, [], coverage="none")
    elif (computed and calc.call is not None and calc.call.name == "logprobs_message_size" and calc.call.result.get("fits")
          and calc.call.result.get("messages_per_queue") != 0 and answer.grounded):
        # The asker's msgmax already holds the message: the article on that limit still led,
        # sure, telling them to raise what they had raised (trial: n=2 hung with msgmax 1048576).
        answer.coverage = "tentative"
        extras.append(t("answer.limit_not_the_cause", lang))
    if extras:
        # The calculation and log findings come first and whole; the KB's quote gets the rest of the bound.
        head = "\n\n".join(extras)
        labels = texts("answer", lang)
        rest = max(MAX_ANSWER_CHARS - len(head) - 2, MAX_ANSWER_CHARS // 3)
        # The quote keeps a third of the bound beside a long calculation, and the whole stays
        # within it: a 70B capacity question's figures, values and notes (2,100 characters)
        # plus that third came to 3,011 (capacity set).
        answer.answer = _bounded(head + "\n\n" + _bounded(answer.answer, rest, labels), MAX_ANSWER_CHARS, labels)
        _drop_cut_citations(answer, answer.answer[len(head):])
    return answer


_CITE_MARK = re.compile(r"\[(\d{1,2})\]")


def _drop_cut_citations(answer: Answer, quote: str) -> None:
    """Sources whose text the bound cut away go with it: under a log's findings, the article's
    "Checks" and the alternative article below it were cut, and their [3]–[5] still stood in
    Sources, cited by nothing (newcomer). Only from the end, so the numbers shown stay right;
    only the marks of the KB's quote count, not a finding's "[4] NCCL WARN" above it (review)."""
    shown = [n for n in map(int, _CITE_MARK.findall(quote)) if 1 <= n <= len(answer.citations)]
    if shown and max(shown) < len(answer.citations):
        del answer.citations[max(shown):]


def _after_follow_ons(text: str, flags: dict[str, str]) -> dict[str, str]:
    """The settings as a chat's what-ifs leave them: "那如果 max-model-len 改成 16k 呢" under
    "--max-model-len 32768" was answered under "your command line: `--max-model-len 32768`"
    (trial). A value a follow-on line gives replaces the earlier one; a setting it names with
    no value it could parse is left out rather than shown stale."""
    if not flags or "\n" not in text.strip():
        return flags
    from .calculations import follow_on_lines
    from .cleaning import split_question

    out = dict(flags)
    for line in follow_on_lines(text):
        given = split_question(line).flags
        low = line.lower().replace("_", "-")
        for flag in list(out):
            if flag in given:
                out[flag] = given[flag]
            elif flag.lstrip("-").replace("_", "-").lower() in low:
                del out[flag]
    return out


def _server_settings(text: str, diagnosis) -> dict[str, str]:
    """The settings the asker's server ran with, from `--log`'s diagnosis or from a log pasted
    into the question (`tail server.log | ask -`; a chat's first message under "I lowered
    --max-model-len to 16384, still OOM": the follow-up lost the 0.95 and 256 the first
    message's args line showed, newcomer trial)."""
    if diagnosis is not None:
        return diagnosis.settings or {}
    if "args: " not in text:  # "non-default args: {", "args: Namespace("
        return {}
    from .tools.logs import settings_in

    return settings_in(text)


# Hiragana and katakana: a Japanese question (its kanji alone would read as Chinese); Han
# characters; and what a Chinese sentence quotes (「こんにちは」, "…"), which is not its language.
_KANA = re.compile(r"[\u3040-\u309f\u30a0-\u30ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_QUOTED_TEXT = re.compile(r"「[^」]*」|『[^』]*』|“[^”]*”|\"[^\"]*\"|'[^'\n]*'")


def _answer_language(text: str, lang: str | None) -> tuple[str, list[str]]:
    """(the answer's language, notes about it). A Japanese question is answered in English
    with a note: its kanji made it Chinese, answered with no word on the language (trial)."""
    if lang in LANGS:
        return lang, []
    own = _QUOTED_TEXT.sub(" ", text)
    kana = len(_KANA.findall(own))
    if kana >= 3 and kana >= 0.3 * (kana + len(_HAN.findall(own))):  # Japanese prose writes its endings in kana
        return "en", [t("answer.japanese", "en")]
    return detect_lang(text), []


def _top_is_passage(result: Retrieval) -> bool:
    """Whether the best match is a passage of a user's own docs (their runbook is quoted even when unsure)."""
    return bool(result.articles) and result.articles[0].passage


def _not_a_problem(text: str, diagnosis, only_the_log: bool, kb, lang: str, first_line: int = 1) -> Answer | None:
    """The answer to what asks about no problem, or None: a healthy log alone (`ask --log
    healthy.log` is not a question about debug switches), or what the assistant knows
    ("what does this assistant know about?" got the KV-cache article at 0.95)."""
    if only_the_log and not any(f.severity != "info" for f in diagnosis.findings):
        # Of a long log only its end was read: the all-clear says so itself (trial: a crash at the
        # middle of a 200 MB log got "nothing in this log (14275 lines)", the caveat on stderr).
        clean = [t("answer.log_clean_tail" if first_line > 1 else "answer.log_clean", lang, lines=f"{diagnosis.lines:,}",
                   before=f"{first_line - 1:,}")]
        clean += [f"- {c.get(lang, c['en'])}" for c in diagnosis.computed]
        return Answer(text, "\n".join(clean), lang, False, [], coverage="none")
    if diagnosis is None and _healthy_paste(text, kb):
        return Answer(text, t("answer.log_clean", lang, lines=len(text.splitlines())), lang, False, [], coverage="none")
    if diagnosis is None and about_the_kb(text):
        return Answer(text, _kb_overview(kb, lang), lang, False, [], coverage="none")
    return None


def _healthy_paste(text: str, kb) -> bool:
    """Whether the question is log lines alone, none of them a problem: `tail -3 server.log |
    ask -` on stats lines (KV cache usage 40%, nothing waiting) was answered, as sure, with
    "requests never return, the KV cache is full" (newcomer trial), where `ask --log` on the
    same lines says it found nothing wrong."""
    from .questions import might_paste

    if not might_paste(text):
        return False
    from .cleaning import split_question
    from .tools.logs import diagnose_text

    parts = split_question(text)
    if parts.prose or parts.errors or parts.stats or not parts.logs:
        return False  # stats that show trouble (requests waiting) say something is wrong, signature or not
    found = diagnose_text(text, kb)
    # Stats lines with a full KV cache and requests waiting say something is wrong, signature or not.
    return not found.computed and not any(f.severity != "info" for f in found.findings)


def _diagnose(log_text: str, settings: Settings, first_line: int = 1):
    from .tools import ToolCall
    from .tools.logs import diagnose_text

    t0 = time.perf_counter()
    diagnosis = diagnose_text(log_text, settings, first_line)  # the index in use, cache dir included
    call = ToolCall.of("diagnose_log", {"text": f"<{len(log_text.splitlines())} lines>"}, diagnosis,
                       (time.perf_counter() - t0) * 1000)
    return diagnosis, call


def _log_query(text: str, diagnosis) -> tuple[str, bool]:
    """`_retrieval_query`, and whether the log's last lines are stats that show trouble with
    no finding to say so: SGLang's "Decode batch. … token usage: 0.99, … #queue-req: 63",
    200 times over, was called a clean log, while a team's handbook quotes that very line as
    its alert's symptom (trial). Those lines are then what retrieval reads."""
    query = _retrieval_query(text, diagnosis)
    if any(f.severity != "info" for f in diagnosis.findings) or not diagnosis.stats_trouble:
        return query, False
    return (query + "\n" + "\n".join(diagnosis.stats_trouble))[:MAX_QUERY_CHARS], True


def _retrieval_query(text: str, diagnosis) -> str:
    """The question plus the log lines that carry problem signatures (they decide the article);
    informational lines such as num_blocks_global are left out, and so are warnings beside a
    critical line: a preemption warning before a CUDA OOM is its prelude, and the answer led
    with it while the log findings (and `doctor --log`) led with the OOM."""
    problems = [f for f in (diagnosis.findings if diagnosis else []) if f.severity != "info"]
    lines: list[str] = []
    if problems:
        # Findings come most severe first (what the server logged as an error or died of
        # before any warning-level symptom); a lesser one stays when the question is about it.
        lesser = _lesser_findings(problems, _stems(text))
        lines = [f.example for f in problems if f not in lesser][:LOG_LINES_IN_QUERY]
    if diagnosis is not None and diagnosis.last_line and _STUCK.search(text) and not any(f.fatal for f in problems):
        # A hang logs no error: where the log stopped says what it was doing. "stuck at
        # shard 5/99 for 30 minutes, no error" with the log was refused; with its last line,
        # the loading article answered (trial), also beside a client's dropped request (review).
        lines.append(diagnosis.last_line)
    return (text + "\n" + "\n".join(lines))[:MAX_QUERY_CHARS] if lines else text


_STUCK = re.compile(r"\b(?:hang\w*|hung|stuck|frozen|freez\w*|no (?:error|output|progress)|nothing happens)\b"
                    r"|卡住|卡死|卡在|不动|没反应|没有报错|无报错|没报错", re.I)


def _lesser_findings(problems: list, asked: set[str]) -> list:
    """The findings below the log's most severe one (findings come most severe first: what
    the server logged as an error or died of, before any warning-level symptom), unless the
    question's words are about them. Nor the error logged just before a death no KB document
    names: "ERROR failed to initialize domain model …: models directory does not exist" and
    then "FATAL Failed to create ExtProc server: failed to initialize classifier", the second
    only wrapping the first (newcomer, semantic-router docs)."""
    top = problems[0]
    cause = {id(f) for f in problems
             if top.fatal and not top.article and not f.article and 0 < top.first_line - f.first_line <= CAUSE_LINES}
    return [f for f in problems
            if not (f.severity == top.severity and f.fatal == top.fatal) and not asked & _stems(f.example) and id(f) not in cause]


CAUSE_LINES = 3  # an error this few lines above a death it did not name is that death's cause


def _without_lesser_log_lines(text: str, settings: Settings) -> str:
    """A question with a log pasted in, without the log's warning lines when it also shows
    what the server died of: pasted whole (`tail -n 50 server.log | ask -`), a preemption
    warning before a CUDA OOM won the answer, whose first fix (raise gpu_memory_utilization)
    made the OOM worse, while `ask --log` on the same lines led with the OOM. The findings
    ranked below are `_retrieval_query`'s, but here only a death the KB has an article for
    outranks them; the warnings stay when the question's sentences are about them."""
    from .questions import might_paste

    if not might_paste(text):
        return text
    from .cleaning import split_question

    parts = split_question(text)
    text = _without_stats_before_a_crash(text, parts)
    if len(parts.errors) < 2:
        return text
    from .tools.logs import diagnose_text

    problems = [f for f in diagnose_text("\n".join(parts.errors), settings).findings if f.severity != "info"]
    # Only a death the KB has an article for outranks the warnings: "EngineCore failed to
    # start" says nothing of why, and the NCCL or KV-cache line before it does.
    if not problems or not problems[0].fatal or not any(f.fatal and f.article for f in problems):
        return text
    lesser = {f.signature.lower() for f in _lesser_findings(problems, _stems("\n".join(parts.prose)))}
    if not lesser:
        return text
    # Every line a lesser signature matches (a warning repeats with other timestamps and
    # sequence ids), unless it also carries what the server died of.
    worse = {f.signature.lower() for f in problems if f.signature.lower() not in lesser}
    kept = [line for line in text.splitlines()
            if not any(sig in line.lower() for sig in lesser) or any(sig in line.lower() for sig in worse)]
    return "\n".join(kept)


# What a question about the engine's stats lines says: the queue, throughput, the KV cache's fill.
_ABOUT_STATS = re.compile(r"\b(?:queue[sd]?|queueing|waiting|pending|throughput|slow\w*|latency|tokens/s|kv cache usage"
                          r"|hang\w*|stuck|time[sd]? ?out|timeouts?)\b|排队|等待|吞吐|慢|延迟|使用率|卡住|卡死|超时", re.I)


def _without_stats_before_a_crash(text: str, parts) -> str:
    """A pasted log without its periodic stats lines when it ends in the server failing, and
    the asker's sentences are not about the queue or throughput: `cat server.log | ask -`
    over forty "Running: 128 reqs, Waiting: 46 reqs" lines and then a CUDA OOM traceback was
    answered with a team page on the request queue (it quotes such a line), while `ask --log`
    on the same lines led with the OOM. The stats were the prelude; the crash is the answer."""
    if not parts.logs:
        return text
    from .tools.logs import STATS_LINE, is_crash_line

    stats = {line.strip() for line in parts.logs if STATS_LINE.search(line)}
    if not stats or _ABOUT_STATS.search("\n".join(parts.prose)):
        return text

    crashes = {line.strip() for line in parts.errors if is_crash_line(line)}
    lines = text.splitlines()
    last_crash = max((i for i, line in enumerate(lines) if line.strip() in crashes), default=-1)
    # Only what came before the crash: stats after it are the server back up and in trouble again.
    return "\n".join(line for i, line in enumerate(lines) if i > last_crash or line.strip() not in stats)


def _reason_in(reason: str, lang: str) -> str:
    """Why the LLM call failed, in the answer's language."""
    if lang != "zh":
        return reason
    from .i18n.llm import REASONS_ZH

    for pattern, zh in REASONS_ZH:
        translated, n = re.subn(f"^{pattern}$", zh, reason)
        if n:
            return translated
    return reason


def _above_the_answer(text: str, result: Retrieval, diagnosis, calc, lang: str) -> tuple[list[str], bool]:
    """What comes before the KB's quote: the calculation the question asked for, then the
    log findings, or the figures a pasted error carries; and whether it says that the
    asker's GPUs cannot hold the weights at all (the fix list then keeps what adds room)."""
    extras = []
    over = False
    if calc is not None:
        from .calculations import explain

        extras.append(explain(calc, lang))
    if diagnosis is not None and not diagnosis.findings and _ASKS_CRASH.search(text):
        # A log with no finding at all: "why did the server crash?" beside a healthy vLLM log got
        # an article, sure, and nothing said the log shows no crash (trial).
        extras.append(t("answer.log_no_crash", lang))
    if diagnosis is not None and diagnosis.findings:
        # A log asked about on its own leads with what went wrong: a FastDeploy log of
        # `free_list_len: 0` opened on its decode budget, computed from its start-up lines,
        # which no one asked for, and its findings came second (newcomer).
        troubled = _asks_only_about_the_log(text) and any(f.severity != "info" for f in diagnosis.findings)
        extras.insert(0 if troubled else len(extras), _log_summary(diagnosis, lang, result))
        if _ASKS_CRASH.search(text) and not any(f.fatal or f.severity == "critical" for f in diagnosis.findings):
            # "why did the server crash?" beside a log of preemption warnings was answered with
            # the preemption article, sure, and nothing said the log shows no crash (newcomer).
            extras.append(t("answer.log_no_crash", lang))
    elif result.grounded or "derived max_model_len" in text:
        # "set --max-model-len 45232", from their error. The config's own limit is said even
        # when no article covers the error: it is the error's own figure, not a guessed fix.
        extras += [f"**{_sentence(c[lang])}**" for c in _pasted_figures(text, result.flags)]
    # A calculation that ran said whether the weights fit; one that stopped for a missing value
    # ("will Qwen2.5-14B fit one A10 24GB with max-model-len 8192?": weights in GiB) did not.
    # A sizing question the KB has no article for still gets the arithmetic ("DeepSeek-V3 671B
    # FP8 需要几张 H200" was refused outright): the weights' floor is certain, not a guessed fix.
    if (calc is None or not calc.computed) and any(ch.isdigit() for ch in text):  # a size needs digits
        from .calculations import asks_sizing, weights_verdict

        # "Qwen2.5-14B on one A10 24GB": no flag in the fix list makes that fit
        note, over = weights_verdict(text) if result.grounded or asks_sizing(text) else (None, False)
        if note is not None:
            extras.append(f"**{_sentence(note[lang])}**")
    return extras, over


_ASKS_CRASH = re.compile(r"\b(?:crash\w*|died|dies|went down|go(?:es)? down|exited|killed|segfault\w*)\b"
                         r"|挂了|挂掉|崩溃|崩了|宕机|退出了|被杀|down 了", re.I)


def _sentence(text: str) -> str:
    """A line that stands as a sentence of its own starts with a capital: the same wording is
    written to follow a label elsewhere ("by your error, the KV cache holds…")."""
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _pasted_figures(text: str, flags: dict[str, str] | None) -> list[dict[str, str]]:
    """What the numbers of a pasted error say (the KV cache's real capacity), only for
    the errors that carry them: the regexes run when "max seq len" is there. `flags`: what
    the question's command line sets."""
    if "max seq len" not in text and "maximum model length" not in text and "derived max_model_len" not in text:
        return []
    from .tools.logs import computed_from, numbers_in

    return computed_from(numbers_in(text), flags)


def _uncovered_crash(diagnosis, index) -> bool:
    """Whether what the log died of is an error no article has a signature for and the KB
    never words: `ask --log` on an illegal-memory-access crash answered with the article on
    forked CUDA processes, for sharing "RuntimeError" and "CUDA error"."""
    from .scope import bare_unknown_error

    top = _worst_finding(diagnosis)
    if top is None or top.article:
        return False
    if any(f.article for f in diagnosis.findings if f.severity != "info" and (f.fatal or not top.fatal)):
        return False  # a crash whose traceback passes through a KB signature (self.graph.replay()) is covered
    # Not only a crash: every request failing on a chat template's jinja2 error is no less
    # the log's subject, when nothing else in it has an article.
    return bare_unknown_error(top.signature, index)


def _the_log_decides(result: Retrieval, diagnosis, index) -> None:
    """With no question but the log: a crash the KB has nothing on is not answered, and
    otherwise the article the log's most severe finding names by signature leads, when
    retrieval found it too. The findings said "NCCL error → the multi-GPU NCCL article" and
    the answer under them was the multi-node one, which shared more words with "unhandled
    cuda error" (newcomer trial)."""
    if _uncovered_crash(diagnosis, index):
        result.grounded = result.symptom_covered = False
        return
    top = _worst_finding(diagnosis)
    named = next((a for a in result.articles if top is not None and a.doc_id == top.article and not a.passage), None)
    if named is not None:
        _leads(result, named)


def _worst_finding(diagnosis):
    """The log's most severe finding above info (findings come worst first), or None."""
    return next((f for f in diagnosis.findings if f.severity != "info"), None)


def _leads(result: Retrieval, named: ArticleMatch) -> None:
    """`named` first; when it lists the log's line among its signatures and the KB answers,
    no close call: `ask --log` on a FastDeploy worker log with "free_list_len: 0" three times
    opened "Not a sure match" (trial), and the confidence was the old leader's."""
    if result.articles[0] is not named:
        result.articles.remove(named)
        result.articles.insert(0, named)
    if result.grounded and named.signatures:
        from .refusal import SURE

        result.confidence = max(result.confidence or 0.0, SURE)


LOG_LEADS_FROM = 5  # how far down the article the log's finding names may be, and still lead


def _the_log_leads(kb, result: Retrieval, diagnosis, question: str) -> None:
    """With a question beside the log: the article the log's worst finding names by its
    critical signature leads when retrieval found it among the first five and the leader
    has no line of the log to show for itself. "why do requests hang?" beside a FastDeploy log
    of `free_list_len: 0` got the logprobs hang, which shares the question's words but none
    of the log's, while the findings above it named the KV-blocks article (newcomer). Only
    for a question that says no more than the symptom: one with a subject of its own ("which
    network interface does NCCL pick on a multi-node Ray cluster?") or its own error line is
    left to it."""
    from .cleaning import split_question

    top = _worst_finding(diagnosis)
    if top is None or top.severity != "critical" or not top.article or split_question(question).errors:
        return
    leader = result.articles[0] if result.articles else None
    named = next((a for a in result.articles[:LOG_LEADS_FROM] if a.doc_id == top.article and not a.passage and a.signatures), None)
    if named is None or leader is named or leader.signatures:
        return
    said = {stem for stem in _stems(question) if not stem.startswith(_SYMPTOM_STEMS)}
    if not said or _says_all(kb, named.doc_id, said):
        _leads(result, named)


# What a question beside a log says of the symptom alone: "why do requests hang", "why are
# requests hanging again", "服务突然挂了" add nothing the log's finding does not say better.
# Beginnings of `_stems`' six-letter stems, so that every inflection counts ("hanging" is
# "hangin", "crashing" "crashi": a review found them read as subjects of their own).
_SYMPTOM_STEMS = tuple("hang hung freez froze stuck stall crash timin timeo timed fail reques servic server respon return "
                       "happen sudden work anymor stopp stops keeps again wrong slow error broke".split())


def _says_all(kb, doc_id: str, stems: set[str]) -> bool:
    """Whether the article, in either language, has every stem (a Chinese question's stems are
    its glossary's English words)."""
    text = " ".join(f"{c.title} {c.text}" for lang in LANGS for c in kb.article_chunks(doc_id, lang)).lower()
    return all(stem in text for stem in stems)


def _asks_only_about_the_log(text: str) -> bool:
    """The question `ask --log FILE` puts when none was asked."""
    return text in {t("answer.log_question", lang) for lang in LANGS}


def _stems(text: str) -> set[str]:
    """The first six letters of each longer word: "preempted" in a question meets
    "preemption" in a log line. A Chinese question's words count by their glossary
    translation: "为什么一直被抢占" is about the preemption warning."""
    if any(is_cjk(ch) for ch in text):
        from .glossary import translate

        text = text + " " + " ".join(translate(text, "zh"))
    return {w[:6] for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in _COMMON}


_COMMON = frozenset("because there which where while after before about would could should their other "
                    "error errors warning using server model".split())


def _close_call(kb, result: Retrieval, lang: str, weights_over: bool = False, question: str | None = None) -> tuple[bool, str]:
    """(a close call, why): the refusal model's own doubt and the rules in `refusal.tentative`
    ("model", or "denied_line" when the asker says the best article's log line is absent), or
    one of the rules that read the cited document itself: a failure the asker denies that
    names its title ("failure_hang", …), an OOM question on a document that never deals with
    memory ("oom"), its fixes tried already ("tried"; not when the weights cannot fit: the note
    above says no setting helps, and the article stays). One place, for the extractive answer
    and the LLM's alike; the reason picks the answer's first line."""
    top, question = result.articles[0], result.question if question is None else question
    if tentative(result):
        return True, "denied_line" if top.doc_id in result.denied_signatures else "model"
    failure = _denied_symptom(top, question)
    if failure:
        return True, f"failure_{failure}"
    if _unsaid_oom(kb, top, question):
        return True, "oom"
    if not weights_over and _tried_its_fixes(kb, top, lang, question):
        return True, "tried"
    return False, ""


def _unnamed_subjects(result: Retrieval, asked_text: str, quoted: str) -> list[str]:
    """The asker's own words for the near-domain subjects their question names and the KB
    lacks, when the answer below does not speak of them either: what a close call is unsure
    of, said instead of the bare "may not be your case" ("once CPU KV offloading is on" is
    what no article reaches). Only words of the question itself (a log pasted with `--log`
    is not the asker speaking), in their spelling ("images", not "multimodal inputs": a loose
    match then reads as what it is), and not platforms, which have their own rule."""
    from .scope import ENTITIES, _found, _padded

    if result.scope is None:
        return []
    said = getattr(result.scope, "entity_terms", {}) or {}

    def plain(text: str) -> str:
        return text.lower().replace("-", " ").replace("_", " ")

    text = plain(_padded(quoted))
    words: list[str] = []
    for subject in _said_unseen(result):
        term = said.get(subject, "")
        if subject not in ENTITIES or not term:
            continue
        pattern = re.escape(term.rstrip("*")).replace("\\-", "[-_ ]").replace("\\ ", "[-_ ]") + (r"\w*" if term.endswith("*") else "")
        written = re.search(pattern, asked_text, re.I)
        if written is None or _found(text, tuple(plain(n) for n in (*ENTITIES[subject], term) if n.strip())):
            continue
        words.append(written.group(0))
    return list(dict.fromkeys(words))


def _close_call_lead(labels: dict, reason: str, vague: bool, passage: bool, unnamed: list[str] | None = None) -> str:
    """The close call's first line: what it is unsure of, where a rule knows. `unnamed`: the
    asker's words for subjects the KB lacks (`_unnamed_subjects`), said when the model's own
    doubt is all the rules know."""
    if reason == "model" and unnamed and not vague:
        quoted = labels["word_list_sep"].join(labels["word_quoted"].format(word=w) for w in unnamed)
        return labels["unsure_unseen_passages" if passage else "unsure_unseen"].format(words=quoted)
    if reason.startswith("failure_") and not vague:
        return labels["unsure_denied"].format(what=labels[reason])
    if reason == "denied_line" and not vague and not passage:
        return labels["unsure_denied_line"]
    if vague:
        return labels["vague"]
    if passage:
        return labels["unsure_passages"]
    return labels[{"tried": "unsure_tried", "oom": "unsure_oom"}.get(reason, "unsure")]


def _passage_quoting(signature: str, result: Retrieval | None) -> str:
    """The title of a retrieved passage that quotes a finding's line, for a finding no KB
    document lists as its signature: a team's runbook rarely declares signatures, but its
    symptom section shows the very line, and "→ no KB article on it" sat right above the
    runbook that quotes it (trial)."""
    if result is None:
        return ""
    from .retrieval import quoted_sample_holds, squash
    from .tools.logs import message_of

    message = message_of(signature).lower()
    # Up to its first figure, which differs from one paste to the next ("Tried to allocate 2.00
    # GiB"); or the error that wraps the rest, before its first colon ("Failed to create ExtProc
    # server: failed to initialize classifier", where the page's heading quotes the first part).
    needles = [n for n in (re.split(r"\d", message, maxsplit=1)[0].strip()[:120], message.split(": ", 1)[0].strip())
               if len(n) >= 20]
    line = squash(message)
    for match in result.articles[:3]:
        # A message the passage quotes with placeholders ("failed to initialize <name> model
        # from <path>: <error>") that the finding's line fills in.
        if any(quoted_sample_holds(line, sample) for sample in match.signatures):
            return match.chunks[0].chunk.title
        for scored in match.chunks:
            text = scored.chunk.text.lower()
            if any(needle in text for needle in needles):
                return scored.chunk.title
    return ""


def _log_summary(diagnosis, lang: str, result: Retrieval | None = None) -> str:
    from .tools.logs import shown_signature

    rows = [f"**{t('answer.log_title', lang)}**", ""]
    for f in diagnosis.findings[:LOG_FINDINGS_SHOWN]:
        home = f.article or _passage_quoting(f.signature, result) or t("answer.log_no_article", lang)
        rows.append(t("answer.log_row", lang, signature=shown_signature(f.signature), count=f.count, line=f.first_line,
                      severity=f.severity, article=home).replace("  ", " "))
    rows += [f"- {c.get(lang, c['en'])}" for c in diagnosis.computed]
    return "\n".join(rows)


def _from_llm(text, result, kb, settings, lang, use_tools, diagnosis, calc, on_token, on_tool) -> Answer:
    from .llm import llm_answer

    context = []
    if diagnosis is not None and diagnosis.findings:
        context.append(_log_summary(diagnosis, "en"))
    context += [c["en"] for c in _pasted_figures(text, result.flags)]  # the asker's own --max-model-len, for the model too
    if calc is not None:
        context.append(calc.context())
    out = llm_answer(text, result, kb, settings, lang, use_tools=use_tools, context="\n\n".join(context),
                     on_token=on_token, on_tool=on_tool)
    by_id = {a.doc_id: a for a in result.articles}
    citations = [_citation(c, by_id[c.doc_id].score if c.doc_id in by_id else 0.0) for c in out.citations]
    answer = Answer(text, out.text, lang, result.grounded and out.covered, citations, out.tool_calls, f"llm:{out.model}", notes=out.notes)
    if not out.covered:
        answer.coverage = "none"
    elif out.unverified or (result.articles and _close_call(kb, result, lang, question=text)[0]):
        answer.coverage = "tentative"
        if result.asked_unknown:  # the model's text is on screen already: which asked name the KB lacks goes in a note
            answer.notes.append(_asked_unknown_line(result.asked_unknown, lang))
    return answer


def _asked_unknown_line(unknown: list[str], lang: str) -> str:
    return texts("answer", lang)["asked_unknown"].format(names=", ".join(f"`{n}`" for n in unknown[:3]))


def _citation(chunk, score: float) -> Citation:
    return Citation(chunk.doc_id, chunk.title, chunk.source, chunk.section, chunk.lang, float(score), chunk.text)


class _Cites:
    """Numbers citations in order of first use, so [n] in the text matches the list."""

    def __init__(self) -> None:
        self.items: list[Citation] = []

    def ref(self, chunk, score: float) -> str:
        for i, c in enumerate(self.items, 1):
            if c.source == chunk.source and c.section == chunk.section and c.text == chunk.text:
                return f"[{i}]"
        self.items.append(_citation(chunk, score))
        return f"[{len(self.items)}]"


def _pick_lang(kb, doc_id: str, lang: str) -> tuple[str, bool]:
    langs = kb.article_langs(doc_id)
    if lang in langs:
        return lang, False
    return (langs[0] if langs else lang), True


def compose(kb, result: Retrieval, lang: str, top_k: int, weights_over: bool = False, asked_text: str | None = None) -> Answer:
    """The extractive answer. `weights_over`: the note above says the asker's GPUs cannot
    hold the weights, so the lead article's fixes that only tune memory are left out.
    `asked_text`: the question as asked, without a log pasted beside it (the retrieval's
    query holds both)."""
    asked_text = result.question if asked_text is None else asked_text
    labels = texts("answer", lang)
    cites = _Cites()
    if not result.grounded:
        text, coverage = _refusal(kb, result, lang, labels, cites)
        answer = Answer(result.question, text, lang, False, cites.items, coverage=coverage)
        answer.confidence = result.confidence
        return answer

    top = result.articles[0]
    unsure, reason = _close_call(kb, result, lang, weights_over)
    vague = not top.passage and _vague(result)
    tail: list[str] = []
    if vague:
        unsure, top_k = True, max(top_k, VAGUE_ALTERNATIVES + 1)
    if top.passage:
        parts = _passages_body(kb, result, lang, labels, cites, top_k)
        # What the asker says was tried, under the first heading; not the pasted command
        # line, which a team's page seldom discusses. "tried flush_cache, got 400, what next?"
        # got the first answer again, word for word (trial).
        at = next((i + 1 for i, part in enumerate(parts[:4]) if part in (labels["other_lang"], labels["other_lang_passage"])), 1)
        parts[at:at] = _your_settings(kb, top, lang, labels, {}, result.question)
    else:
        parts = _article_body(kb, top, lang, labels, cites, weights_over, result.flags)
        # The asker's own settings come under the title, before the article's advice: after
        # it, a long article pushed them past the quoting limit.
        at = 2 if len(parts) > 1 and parts[1] == labels["other_lang"] else 1  # after "only in the other language"
        parts[at:at] = _your_settings(kb, top, lang, labels, result.flags, result.question)
        # What follows the article (the other product's half, the team's own section, other
        # articles) keeps its room: after a long article the bound cut it off, and a team's
        # runbook on the very error asked was not shown at all.
        alternatives = _alternatives(kb, result, top_k, vague)
        tail = _other_products(kb, result, lang, labels, cites)
        alternatives = [a for a in alternatives if not any(a.doc_id == c.id for c in cites.items)]
        tail += _team_passage(kb, result, lang, labels, cites, offered=alternatives)
        if alternatives:
            tail += ["", f"**{labels['also']}:**"]
            for art in alternatives:
                tail += _alternative(kb, art, lang, labels, cites)
    if unsure:
        unnamed = _unnamed_subjects(result, asked_text, "\n".join(parts + tail)) if reason == "model" else None
        parts = [_close_call_lead(labels, reason, vague, bool(top.passage), unnamed), "", *parts]
        if result.asked_unknown:  # say which part of the question nothing below answers
            parts[1:1] = ["", _asked_unknown_line(result.asked_unknown, lang)]
    body = "\n".join(parts).strip()
    if not top.passage and tail:
        after = "\n".join(tail).strip()
        body = _bounded(body, max(MAX_ANSWER_CHARS - len(after) - 2, MAX_ANSWER_CHARS // 2), labels) + "\n\n" + after
    text = _bounded(body, MAX_ANSWER_CHARS, labels)
    # Citations are numbered in the order they appear; those whose marker the bound cut off
    # are not listed under an answer that no longer quotes them.
    cited = [c for n, c in enumerate(cites.items, 1) if f"[{n}]" in text] or cites.items[:1]
    answer = Answer(result.question, text, lang, True, cited, coverage="tentative" if unsure else "full")
    answer.confidence = result.confidence
    return answer


def _team_passage(kb, result: Retrieval, lang: str, labels: dict, cites: "_Cites",
                  offered: list[ArticleMatch] = ()) -> list[str]:
    """A team's own runbook section on the same problem, quoted briefly after the curated
    article that leads (a KB of both): "推理卡住" went to the bundled hang article, and the
    team's section of that name (their dashboard, their restart command, their channel) was
    not mentioned at all, being further behind than an alternative may be. Candidates are
    judged on evidence, not rank: a many-topic FAQ page pays a page prior that put its
    exact entry eighth. One already `offered` as an alternative is not quoted twice."""
    top = result.articles[0]
    for rank, art in enumerate(result.articles[1:], 1):
        if not art.passage or any(art is o for o in offered) or _wrong_hardware_beside(top, art):
            continue
        # Second of all, it is quoted whatever the lead (if still fairly relevant): a pasted
        # error line is a signature only the article declares. Further down, its evidence
        # (before the page prior a many-topic FAQ page pays) must be close.
        second = rank == 1 and art.relevance >= TEAM_SECOND_RELEVANCE * _unboosted(top)
        close = art.relevance >= ALTERNATIVE_RELEVANCE * top.relevance and art.evidence >= top.evidence - TEAM_NOTE_MARGIN
        if second or close:
            best, text, _rest = _passage(kb, art, lang, labels)
            return ["", f"**{labels['your_docs']}:** {_display_title(best.title, best.source)} {cites.ref(best, art.score)}",
                    "", _team_quote(_tidy(text), labels)]
    return []


# A label on a line of its own, in bold or as a heading: "**Fix**", "#### 处理", "**Why:**".
_LABEL_LINE = re.compile(r"^(?:#{2,6}\s*(.+?)|\*\*([^*\n]+?)\s*[:：]?\*\*)\s*[:：]?\s*$", re.M)


def _fix_label(text: str):
    """The first line of `text` that labels a fix, by the section names ingest knows."""
    from ingest.chunking import section_kind

    return next((m for m in _LABEL_LINE.finditer(text) if section_kind(m.group(1) or m.group(2)) == "fixes"), None)


def _team_quote(text: str, labels: dict) -> str:
    """A team's section, briefly: its opening and, where the section has one, its fix. Cut at
    TEAM_NOTE_CHARS from the top, "Symptoms" and "Why" filled it and the team's own fix (their
    standard 0.90, their leftover-pod check) stayed behind the citation (trial)."""
    if len(text) <= TEAM_NOTE_CHARS:
        return text
    fix = _fix_label(text)
    if fix is None or fix.start() < TEAM_NOTE_CHARS // 2:
        return _bounded(text, TEAM_NOTE_CHARS, labels)
    opening = text[:fix.start()].strip().split("\n\n")
    head = "\n\n".join(opening[:2]) if len("\n\n".join(opening[:2])) <= TEAM_NOTE_CHARS // 3 else opening[0]
    head = _bounded(head, TEAM_NOTE_CHARS // 3, labels).rstrip()
    while head.endswith((":", "：")) and "\n" in head:  # "ends with:" over a log line left out
        head = head.rsplit("\n", 1)[0].rstrip()
    return head + "\n\n" + _bounded(text[fix.start():], TEAM_NOTE_CHARS, labels)


OTHER_PRODUCT_LINES = 3  # the lines quoted for a second product the question names
# Named by the asker, the other product's article needs less of the lead's relevance than an
# unasked alternative does (ALTERNATIVE_RELEVANCE): its lines must still share the question's words.
OTHER_PRODUCT_RELEVANCE = 0.6


def _other_products(kb, result: Retrieval, lang: str, labels: dict, cites: "_Cites") -> list[str]:
    """The other product's half of a question that names two ("the default max_num_seqs in
    vLLM v1 and FastDeploy", "vllm 和 fastdeploy 分别"): the answer quoted FastDeploy's
    article alone, and the vLLM default it holds a few places down was not said. The lines
    of that product's best article that share the most of the question's words are quoted."""
    from .scope import PRODUCT_NAMES

    top = result.articles[0]
    asked = result.scope.products - result.scope.contrasted
    if top.passage or len(asked) < 2 or top.product not in asked:
        return []
    words = set(kb.index.tokenizer(result.question)) - set(kb.index.tokenizer(" ".join(asked)))
    out: list[str] = []
    for product in sorted(asked - {top.product}):
        art = next((a for a in result.articles[1:6] if a.product == product and not a.passage
                    and a.relevance >= OTHER_PRODUCT_RELEVANCE * top.relevance), None)
        if art is None:
            continue
        chunk = _in_lang(kb, art, lang, question=result.question)
        lines = [line.strip() for line in chunk.text.splitlines() if line.strip() and not line.startswith(("```", "|"))]
        shared = [len(words & set(kb.index.tokenizer(line))) for line in lines]
        best = sorted(range(len(lines)), key=lambda i: -shared[i])[:OTHER_PRODUCT_LINES]
        floor = max(3, 0.6 * max(shared, default=0))  # the lines about the question, not the chunk's neighbours
        kept = [lines[i] for i in sorted(best) if shared[i] >= floor]
        name = PRODUCT_NAMES.get(product, product)
        if kept:  # a fact the question asks for ("the default max_num_seqs")
            out += ["", f"**{name}:** {chunk.title.split(' > ')[0]} {cites.ref(chunk, art.score)}", "",
                    _bounded("\n".join(kept), TEAM_NOTE_CHARS, labels)]
        else:  # a symptom both have: that product's article, told apart, with its first fix
            out += ["", f"**{name}:**", *_alternative(kb, art, lang, labels, cites)]
    return out


def _unboosted(art: ArticleMatch) -> float:
    """An article's relevance without its signature boost: a pasted error line matches a
    signature only a curated article declares, and the lead it gives is no sign that a team's
    section on the same error ranks far behind ("ncclCommInitRank failed … TP=4 on k8s" left
    the team's shm.sizeLimit note unquoted)."""
    if not art.signatures:
        return art.relevance
    return art.dense if art.other_lang_only else 0.5 * art.dense + 0.5 * art.coverage


def _alternative(kb, art: ArticleMatch, lang: str, labels: dict, cites: "_Cites") -> list[str]:
    if art.passage:
        # A section of a team's page: offered by what matched, not by the page's first
        # section ("请求卡住" offered a runbook's "一、显存不足" under its citation).
        best = _in_lang(kb, art, lang)
        return [f"- **{_display_title(best.title, best.source)}** {cites.ref(best, art.score)} — {labels['tell']}: "
                f"{_first_sentence(best.text)}"]
    doc_lang, _ = _pick_lang(kb, art.doc_id, lang)
    chunks = kb.article_chunks(art.doc_id, doc_lang)
    title = chunks[0].title.split(" > ")[0] if chunks else art.doc_id
    hint_chunk = _section(chunks, "symptoms") or (chunks[0] if chunks else None)
    hint = _first_sentence(hint_chunk.text) if hint_chunk else ""
    meta = kb.index.docs.get(f"{art.doc_id}:{doc_lang}")
    if meta and meta.signatures:
        # Said as what it is: a bare `Waiting for free blocks in KV cache` after the symptom read as a stray fragment.
        hint = f"{hint.rstrip()} ({labels['log_line']} `{meta.signatures[0]}`)" if hint else f"{labels['log_line']} `{meta.signatures[0]}`"
    ref = cites.ref(hint_chunk, art.score) if hint_chunk else ""
    out = [f"- **{title}** {ref} — {labels['tell']}: {hint}"]
    fixes = _section(chunks, "fixes")
    if fixes:
        out.append(f"  - {labels['first_fix']} {cites.ref(fixes, art.score)}: {_fix_hint(fixes.text)}")
    return out


_ABOUT_KB = re.compile(
    r"^\W*(?:(?:what|which)\s+(?:topics?\s+|subjects?\s+|things?\s+|questions?\s+)?(?:do|can|does)\s+(?:you|this\s+(?:assistant|bot|kb|tool)"
    r"|the\s+(?:assistant|bot|kb|knowledge\s+base))\s+(?:know|cover|answer|help\s+with|do)(?:\s+about)?"
    r"|what\s+can\s+(?:you\s+(?:do|answer|help\s+with)|i\s+ask(?:\s+you)?)|what\s+(?:is|'s)\s+in\s+(?:this|the|your)\s+(?:kb|knowledge\s+base)"
    r"|help|你(?:能|会|可以)(?:回答|做|干|帮我做?)(?:些)?(?:什么|哪些)(?:问题)?|你(?:都)?知道(?:些|哪些)?什么|你是谁|能问(?:你)?(?:些)?什么"
    r"|(?:这个)?(?:知识库|助手|你)(?:里)?(?:都)?(?:覆盖|包含|包括|有)(?:了)?(?:哪些|什么)(?:内容|主题|话题)?)\W*$", re.I)


def about_the_kb(text: str) -> bool:
    """Whether a question asks what the assistant knows rather than about a problem."""
    return len(text) <= 80 and bool(_ABOUT_KB.match(text.strip()))


def _kb_overview(kb, lang: str, limit: int = 30) -> str:
    """Every topic of the KB in use, by its documents' titles, and how to add more."""
    labels = texts("answer", lang)
    topics, total = _kb_topics(kb, [], lang, limit)
    lines = [labels["covers_all"].format(n=total), *[f"- {topic}" for topic in topics]]
    if total > len(topics):
        lines.append(labels["more"].format(n=total - len(topics)))
    return "\n".join([*lines, "", _add_docs_hint(kb, labels)])


def _kb_topics(kb, nearest: list[str], lang: str, limit: int = 6) -> tuple[list[str], int]:
    """What *this* KB covers, as its documents' own titles: the ones nearest the question
    first, then the rest, so a refusal on a team's own runbooks names their topics."""
    titles: dict[str, str] = {}
    for meta in kb.index.docs.values():
        if meta.id not in titles or meta.lang == lang:
            titles[meta.id] = _doc_label(kb, meta)
    order = nearest + sorted(titles)
    seen: list[str] = []
    for doc_id in order:
        if doc_id in titles and doc_id not in seen and not _is_overview(kb, doc_id):
            seen.append(doc_id)
    return [titles[d] for d in seen[:limit]], len(titles)


def _doc_label(kb, meta) -> str:
    """A document's title, or — for a file whose only title is its name — its first
    few section headings, which say more about what it covers."""
    stem = meta.source.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if meta.title != stem or _named_by_title(stem):
        return meta.title
    sections: list[str] = []
    for chunk in kb.article_chunks(meta.id, meta.lang):
        name = _display_title(chunk.title, chunk.source)
        if name and name not in sections and name != stem:
            sections.append(name)
    return " · ".join(sections[:4]) or meta.title


PLATFORM_CLOSE_COVERAGE = 0.3  # of the question's keywords in the article (0.18–0.25 for the unrelated ones the trial saw)
_PLATFORM_TAGS = frozenset({"vllm", "fastdeploy", "cuda", "nvidia", "nvidia-smi", "gpu"})  # say where, not what


def _names_a_tag(kb, doc_id: str, question: str) -> bool:
    """Whether the question names one of the article's subjects, as its tags list them: "vllm
    on MI300X: OOM at startup" is the OOM article's subject in four words, too few to cover
    a third of its keywords (review)."""
    low = question.lower()
    tags = {str(tag).lower() for meta in kb.index.docs.values() if meta.id == doc_id for tag in getattr(meta, "tags", ())}
    return any(re.search(rf"(?<![\w-]){re.escape(tag)}(?![\w-])", low) if tag.isascii() else tag in low
               for tag in tags - _PLATFORM_TAGS if len(tag) >= 2)


def _refusal(kb, result: Retrieval, lang: str, labels: dict, cites: "_Cites") -> tuple[str, str]:
    """Say what the KB does and does not cover. When the symptom is covered but the
    question's platform, product or key subject is not, name both: the closest article
    is shown as what the KB says in general, never as the fix for this case."""
    from .scope import HARDWARE_NAMES, PRODUCT_NAMES

    top = result.articles[0] if result.articles else None
    title = ""
    ref = ""
    if top is not None:
        doc_lang, _ = _pick_lang(kb, top.doc_id, lang)
        chunks = kb.article_chunks(top.doc_id, doc_lang) or [top.chunks[0].chunk]
        chunk = next((c for c in chunks if top.passage and c.title == top.passage), None) or top.chunks[0].chunk
        if not top.passage:
            chunk = chunks[0] if chunks[0].lang == doc_lang else chunk
        title = _display_title(chunk.title, chunk.source) if top.passage else chunk.title.split(" > ")[0]
    lines: list[str] = []
    coverage = "none"
    far = False  # "no article close to this question": then no list of the closest either
    unseen = _said_unseen(result)
    # On another platform the closest article is named only when its symptom is the asker's:
    # the log line it lists, a share of its words, or one of its tags. The refusal model, generous with an
    # error line, named the multi-node NCCL article for "HIP error: invalid device function"
    # and a TPU "RESOURCE_EXHAUSTED … hbm" (trial).
    named = top is not None and result.symptom_covered and (
        not top.hardware_conflict or bool(top.signatures) or top.coverage >= PLATFORM_CLOSE_COVERAGE
        or _names_a_tag(kb, top.doc_id, result.question))
    if named and (top.hardware_conflict or unseen or result.foreign_products):
        ref = cites.ref(chunk, top.relevance)  # cited only where the text names it
    if top is not None and top.hardware_conflict:
        platforms = ", ".join(HARDWARE_NAMES.get(h, h) for h in top.hardware_conflict)
        declared = ", ".join(HARDWARE_NAMES.get(h, h) for h in _article_hardware(kb, top.doc_id)) or "NVIDIA/CUDA"
        if named:
            lines.append(labels["platform"].format(title=title, ref=ref, declared=declared, platform=platforms))
            coverage = "partial"
        else:
            # Named as "the closest article, whose fix may not apply", an unrelated one read as
            # the topic: TPU recompilation got the multi-GPU NCCL article (trial). Nor are
            # "closest topics" listed under "no article close to this question" (review).
            lines.append(labels["platform_only"].format(declared=declared, platform=platforms))
            far = True
    elif top is not None and (unseen or result.foreign_products) and result.symptom_covered:
        missing = ", ".join(_subjects(result, lang, kb.index) + [PRODUCT_NAMES.get(p, p) for p in result.foreign_products])
        lines.append(labels["partial"].format(title=title, ref=ref, missing=missing))
        coverage = "partial"
    else:
        lines.append(labels["nothing"])
        missing = _subjects(result, lang, kb.index) + [PRODUCT_NAMES.get(p, p) for p in result.foreign_products]
        named = {m.lower() for m in missing}
        asked = [n for n in result.asked_unknown if n not in result.unknown_params]  # a field the asking sentence names
        missing += [f"`{name}`" for name in [*result.unknown_params[:3], *asked][:3] if name.lower() not in named]
        if missing:
            lines.append(labels["missing"].format(missing=", ".join(missing)))
    topics, total = _kb_topics(kb, [a.doc_id for a in result.articles], lang)
    if topics:
        lines += ["", labels["covers" if total > len(topics) else "covers_all"].format(n=total)]  # "among others" only when there are others
        lines += [f"- {topic}" for topic in topics]
        if total > len(topics):
            lines.append(labels["more"].format(n=total - len(topics)))
    lines += ["", _add_docs_hint(kb, labels)]
    if coverage == "none" and result.articles and not far:
        lines += ["", labels["closest"] + ("：" if lang == "zh" else ":")]
        for art in result.articles[:2]:
            chunk = _in_lang(kb, art, lang)  # named in the asker's language when there is a twin
            name = _display_title(chunk.title, chunk.source) if art.passage else chunk.title.split(" > ")[0]
            lines.append(f"- {name} {cites.ref(chunk, art.relevance)}")
    return "\n".join(lines), coverage


_ASKED_AS = re.compile(r"(?:how|what|why|which|怎么|如何|为什么|怎样)", re.I)


def _subjects(result: Retrieval, lang: str, index=None) -> list[str]:
    """The near-domain subjects the KB lacks, by name ("LoRA", "CORS"). In a Chinese answer an
    English phrase ("dashboards and alerting") is replaced by the word the asker used (告警,
    Grafana, guided_json). So is a subject the KB does name when only the asker's word is
    missing: a team's docs with a Kubernetes page have nothing on an *ingress*, and saying
    "nothing on Kubernetes" under a list that shows that page reads as a contradiction."""
    if result.scope is None:
        return list(result.unseen)
    said = getattr(result.scope, "entity_terms", {}) or {}

    from .scope import PHRASE_SUBJECTS_ZH

    def name(subject: str) -> str:
        if subject in PHRASE_SUBJECTS_ZH:  # named by a phrase ("are not supported for now"): the subject's own name reads better
            return PHRASE_SUBJECTS_ZH[subject] if lang == "zh" else subject
        if _ASKED_AS.match(said.get(subject, "")):
            return subject  # found by how it is asked ("how do i fine-tune"): "It has nothing on how do I fine-tune" (trial)
        if subject in said and index is not None and said[subject].lower() != subject.lower():
            from .scope import covers

            if covers(index, subject.lower()):
                return as_written(subject)
        if lang != "zh" or subject not in said or (" " not in subject and not any(is_cjk(ch) for ch in said[subject])):
            return subject
        return as_written(subject)

    def as_written(subject: str) -> str:
        """The asker's spelling ("Grafana", "guided_json"; scope matched it lower-cased and
        with `_` as `-`), or the subject's name when it cannot be found as written."""
        # The whole name when the asker's word is part of it ("speculative decoding", not
        # "speculative"); their own word when it is another ("guided_json" for structured output).
        whole = said[subject].replace("-", " ").lower() in subject.replace("-", " ").lower()
        for term in ((subject, said[subject]) if whole else (said[subject],)):
            found = re.search(re.escape(term).replace("\\-", "[-_ ]").replace("\\ ", "[-_ ]"), result.question, re.I)
            if found:
                return found.group(0)
        return subject

    return list(dict.fromkeys(name(s) for s in _said_unseen(result)))


def _said_unseen(result: Retrieval) -> list[str]:
    """The unseen subjects the asker's sentences name (and platforms): "--enable-lora" in a
    pasted command made a throughput question's refusal say "nothing on LoRA"."""
    scope = result.scope
    if scope is None:
        return list(result.unseen)
    entities, said = set(scope.entities), set(getattr(scope, "said_entities", ()) or ())
    return [s for s in result.unseen if s not in entities or s in said]


def _article_hardware(kb, doc_id: str) -> list[str]:
    from .scope import article_hardware

    for meta in kb.index.docs.values():
        if meta.id == doc_id:
            return sorted(article_hardware(meta))
    return []


def _article_text(kb, art: ArticleMatch, lang: str) -> str:
    doc_lang, _ = _pick_lang(kb, art.doc_id, lang)
    return "\n".join(c.text for c in kb.article_chunks(art.doc_id, doc_lang)).lower().replace("_", "-")


def _setting_in(text: str, name: str) -> bool:
    """Whether an article's text (`_article_text`) writes a setting. A one-word setting (--host,
    --port, --model) must appear as a setting, not as the word every article uses: an OOM
    answer quoted back "--host 0.0.0.0, --port 8000"."""
    word = setting_key(name)
    if "-" not in word:
        # "--ipc" written as a flag is one ("加了 --ipc=host 还是不行"), though "ipc" is short.
        long_enough = len(word) >= 4 or (name.startswith("--") and len(word) >= 2)
        return long_enough and (f"--{word}" in text or re.search(rf"\b{re.escape(word)}\s*[=:]", text) is not None)
    return len(word) >= 4 and word in text


TRIED_ENOUGH = 2


def _tried_its_fixes(kb, art: ArticleMatch, lang: str, question: str) -> bool:
    """Whether the asker says they tried TRIED_ENOUGH or more of the settings the article
    writes: "--ipc=host、--shm-size=16g 都加了，NCCL_P2P_DISABLE=1 也试过，还是报 NCCL error" was
    given those three as the fix, as sure (trial). The article may still hold the answer, so
    it is a close call, not a refusal."""
    from .cleaning import tried_settings

    tried = tried_settings(question, explicit=True) if question else []
    if not tried or art.passage:
        return False
    if any(_setting_in(_first_fix(kb, art, lang), name) for name in tried):
        return True
    text = _article_text(kb, art, lang)
    return sum(1 for name in tried if _setting_in(text, name)) >= TRIED_ENOUGH


def _unsaid_oom(kb, art: ArticleMatch, question: str) -> bool:
    """Whether the question is about running out of memory and the cited document, in every
    language it has, never deals with memory: its subject matched, not its symptom.
    "prompt_logprobs=20 makes vllm OOM" was given the logprobs-nondeterminism article as sure,
    "2080TI 跑 32B-GPTQ 一直报显存不足" the CPU-only torch one (Left list, dev)."""
    from .symptoms import deals_with_memory, denied, named

    if "oom" not in named(question) or "oom" in denied(question):
        return False
    texts_ = ["\n".join(c.text for c in kb.article_chunks(art.doc_id, lang)).lower().replace("_", "-")
              for lang in kb.article_langs(art.doc_id)]
    return bool(texts_) and not any(deals_with_memory(text) for text in texts_)


# A title that only suspects the failure ("vLLM seems stuck: debug logging switches") is about
# something else: "vllm is not stuck, but I want debug logging" is its question (review).
_HEDGED_FAILURE = re.compile(r"seems? (?:to be )?(?:stuck|hung|to hang)|looks? stuck|疑似卡[死住]", re.I)


def _denied_symptom(art: ArticleMatch, question: str) -> str | None:
    """The failure the best match's title names that the asker says does not happen: "请求也没有
    卡住" under "requests get stuck after enabling logprobs", "nothing hangs" under "requests
    never return" (trial: both answered as sure, 0.96–0.97)."""
    from .symptoms import denied, named

    said_not = denied(question)
    if not said_not or not art.chunks:
        return None
    title = _HEDGED_FAILURE.sub(" ", art.passage or art.chunks[0].chunk.title.split(" > ")[0])
    return next((name for name in ("hang", "oom", "preempt", "startup", "slow") if name in said_not and name in named(title)), None)


_NEXT_ITEM = re.compile(r"\n\s*2[.)、]\s")


def _first_fix(kb, art: ArticleMatch, lang: str) -> str:
    """The article's first fix, as `_article_text` writes it. Tried already, it leaves the
    article a close call on its own: "已经加了 --enforce-eager 还是报 illegal memory access" was
    given the CUDA-graph article as sure, its first fix being that very flag (Left list)."""
    doc_lang, _ = _pick_lang(kb, art.doc_id, lang)
    fixes = _section(kb.article_chunks(art.doc_id, doc_lang), "fixes")
    if fixes is None:
        return ""
    # Only a numbered list has a first fix, after at most a line of prose ("If it happens often:");
    # a table of fixes (the OOM article's) is one whole.
    text = fixes.text
    first = re.search(r"(?m)^\s*1[.)、]\s", text)
    end = _NEXT_ITEM.search(text, first.end()) if first else None
    if first is None or end is None or "|" in text[:first.start()]:
        return ""
    return text[first.start():end.start()].lower().replace("_", "-")


def _your_settings(kb, art: ArticleMatch, lang: str, labels: dict, flags: dict[str, str], question: str = "") -> list[str]:
    """Flags pasted with the question that the article talks about, quoted back as facts:
    "you run with `--gpu-memory-utilization 0.97`" makes "lower it" concrete. Settings the
    asker says were tried or are set already are said so: "HF_ENDPOINT 设了 hf-mirror" got
    `export HF_ENDPOINT=https://hf-mirror.com` as its first fix, as if it were news."""
    from .cleaning import tried_settings

    tried = tried_settings(question) if question else []
    over = _context_overflow(question, labels)
    if not flags and not tried:
        return over
    text = _article_text(kb, art, lang)
    bare = setting_key

    def in_article(name: str) -> bool:
        return _setting_in(text, name)

    # A setting pasted with its value stays under "your command line", value and all, even
    # when a sentence says it was tried: lowering that value may still be the fix.
    # One named with no value in the sentence that says it did not help ("调了 --max-model-len
    # 也没用") is only tried: quoted back as "your command line", it read as the setting to change.
    tried_names = {bare(name) for name in tried}
    pasted = {bare(flag) for flag, value in flags.items() if value or bare(flag) not in tried_names}
    # Tried and still on the command line: both are said. A chat follow-up ("tried that, still
    # OOM") marks the first answer's setting tried; said only as "your command line", the
    # second answer was the first one word for word.
    said = [f"`{name}{_tried_value(question, name)}`" for name in tried if in_article(name)]
    named = [f"`{flag}{' ' + value if value and flag.startswith('--') else ('=' + value if value else '')}`"
             for flag, value in flags.items() if in_article(flag) and bare(flag) in pasted]
    out = []
    if named:
        out += ["", f"**{labels['yours']}:** " + ", ".join(named[:6])]
        if _RAISE_UTILIZATION.search(text):  # the preemption and KV-cache articles, not the OOM one
            out += _near_ceiling(flags, labels)
    if said:
        out += ["", f"**{labels['tried']}:** " + ", ".join(said[:6])]
    return over + out


# Between a setting and its value: "=", "is", "set to", "已经降到"; and, after a first value, the
# second of "from 32768 to 8192" / "从 0.95 降到 0.8".
_VALUE_GAP = (r"[ \t=:：]*(?:(?:is|was|now|at|set to|to|of|from|already|已经|已|都|现在|目前|从|设为|设成|设置为|设置成|改成|改为"
              r"|调到|调成|降到|降低到|调低到|调整为|为|是)[ \t]*)*")
_NUMBER = r"(\d[\d.,]*[kKmMgG]?)(?![\w.])"
_THEN_TO = (r"[ \t]*(?:(?:down |up )?to|→|->|=>|(?:降|改|调|设|升|加|减)(?:低|小|大|高|少)?(?:到|成|为)了?|到)[ \t]*"
            + _NUMBER)
# Switches take no value: "tried --enforce-eager already 3 times" is no "--enforce-eager 3" (review).
_SWITCH = re.compile(r"(?:^|-)(?:enable|disable|no|enforce|trust|use)-", re.I)
_FROM = re.compile(r"(?:\bfrom|从)[ \t]*$")


def _tried_value(question: str, name: str) -> str:
    """The value the asker says a tried setting has now, " 8192" of "max-model-len 已经降到 8192 了，
    还是 OOM" (it was said back as `max-model-len` alone, trial); the second of "from 32768 to
    8192"; "" when the words after the name give none ("--enforce-eager on 2 GPUs", review)."""
    if _SWITCH.search(name.lstrip("-").replace("_", "-")):
        return ""
    # the last time it is named: "… --max-model-len 32768 …\nI lowered --max-model-len to 8192" runs 8192 now
    found = list(re.finditer(re.escape(name) + r"(?![\w-])" + _VALUE_GAP + _NUMBER, question))
    if not found:
        return ""
    last = found[-1]
    then = re.match(_THEN_TO, question[last.end():])
    if then is None and _FROM.search(question[:last.start(1)]):
        return ""  # "from 32768" with no target: the old value, not the one in use
    return f" {(then or last).group(1).rstrip('.,')}"


# vLLM's 400 for a request longer than the context, with the asker's numbers in it.
_CONTEXT_OVERFLOW = re.compile(r"maximum context length is (\d+) tokens\.\s+However,\s+you requested (\d+) tokens\s+"
                               r"\((\d+) in the messages,\s+(\d+) in the completion\)")


def _context_overflow(question: str, labels: dict) -> list[str]:
    """The most `max_tokens` can be with the asker's own numbers: the article writes "≤ N − X"
    beside its example line (8192 / 1120), and the asker's 32768 / 1792 were left to do by hand (trial)."""
    m = _CONTEXT_OVERFLOW.search(question)
    if m is None:
        return []
    limit, requested, messages, completion = (int(g) for g in m.groups())
    if messages >= limit or messages + completion != requested:
        return []  # a prompt alone over the limit, or numbers that do not add up: nothing to compute
    return ["", f"**{labels['yours_numbers']}:** " + labels["context_overflow"].format(
        limit=limit, messages=messages, most=limit - messages, asked=completion)]


_RAISE_UTILIZATION = re.compile(r"(?:raise|increase|higher|调高|提高|加大)[^\n]{0,40}gpu-memory-utilization")


def _mostly_in(text: str, lang: str) -> bool:
    """Whether a quoted text is mostly in `lang`: its Chinese characters against its Latin
    letters (a character says about what two or three letters do). One Chinese line in an
    English section ("注意：改完要重启网关。") does not make it Chinese. Code does not count:
    "摘流量：`kubectl annotate svc embed drain=true`" is a Chinese step."""
    prose = re.sub(r"```.*?(?:```|$)|`[^`\n]*`", " ", text, flags=re.S)
    han = sum(1 for ch in prose if is_cjk(ch))
    latin = sum(1 for ch in prose if ch.isascii() and ch.isalpha())
    chinese = han * 3 >= latin
    return chinese if lang == "zh" else not chinese


def _near_ceiling(flags: dict[str, str], labels: dict) -> list[str]:
    """Said under the asker's settings when their gpu_memory_utilization is 0.95 or more: the
    preemption and KV-cache fixes start with "raise gpu_memory_utilization", and a log run at
    0.95 that ended in CUDA out of memory was told to raise it further."""
    from .tools.logs import at_ceiling

    hit = at_ceiling(flags)
    return ["", labels["near_ceiling"].format(flag=f"`{hit[0]} {hit[1]}`")] if hit else []


def _passages_body(kb, result: Retrieval, lang: str, labels: dict, cites: "_Cites", top_k: int) -> list[str]:
    """Answer from the best passages of documents without article structure: each
    passage (a section, with its subsections) under its own heading path, cited on its
    own, in the asker's language when the document has a twin in it. Passages that score
    well below the best are left out."""
    top = result.articles[0]
    from .names import asked_codes, names_code

    codes = asked_codes(result.question)
    # Other sections of the best document that also matched come after it, under their own
    # headings: a page's introduction often matches best, the commands sit a heading below.
    # They get the room the best passage and the alternatives leave, never theirs.
    # The KB's best keyword match is one too, however far its wording is from the question's:
    # "which AMD GPUs are supported" reads like the Docker build section, while the
    # Requirements list below it holds every word asked ("RX 7900 Series (gfx1100)").
    # So is a section with a line that lists the code the question names ("Xid 79" in a table
    # of Xid codes), however little else of the question it shares.
    siblings = [art for art in result.articles[1:SIBLING_RANKS] if art.doc_id == top.doc_id and art.passage
                and (art.relevance >= SIBLING_RELEVANCE * top.relevance
                     or any(sc.keyword >= BEST_KEYWORD or names_code(sc.chunk.text, codes) for sc in art.chunks))][:MAX_SIBLINGS]
    aside = {id(art) for art in result.articles[1:] if art.doc_id == top.doc_id and _opening_aside(kb, art, top, result.question)}
    siblings = [art for art in siblings if id(art) not in aside]
    others, beside = _close_others(result, siblings, top_k, aside)
    hits = {sc.chunk.chunk_id: sc.score for art in result.articles for sc in art.chunks}
    from .scope import sentences

    # What the sentences (and error lines) name, not a pasted config or command: a setting
    # the asker already uses is no sign that its row alone answers.
    said = sentences(result.question)
    tried = _tried_names(said)
    asked = frozenset() if _asks_for_another_setting(said) else asked_identifiers(said) - tried
    asked |= frozenset(codes)  # "Xid 79": the row of a long code table whose first cell is 79
    asked |= _described_rows(kb, top, said, asked, tried)
    passages = {id(art): _passage(kb, art, lang, labels, hits, asked, result.question) for art in (top, *others)}
    brought = _fix_sibling(kb, passages[id(top)][0], [*siblings, *others], said)
    steps = [] if brought else _steps_after_opening(kb, passages[id(top)], siblings)
    brought += [art for art in steps if art not in siblings]
    others = _room_for_fixes(kb, top, [*brought, *(art for art in siblings if art in steps or _is_fix_section(art.passage))],
                             others, passages, len(beside), labels)
    siblings = brought + siblings
    siblings += _followers(kb, passages[id(top)][0], [*siblings, *others])
    siblings += _step_gaps(kb, top, siblings)
    quoted = {key: (best, text) for key, (best, text, _rest) in passages.items()}
    room = (MAX_ANSWER_CHARS - SIBLING_RESERVE - BESIDE_RESERVE * len(beside)
            - sum(len(text) + len(best.title) for best, text in quoted.values()))
    floor = CONTINUATION_SHARE * hits.get(passages[id(top)][0].chunk_id, top.chunks[0].score)
    rest, hits = _continuation(kb, passages[id(top)][0], passages[id(top)][2], hits, floor)
    siblings, rest, hits = _twins_folded(kb, siblings, passages[id(top)], rest, hits, lang, result.question)
    rest = _rest_narrowed(passages[id(top)][0], rest, asked, hits)
    # A short page opening that says what to set ("use `--tool-call-parser` when you start the
    # api_server") takes its room before the best passage's continuation: a question on tool
    # calls matched the "multi-round calls" example further down, whose later chunks took the
    # room, and the flag was left out (dev trees). Any other opening only takes what is left.
    early, cost = _lead_that_sets(kb, quoted[id(top)], room, [best for best, _text in quoted.values()], result.question)
    continued, room = _extras(kb, siblings, rest, quoted, room - cost, lang, labels, hits, asked)
    lead = early or _lead(kb, quoted[id(top)][0], room, [best for best, _text in quoted.values()])
    if lead is not None and _says_none_asked(kb, lead[0], lead[1], result.question, quoted[id(top)][1]):
        lead = None  # "Collected from #infer-oncall threads. Ask in the channel…": the page, not the answer
    parts: list[str] = []
    shown: set[str] = set()
    # The sections quoted from the best passage's page keep the page's order: a procedure's
    # "Before the restart", "Restart", "After the restart" came back best match first, so
    # the drain step came last. The best match is still the first cited when it leads the page.
    # Only sections near the best one read as its steps: a reference page's distant section
    # ("Examples", three headings above "Embeddings") comes after the best match, not before.
    from_page = [art for art in (top, *siblings) if id(art) in quoted]
    where = {id(art): _section_position(kb, quoted[id(art)][0]) for art in from_page}
    near = [art for art in from_page if abs(where[id(art)] - where[id(top)]) <= PAGE_ORDER_SPAN]
    behind = _behind(kb, result.question, top, near, brought, where, quoted)
    page = sorted(near, key=lambda art: (id(art) in behind, _position(kb, quoted[id(art)][0]))) + sorted(
        (art for art in from_page if art not in near), key=lambda art: _position(kb, quoted[id(art)][0]))
    repeated: list[str] = []
    other_lang_said = False
    untitled = None  # (where, chunk, score) of a first heading shown without a citation
    for art in (*page, *others):
        best, text = quoted[id(art)]
        if best.chunk_id in shown:
            continue  # the other language's section of the same passage: it maps back to one quote
        shown.add(best.chunk_id)
        heading = _display_title(best.title, best.source)
        if art in others and _mostly_quoted(text, parts):
            repeated.append(f"{heading} {cites.ref(best, art.score)}")
            continue
        text = _leading_bylines_dropped(text) if _position(kb, best) == 0 else text
        if not text.strip():
            # A section that is nothing but its page's byline ("Owner: SRE team. Last updated
            # …") says nothing: its heading still titles the page when it comes first, but it
            # is not cited for text the answer does not show.
            if not parts:
                parts.append(f"### {heading}")
                untitled = (len(parts) - 1, best, art.score)
            if art is top:
                parts += _top_extras(kb, heading, best, art.score, continued, lead, labels, cites)
            continue
        # The citation goes on the heading's line: alone on its own, "[1]" read as a stray line.
        parts += _heading_lines(heading, cites.ref(best, art.score), first=not parts, on_page=art in page, labels=labels)
        # A document's language is its body's; the section quoted may be in the asker's all the
        # same (an English FAQ's Chinese entry was labelled "English original only").
        if best.lang != lang and not other_lang_said and not _mostly_in(text, lang):
            # No twin in the asker's language (a twin's passage is quoted instead): said over
            # the first such quote, which is not the best match's when the page order puts
            # its introduction first.
            fuller = bool(kb.article_chunks(best.doc_id, lang))  # a twin exists, but lacks what was asked
            parts += [labels["other_lang_fuller" if fuller else "other_lang_passage"], ""]
            other_lang_said = True
        parts.append(_tidy(text))
        if art is top:
            parts += _top_extras(kb, heading, best, art.score, continued, lead, labels, cites)
    if untitled is not None and not cites.items:
        at, best, score = untitled  # nothing else was quoted: the title is all there is to cite
        parts[at] += f" {cites.ref(best, score)}"
    if repeated:
        parts += ["", f"{labels['same_text']}: " + "; ".join(repeated)]
    if beside:
        parts += ["", f"**{labels['also']}:**"]
        for art in beside:
            parts += _alternative(kb, art, lang, labels, cites)
    return parts


def _behind(kb, question: str, top: ArticleMatch, near: list, brought: list, where: dict, quoted: dict) -> set[int]:
    """The sections of the best passage's page that come after it although the page has them
    above: what reads as the page's introduction, a fix brought beside it, and sections that
    are topics side by side with it rather than steps before it."""
    from .scope import sentences

    # A page's opening of sentences, matched beside a section further down, comes after that
    # section: it says what the page covers ("This page covers the three GPU-node incidents we
    # see most"), and led the answer ahead of the Xid section a pasted log matched (trial).
    behind = {id(art) for art in near if art is not top and where[id(art)] == 0 and _plain_opening(kb, quoted[id(art)][0])}
    # So does the page's fix brought beside a section further down that the question asked
    # for: "how do I roll back a bad deploy" quoted "Mitigation" (scale out, eject endpoints)
    # above the "Rollback" section it matched best (trial).
    behind |= {id(art) for art in brought if id(art) in where and where[id(art)] < where[id(top)]}
    # And any section above a FAQ entry whose heading names the question's error: a FAQ's
    # entries are no steps, and the Docker entry above it led the answer to "$'\r': command not
    # found", its `sed` fix quoted second (new trees). Only there: a procedure keeps its order.
    # So does a section above one that lists the pasted message in its block of errors
    # ("models directory does not exist: <path>"): the transport errors above it led (newcomer).
    if _heading_names_its_error(kb, top) or (top.quotes_the_paste and top.signatures):
        behind |= {id(art) for art in near if not art.signatures and where[id(art)] < where[id(top)]}
    # And a section above that is keyed by a code the asker's sentences do not name, when they
    # name one and the best section is keyed by it or by none: "504 upstream request timeout"
    # matched "gateway returns 504 for long generations", and "Rate limiting" matched "gateway
    # returns 429", and "502 from the gateway" above each led the answer (newcomer). A
    # runbook's entries by status code, Xid or exit code are topics side by side, not steps;
    # "Step 2: restart vLLM on port 8080" is a step (review).
    asked = set(_CODE_NUMBER.findall(sentences(question)))
    code = _heading_code(quoted[id(top)][0].title)
    if asked and (code is None or code in asked):
        behind |= {id(art) for art in near if where[id(art)] < where[id(top)]
                   and _heading_code(quoted[id(art)][0].title) not in (None, *asked)}
    return behind


_CODE_NUMBER = re.compile(r"(?<![\w.])\d{3,5}(?![\w.])")
# A heading keyed by a code: the code first ("504 upstream request timeout"), or after the word
# that says what it numbers ("HTTP 429", "Xid 79", "Exit code 137", "错误码 500").
_KEYED_HEADING = re.compile(r"^\s*(?:(?:http|error|xid|exit code|status(?: code)?|code|错误码|状态码|返回码)\s*[:：#]?\s*)?"
                            r"(\d{2,5})(?![\w.])", re.I)


def _heading_code(title: str) -> str | None:
    """The code a section's own heading is keyed by, or None (a step's number is none)."""
    heading = title.split(" > ")[-1]
    m = _KEYED_HEADING.match(heading)
    return m.group(1) if m and _STEP_HEADING.match(heading) is None else None


def _heading_names_its_error(kb, art: ArticleMatch) -> bool:
    """Whether a passage matched by the question's error is a FAQ entry that names it in its
    heading (the messages retrieval read from the headings, retrieval.titled_samples)."""
    from .retrieval import titled_samples

    if not art.signatures or not art.chunks:
        return False
    chunk = art.chunks[0].chunk
    return any(sample in art.signatures for sample, _key in titled_samples(kb.index).get((chunk.doc_id, chunk.title), ()))


def _plain_opening(kb, chunk) -> bool:
    """Whether a chunk is its page's titled opening, a short one of sentences: no code block
    (an inline `Terminating` is still prose), no table."""
    chunks = kb.article_chunks(chunk.doc_id, chunk.lang)
    if not chunks or chunks[0].title != chunk.title or " > " in chunk.title.strip():
        return False
    text = _without_bylines("\n\n".join(c.text for c in chunks if c.title == chunk.title)).strip()
    return len(text) <= MAX_LEAD_CHARS and _has_prose(text) and not re.search(r"^\s*(?:```|~~~|\|)", text, re.M)


def _opening_aside(kb, art: ArticleMatch, top: ArticleMatch, question: str) -> bool:
    """A page's opening matched beside its section that answers, sharing none of the
    question's words but the page title's: "Collected from #infer-oncall threads. Ask in the
    channel if your question is not here." matched through the FAQ's title and was cited as a
    passage of its own (trial). Not quoted; the section that answers is."""
    if art is top or not art.chunks or not _plain_opening(kb, art.chunks[0].chunk):
        return False
    return _says_none_asked(kb, art.chunks[0].chunk, art.chunks[0].chunk.text, question, top.chunks[0].chunk.text if top.chunks else "")


def _says_none_asked(kb, chunk, text: str, question: str, answering: str) -> bool:
    """Whether a text shares none of the question's words but those of its own heading path,
    while the passage that answers (`answering`) shares some. A question made of the title's
    words only ("prefix caching on Ascend" of a page so titled) is the opening's to answer."""
    words = set(kb.index.tokenizer(question)) - set(kb.index.tokenizer(chunk.title))
    if not words or words & set(kb.index.tokenizer(text)):
        return False
    return bool(words & set(kb.index.tokenizer(answering)))


def _heading_lines(heading: str, ref: str, first: bool, on_page: bool, labels: dict) -> list[str]:
    """A quoted passage's heading: the answer's title, a section of the same page, or another page."""
    if first:
        return [f"### {heading} {ref}", ""]
    if on_page:
        return ["", f"{_bold(heading)} {ref}", ""]
    return ["", f"**{labels['also']}:** {heading} {ref}", ""]


def _add_docs_hint(kb, labels: dict) -> str:
    """How to add documents to the KB in use: under `--kb DIR`, plain `assistant ingest PATH`
    added them to the default KB's index, which `--kb DIR` never reads. The folder is not
    named: over HTTP or Slack it would show the server's paths."""
    from .config import bundled_kb_dir

    settings = getattr(kb, "settings", None)
    if settings is None or settings.kb_dir.resolve() == bundled_kb_dir().resolve():
        return labels["add_docs"]
    return labels["add_docs_kb"]


def _is_fix_section(passage: str) -> bool:
    """Whether a passage is a top-level section of its page headed as a fix ("解决方案", "Fix")."""
    from ingest.chunking import section_kind

    parts = passage.split(" > ")
    return len(parts) == 2 and section_kind(parts[1]) == "fixes"


def _room_for_fixes(kb, top: ArticleMatch, fixes: list, others: list, passages: dict, beside: int, labels: dict) -> list:
    """The alternatives cut down, the last first, and dropped if need be, so that the best
    page's fix comes after its symptom: its sections only took the room the alternatives
    left, and an FAQ page's "问题描述" was quoted with the error the asker pasted, beside two
    full passages from other pages, and without its "解决方案" (trial). The sections `_fix_sibling`
    brings (a fix, a symptom's cause, the step the question names) and the siblings headed as a
    fix, in the best passage's language (another language's is its twin, folded into it), and
    only when they then fit: a fix that cannot cost the alternatives nothing (review)."""
    lang = top.chunks[0].chunk.lang if top.chunks else ""
    fixes = [art for art in fixes if art.chunks and art.chunks[0].chunk.lang == lang]
    if not fixes or not others or _is_fix_section(top.passage):
        return others
    need = min(MAX_PASSAGE_CHARS, sum(len(c.text) + len(c.title) for art in fixes for c in _section_chunks(kb, art.chunks[0].chunk)))
    cuttable = [art for art in others if art.doc_id != top.doc_id]  # the page's own sections are not alternatives

    def short(without: list) -> int:
        used = sum(len(text) + len(best.title) for key, (best, text, _rest) in passages.items() if key not in without)
        return need - (MAX_ANSWER_CHARS - SIBLING_RESERVE - BESIDE_RESERVE * beside - used)

    if not cuttable or short([id(art) for art in cuttable]) - need > -MIN_SIBLING_CHARS:
        return others  # not even without the alternatives would a fix fit
    for art in reversed(cuttable):
        best, text, rest = passages[id(art)]
        if short([]) > 0 and len(text) > MIN_SIBLING_CHARS:
            passages[id(art)] = (best, _bounded(text, max(MIN_SIBLING_CHARS, len(text) - short([])), labels), rest)
    cut = {id(art) for art in cuttable}
    kept = list(others)
    while short([]) > 0 and any(id(art) in cut for art in kept):
        last = next(i for i in range(len(kept) - 1, -1, -1) if id(kept[i]) in cut)
        del passages[id(kept.pop(last))]
    return kept


def _close_others(result: Retrieval, siblings: list, top_k: int,
                  aside: frozenset[int] | set[int] = frozenset()) -> tuple[list[ArticleMatch], list[ArticleMatch]]:
    """The other passages close enough to the best one to quote after it, and the curated
    articles among them (a KB of both). Those are offered as the bundled answers offer one,
    by title, how to tell it apart and first fix: quoted as a passage, an article's
    best-matching section was "How people ask", a list of phrasings."""
    top = result.articles[0]
    others: list[ArticleMatch] = []
    for art in result.articles[1:]:
        if len(others) + 1 >= max(1, top_k):
            break
        if _wrong_hardware_beside(top, art) or id(art) in aside:
            continue  # (a page opening left out beside its own answer is not "also" either)
        # The hub penalty decides which passage leads, not whether a README's or a parameter
        # list's passage is close enough to quote after it: those often hold the flag asked for.
        if (art not in siblings and art.relevance >= PASSAGE_RELEVANCE * top.relevance
                and art.score + art.hub_penalty >= top.score - AMBIGUITY_MARGIN):
            others.append(art)
    return [art for art in others if art.passage], [art for art in others if not art.passage]


def _continuation(kb, best, left_out: list, hits: dict[str, float], floor: float) -> tuple[list, dict[str, float]]:
    """The chunks of the best passage's section that it left out and that may follow it:
    those that matched too, and the first chunk under the best chunk's own heading when
    it holds the steps. A matched chunk from the middle of a long section ("3. Analyze the
    report: Gemm, attention…") shares the question's words; the steps that begin it ("1. set
    AS_PROFILE=ON", "2. call get_op_profiling_info") sit in the heading's first chunk, which
    comes first, as if it had matched best."""
    rest = [c for c in left_out if hits.get(c.chunk_id, -1.0) >= floor]
    opening = _opening_with_steps(_section_chunks(kb, best), best)
    if opening is None or opening not in left_out:
        return rest, hits
    rest = [opening, *(c for c in rest if c != opening)]
    return rest, {**hits, opening.chunk_id: max(hits.get(c.chunk_id, 0.0) for c in [best, *rest]) + 1e-6}


def _rest_narrowed(best, rest: list, asked: frozenset[str], hits: dict[str, float]) -> list:
    """The continuation narrowed as the passage was: a big table's or a settings listing's
    other entries, and a reference entry's neighbours, only where they name what is asked."""
    rows = _row_kind(best, [best, *rest], asked)
    if rows is not None:
        rest = _entries_kept(rest, best, rows, asked, hits)
    return _entry_or_asked(rest, best, asked) if _names_entry(best, asked) else rest


def _opening_with_steps(section: list, best):
    """The first chunk under `best`'s heading, when `best` comes later, carries nothing to
    run or set, and the opening does. A matched chunk that does carry commands is the
    answer's own: a guide's long "Prepare" heading opens with generic tool installs."""
    if best is None or _actionable(best.text):
        return None
    first = next((c for c in section if c.title == best.title), best)
    return first if first.chunk_id != best.chunk_id and _actionable(first.text) else None


def _top_extras(kb, heading: str, best, score: float, continued, lead, labels: dict, cites: "_Cites") -> list[str]:
    """What follows the best passage: the rest of its section, then the page's opening."""
    out: list[str] = []
    if continued:
        # Quoted after the best passage, it may come from before it: said so, not "continued".
        where = "earlier" if _position(kb, continued[0]) < _position(kb, best) else "continued"
        out += ["", f"{_bold(f'{heading} {labels[where]}')} {cites.ref(continued[0], score)}", "", _tidy(continued[1])]
    if lead:
        title = _display_title(lead[0].title, lead[0].source) or lead[0].title
        out += ["", f"{_bold(title)} {cites.ref(lead[0], score)}", "", _tidy(lead[1])]
    return out


REPEAT_SHARE = 0.6


def _mostly_quoted(text: str, parts: list[str]) -> bool:
    """Whether a passage mostly repeats what the answer already quotes: man pages include
    one options file each, and a translated README repeats its code, so "It could also be"
    quoted the same table two and three times. Its source is still named and cited. Lines
    are compared as written but for their list marker, case and version numbers: a Helm
    chart's README and the install guide beside it say the same thing with `*` for `-` and
    chart 1.4.0 for 1.4.2, and the copy took half the answer (newcomer)."""
    lines = {_line_key(line) for line in text.splitlines() if len(line.strip()) >= 20}
    if not lines:
        return False
    shown = {_line_key(line) for part in parts for line in part.splitlines()}
    return len(lines & shown) >= REPEAT_SHARE * len(lines)


_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,2}[.)])\s+")
_VERSION = re.compile(r"\bv?\d+(?:\.\d+)+\b")


def _line_key(line: str) -> str:
    return " ".join(_VERSION.sub("#", _LIST_MARKER.sub("", line)).lower().split())


def _section_position(kb, chunk) -> int:
    """Which section of its document (in its language) a chunk belongs to, counting
    distinct heading paths in page order: a long section's many chunks count once."""
    titles: list[str] = []
    for c in kb.article_chunks(chunk.doc_id, chunk.lang):
        if not titles or titles[-1] != c.title:
            titles.append(c.title)
        if c.chunk_id == chunk.chunk_id:
            return len(titles) - 1
    return len(titles)


def _position(kb, chunk) -> int:
    """Where a chunk stands in its document (in its language)."""
    ids = [c.chunk_id for c in kb.article_chunks(chunk.doc_id, chunk.lang)]
    return ids.index(chunk.chunk_id) if chunk.chunk_id in ids else len(ids)


def _followers(kb, best, quoted: list) -> list[ArticleMatch]:
    """When the best passage is a page's opening, the sections after it, in order: a guide's
    introduction says what the page does ("deploying a tp=16 model across two nodes") and
    matches the question best, while the steps that answer it sit under the next headings
    and share fewer of its words. They fill whatever room is left last (score 0). Only an
    introduction leads: on a page without one (a troubleshooting page that opens with its
    first `##` problem) the first section is a topic like the others, and its neighbours are
    other problems."""
    from .retrieval import ScoredChunk, section_key

    chunks = kb.article_chunks(best.doc_id, best.lang)
    if not chunks or section_key(chunks[0].title) != section_key(best.title):
        return []
    if " > " in chunks[0].title and not _untitled_introduction(kb, chunks):
        return []
    taken = {section_key(best.title)} | {art.passage for art in quoted if art.doc_id == best.doc_id}
    out: list[ArticleMatch] = []
    for chunk in chunks:
        key = section_key(chunk.title)
        if key in taken:
            continue
        taken.add(key)
        out.append(ArticleMatch(chunk.doc_id, 0.0, 0.0, chunks=[ScoredChunk(chunk, 0.0, 0.0, 0.0)], passage=key))
        if len(out) == MAX_FOLLOWERS:
            break
    return out


def _steps_after_opening(kb, passage: tuple, siblings: list) -> list[ArticleMatch]:
    """When the best passage is a page's opening with nothing to run or set, the first
    section after it that has something: a guide's opening says what the page does ("the
    proxy distributes requests over several api_servers, achieving load balancing") and
    matched "how do I put them behind one URL", while `lmdeploy serve proxy` sat under
    "Startup", the next heading. Matched too, that section only took the room the other
    pages' passages left, and there was none (dev trees). The sibling itself when it is
    one, so that room is made for it as for a fix."""
    from .retrieval import ScoredChunk

    best, text, _rest = passage
    if _actionable(text):
        return []
    for follower in _followers(kb, best, []):
        if not any(_actionable(c.text) for c in _section_chunks(kb, follower.chunks[0].chunk)):
            continue
        matched = next((art for art in siblings if art.doc_id == best.doc_id and art.passage == follower.passage), None)
        if matched is not None:
            return [matched]
        chunk = follower.chunks[0].chunk
        return [ArticleMatch(chunk.doc_id, 1.0, 0.0, chunks=[ScoredChunk(chunk, 1.0, 0.0, 0.0)], passage=follower.passage)]
    return []


# A numbered step's heading: "5. Switch Nginx to HTTPS", "Step 5:", "第 5 步", "5）". Not a
# version or a sub-number ("3.0 release notes", "1.2 Configure"), and not a numbered question
# of a FAQ ("3. 如何开启 API Key 鉴权", "4. How do I …?"): those are topics, not steps (review).
_STEP_HEADING = re.compile(r"^\s*(?:step\s*|第\s*)?(\d{1,2})\s*(?:[.)）、:：](?!\d)|步)", re.I)
_QUESTION_HEADING = re.compile(r"[?？]\s*$|^\s*(?:step\s*|第\s*)?\d{1,2}\s*\S?\s*(?:如何|怎么|怎样|为什么|为何|是否|能否|能不能|可以"
                               r"|how\b|what\b|why\b|when\b|where\b|which\b|can\b|does\b|do\b|is\b|should\b)", re.I)
MAX_STEP_GAP = 2  # steps missing between two quoted ones that are brought in; more is another procedure's worth
MAX_STEP_CHARS = 800  # a step brought in is short; a longer section under a number is a chapter


def _step_number(passage: str) -> int | None:
    head = passage.split(" > ")[-1] if " > " in passage else ""
    m = _STEP_HEADING.match(head)
    return int(m.group(1)) if m and not _QUESTION_HEADING.search(head) else None


def _step_gaps(kb, top: ArticleMatch, quoted: list) -> list[ArticleMatch]:
    """The numbered steps of a procedure between two that the answer quotes: "4. Deploy the
    certificates" and "6. Edit the HTTPS template" matched the question, and "5. Switch Nginx to
    the HTTPS configuration", the one step that names the file to copy, was left out (new
    trees). Only where the page runs the steps in order with nothing else between, and only
    short ones, scored as the lower of the two so they take their room before weaker siblings."""
    from .retrieval import ScoredChunk, section_key

    best = top.chunks[0].chunk
    sections: dict[str, list] = {}  # the page's sections in order, each with its chunks
    for chunk in kb.article_chunks(best.doc_id, best.lang):
        sections.setdefault(section_key(chunk.title), []).append(chunk)
    order = list(sections)
    on_page = {art.passage: art for art in (top, *quoted) if art.doc_id == top.doc_id and art.passage and art.chunks}
    steps = sorted((order.index(key), n) for key in on_page if key in sections and (n := _step_number(key)) is not None)
    out: list[ArticleMatch] = []
    for (at, n), (at_next, n_next) in zip(steps, steps[1:]):
        between = order[at + 1:at_next]
        if not 0 < len(between) <= MAX_STEP_GAP or [_step_number(key) for key in between] != list(range(n + 1, n_next)):
            continue
        lower = min(on_page[order[at]], on_page[order[at_next]], key=lambda art: art.chunks[0].score)
        for key in between:
            if key in on_page or sum(len(c.text) for c in sections[key]) > MAX_STEP_CHARS:
                continue
            score = lower.chunks[0].score
            out.append(ArticleMatch(best.doc_id, lower.score, 0.0, passage=key,
                                    chunks=[ScoredChunk(c, score, 0.0, 0.0) for c in sections[key]]))
    return out


def _untitled_introduction(kb, chunks: list) -> bool:
    """Whether a page no heading titles (its passages are titled "file > Section") opens
    with an introduction: a short first section of sentences with nothing to run or set
    ("For models the framework does not support, describe the structure yourself."), whose
    how-to is the next `###` section. It names the page's subject, which the file name or
    the next heading repeat ("Custom Models", then "Using Python Custom Models"): a FAQ's
    first question, or a first section with commands, is a topic of its own."""
    meta = kb.index.docs.get(f"{chunks[0].doc_id}:{chunks[0].lang}")
    if meta is None or meta.title != Path(meta.source).stem or chunks[0].title.count(" > ") != 1:
        return False
    heading = chunks[0].title.split(" > ")[1]
    following = next((c.title.split(" > ")[-1] for c in chunks if c.title != chunks[0].title), "")
    if not _heading_words(heading) & (_heading_words(following) | _heading_words(meta.title)):
        return False
    text = _without_bylines("\n\n".join(c.text for c in chunks if c.title == chunks[0].title)).strip()
    return len(text) <= MAX_LEAD_CHARS and _has_prose(text) and not _actionable(text)


def _heading_words(text: str) -> set[str]:
    """A heading's or file name's subject words, singular: "Custom Models" and
    "english_custom" share "custom"; a Chinese heading's characters count two by two.
    Question words are no subject: two FAQ entries both asked "How do I …" or "如何…" share
    nothing."""
    words = {w[:-1] if w.endswith("s") and not w.endswith("ss") else w for w in re.findall(r"[a-z]{3,}", text.lower())}
    han = [ch for ch in text if is_cjk(ch)]
    pairs = {a + b for a, b in zip(han, han[1:])}
    return {w for w in words if w not in _QUESTION_WORDS} | {p for p in pairs if not any(q in p for q in _QUESTION_CHARS)}


_QUESTION_WORDS = frozenset({"how", "what", "why", "when", "where", "which", "who", "can", "doe", "the", "and", "for", "with",
                             "use", "using", "get", "set", "not", "you", "your", "our", "this", "that", "from", "into"})
_QUESTION_CHARS = ("如何", "怎么", "什么", "为什", "么", "哪", "吗", "是否", "能否", "可以")


def _fix_sibling(kb, best, quoted: list, question: str = "") -> list[ArticleMatch]:
    """A runbook's fix section, when the best passage is another top-level section of its
    page ("Symptoms" with the pasted log line, "Why"): the log matches the symptom, the
    commands sit under "What to do" and share few of the question's words. Quoted right
    after the passage, before other matched sections. (Sections nested under one problem
    already answer together: they are one passage.) When the best passage is the page's
    "Symptoms", its "Cause" comes too: the symptoms only say back what the asker sees, and
    "why do we get 502 after every deploy" was answered with them and the fix, never the why."""
    from ingest.chunking import section_kind

    from .retrieval import ScoredChunk, section_key

    def kind(key: str, exact: bool = False) -> str:  # of the section's own heading ("4. Fix"), not a subsection's
        parts = key.split(" > ")
        return section_kind(parts[1], exact) if len(parts) == 2 else "other"

    key = section_key(best.title)
    if key.count(" > ") != 1 or kind(key) == "fixes":
        return []
    taken = {key} | {art.passage for art in quoted if art.doc_id == best.doc_id}
    chunks = kb.article_chunks(best.doc_id, best.lang)

    def section_for(want: str) -> ArticleMatch | None:
        # "What to do" before "Fix on our cluster": a heading named exactly as a fix is surer
        # than one a fix word leads.
        for exact in (True, False):
            for chunk in chunks:
                other = section_key(chunk.title)
                if other not in taken and kind(other, exact) == want:
                    return ArticleMatch(chunk.doc_id, 1.0, 0.0, chunks=[ScoredChunk(chunk, 1.0, 0.0, 0.0)], passage=other)
        return None

    found = [cause] if kind(key) in ("symptoms", "signatures") and (cause := section_for("causes")) else []
    fix = section_for("fixes")
    if fix is not None:
        return [*found, fix]
    # A procedure's step named by the question's own action ("how do I restart the gateway
    # safely?" and a section "Restart"): the pasted 503 line matched "When to use this page",
    # which was all the answer quoted.
    # The heading with fewest words of its own wins: "Restart", not "Before the restart".
    asked = set(kb.index.tokenizer(question)) if question else set()
    named = []
    for chunk in chunks:
        other = section_key(chunk.title)
        if other in taken or other.count(" > ") != 1:
            continue
        heading = other.split(" > ")[1]
        words = set(kb.index.tokenizer(heading))
        if words and words <= asked:
            named.append((len(heading.split()), chunk, other))
    if named:
        _n, chunk, other = min(named, key=lambda item: item[0])
        return [*found, ArticleMatch(chunk.doc_id, 1.0, 0.0, chunks=[ScoredChunk(chunk, 1.0, 0.0, 0.0)], passage=other)]
    return found


def _extras(kb, siblings: list, rest: list, quoted: dict, room: int, lang: str, labels: dict,
            hits: dict[str, float], asked: frozenset[str] = frozenset()) -> tuple[tuple | None, int]:
    """Fill the room the best passage and the alternatives leave, best-matching first, with
    sibling sections (into `quoted`) and the best section's continuation: when too long to
    quote whole, its later chunks that also matched (often the list of actions under
    "consider the following"). Returns the continuation, if it fitted, and the room left."""
    extras = [(art.chunks[0].score if art.score else -1.0, art) for art in siblings]
    if rest:
        # More of the section already quoted weighs a little less than another section that
        # matched nearly as well: "How do I serve a LoRA adapter?" quoted two chunks of
        # "Dynamically serving LoRA Adapters" and left out "Serving LoRA Adapters" (0.93 of
        # its score), which holds --enable-lora.
        extras.append((CONTINUATION_DISCOUNT * max(hits[c.chunk_id] for c in rest), None))
    continued = None
    for _score, art in sorted(extras, key=lambda e: -e[0]):
        if art is None:
            text, left = _quoted(kb, rest, None, labels, hits, min(max(room, 0), MAX_PASSAGE_CHARS), asked)
            # Cited by the first chunk it quotes: cut down to fit, that is not always rest[0]
            # (the citation's text showed a table's first rows, the answer others).
            best = next((c for c in rest if c not in left), rest[0])
        else:
            best, text, _rest = _passage(kb, art, lang, labels, hits, asked)
        if len(text) > room:
            if room < MIN_SIBLING_CHARS:
                continue
            text = _bounded(text, room, labels)
        if art is None:
            continued = (best, text)
        else:
            quoted[id(art)] = (best, text)
        room -= len(text) + len(best.title)
    return continued, room


def _twins_folded(kb, siblings: list, top: tuple, rest: list, hits: dict[str, float], lang: str,
                  question: str) -> tuple[list, list, dict[str, float]]:
    """Siblings that are the best passage's own section in the other language (an English
    README's section, quoted from its Chinese twin) folded into its continuation: quoted as
    passages of their own, they were charged the room again (the rest of the section that
    held `chatchat init` got 50 characters) or quoted the section a second time (an env-var
    page's SECRET_KEY entry, twice). The chunk such a sibling maps to, when the best passage
    left it out, joins the continuation's candidates with the sibling's score."""
    best, _text, left_out = top
    left = {c.chunk_id: c for c in left_out}
    kept: list = []
    for art in siblings:
        mapped = _in_lang(kb, art, lang, hits, question)
        if not _same_section(mapped, best):
            kept.append(art)
            continue
        chunk = left.get(mapped.chunk_id)
        if chunk is not None and all(c.chunk_id != chunk.chunk_id for c in rest):
            at = _position(kb, chunk)
            i = next((i for i, c in enumerate(rest) if _position(kb, c) > at), len(rest))
            rest = [*rest[:i], chunk, *rest[i:]]
            hits = {**hits, chunk.chunk_id: max(hits.get(chunk.chunk_id, 0.0), art.chunks[0].score)}
    return kept, rest, hits


def _same_section(chunk, other) -> bool:
    """Whether two chunks are quoted as one passage: the same section of the same document
    in the same language."""
    from .retrieval import section_key

    return (chunk.doc_id, chunk.lang, section_key(chunk.title)) == (other.doc_id, other.lang, section_key(other.title))


def _lead_that_sets(kb, passage: tuple, room: int, quoted: list, question: str) -> tuple[tuple | None, int]:
    """The page's opening (`_lead`) when it says what to set or run and something asked, with
    the room it takes; (None, 0) otherwise."""
    best, text = passage
    early = _lead(kb, best, room, quoted)
    if early is None or not _actionable(early[1]) or _says_none_asked(kb, early[0], early[1], question, text):
        return None, 0
    return early, len(early[1]) + len(early[0].title)


def _lead(kb, best, room: int, quoted: list) -> tuple | None:
    """The opening of the document a passage comes from, when the passage is further down
    and the opening is short: a page often says its general answer first ("vLLM does not
    guarantee reproducibility…") and the details a heading below."""
    from .retrieval import section_key

    chunks = kb.article_chunks(best.doc_id, best.lang)
    if not chunks or section_key(chunks[0].title) == section_key(best.title) or " > " in chunks[0].title.strip():
        return None
    opening = [c for c in chunks if c.title == chunks[0].title]
    if any(section_key(q.title) == section_key(opening[0].title) for q in quoted):
        return None  # already quoted as a passage of its own
    text = _without_bylines("\n\n".join(c.text for c in opening)).strip()
    if not _has_prose(text) or len(text) > MAX_LEAD_CHARS or len(text) + len(chunks[0].title) > room - MIN_SIBLING_CHARS // 2:
        return None
    return opening[0], text


def _leading_bylines_dropped(text: str) -> str:
    """A page opening's text without the byline lines it starts with ("Created by Alice,
    last modified yesterday" was quoted as the first passage of a wiki page's answer)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and (not lines[i].strip() or is_byline(lines[i])):
        i += 1
    return "\n".join(lines[i:]) if any(is_byline(line) for line in lines[:i]) else text


def _without_bylines(text: str) -> str:
    """A document's opening without its byline (owner, version, last update): quoted as the
    document's general answer, it answered nothing."""
    return "\n".join(line for line in text.splitlines() if not is_byline(line))


def _has_prose(text: str) -> bool:
    """Whether text says something in sentences: a page opening with only a usage block
    ("Usage: launcher [OPTIONS]") has no general answer to add."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (len(line.split()) >= 4 or sum(1 for ch in line if is_cjk(ch)) >= 6):
            return True
    return False


def _passage(kb, art: ArticleMatch, lang: str, labels, hits: dict[str, float] | None = None,
             asked: frozenset[str] = frozenset(), question: str = "") -> tuple:
    """A passage's chunk to cite (in the asker's language when there is a twin), its
    bounded text, and the chunks of its section that did not fit."""
    best = _in_lang(kb, art, lang, hits, question)
    scores = {sc.chunk.chunk_id: sc.score for sc in art.chunks}
    section = _section_chunks(kb, best)
    if not asked and question:
        section, picked = _described_items(kb, section, question)
        best = next((c for c in section if c.chunk_id == best.chunk_id), None) or picked or best
    best = _naming_entry(best, section, asked)
    text, rest = _quoted(kb, section, best, labels, scores, MAX_PASSAGE_CHARS, asked)
    return best, text, rest


def _naming_entry(best, section: list, asked: frozenset[str]):
    """The row group (or piece of a settings listing) that names what the question asks
    about, when the best-matching one does not: every group of a big table shares its
    header and reads alike, so "what does --max_memory_utilization include?" matched the
    group about KV-cache sizes best and quoted it."""
    kind = _row_kind(best, section, asked) if asked else None
    if kind is None:
        return best
    names = _row_names if kind is _table_rows else asked_identifiers
    settings = setting_names(asked)
    if names(best.text) & asked or not settings:
        return best
    named = [(len(names(c.text) & settings), -i, c) for i, c in enumerate(section) if kind(c)]
    top = max(named, key=lambda t: t[:2], default=(0, 0, best))
    return top[2] if top[0] else best


def _quoted(kb, section: list, best, labels: dict, scores: dict[str, float], limit: int,
            asked: frozenset[str] = frozenset()) -> tuple[str, list]:
    """`_section_text` as the document wrote it, within `limit` once written so: a plain-text
    passage's kept line breaks cost characters too, and a 1,500-character passage grew past
    the bound by two per line."""
    chunk = best if best is not None else section[0]
    text, rest = _section_text(section, best, labels, scores, limit, asked)
    written = _as_written(kb, chunk, text)
    cut = limit
    while len(written) > limit and cut > 0:
        cut -= len(written) - limit
        text, rest = _section_text(section, best, labels, scores, max(cut, 0), asked)
        written = _as_written(kb, chunk, text)
    return written, rest


# A heading the document set in bold, set in bold again by the chunker: "****--name**, **-n****".
_DOUBLE_BOLD = re.compile(r"^\*\*(\*\*.+)\*\*$", re.M)


def _tidy(text: str) -> str:
    """A quoted passage without what renders as noise: the page's own table of contents,
    and headings bold twice over."""
    if "****" in text:
        text = _DOUBLE_BOLD.sub(r"\1", text)
    return _without_page_toc(text)


def _without_page_toc(text: str) -> str:
    """A passage without the page's own table of contents: a list of links to the page's
    headings (RamaLama's man pages open with one) was quoted as if it answered, and took
    the room of the section the question was about. Markdown pages lose it at ingest; this
    is for the documents read otherwise. A passage that is nothing else is kept."""
    from ingest.documents import page_toc_lines

    lines = text.split("\n")
    drop = page_toc_lines(lines)
    if not drop:
        return text
    kept = [line for i, line in enumerate(lines) if i not in drop]
    if not "".join(kept).strip():
        return text
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")


def _as_written(kb, chunk, text: str) -> str:
    meta = kb.index.docs.get(f"{chunk.doc_id}:{chunk.lang}")
    return _line_breaks_kept(text) if meta is not None and meta.format == "text" else text


_BOLD_LINE = re.compile(r"^\*\*[^*]+\*\*$")


def _line_breaks_kept(text: str) -> str:
    """A plain-text document's lines as it wrote them. Rendered as markdown, "现象：…",
    "原因：…" and "处理：…" on their own lines ran into one paragraph, and a tab-separated
    table into one line of cells. Two trailing spaces are a markdown line break and read
    as nothing in JSON or Slack."""
    lines = text.split("\n")
    out = []
    fenced = False
    for i, line in enumerate(lines):
        if line.strip().startswith("```"):
            fenced = not fenced
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if (not fenced and line.strip() and following.strip() and not _BOLD_LINE.match(line.strip())
                and not line.endswith(("  ", "\\"))):  # a shell line continued with "\\" must end with it
            line += "  "
        out.append(line)
    return "\n".join(out)


def _bold(heading: str) -> str:
    """A heading set in bold: one that is bold already ("#### **--name**, **-n**" in a man
    page) came out as "****--name**, **-n****"."""
    return f"**{heading.replace('**', '').strip()}**"


def _display_title(title: str, source: str) -> str:
    """A passage's heading path (to its section), without a leading file name: plain-text
    files have no title, and "001_075f06 > NCCL errors" reads worse than "NCCL errors"."""
    from .retrieval import section_key

    path = section_key(title).split(" > ")
    stem = source.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if len(path) > 1 and path[0] == stem and not _named_by_title(stem):
        path = path[1:]
    return " > ".join(path)


def _named_by_title(stem: str) -> bool:
    """A file named after its title ("镜像灰度发布流程.txt", "GPU node drain.md", a GitBook
    reference's "Settings.md" beside "ModelSettings.md"), as teams exporting from Word,
    Feishu or Yuque do: its name says what it covers. Dropped, both pages' passages were
    titled "Fields". "001_075f06", "startup-oom" and "README" are identifiers, and "Readme",
    "Index" or "Home" name a page's role, not what it covers."""
    stem = stem.strip()
    return (" " in stem or any(is_cjk(ch) for ch in stem)
            or (stem[:1].isupper() and stem.isalpha() and any(ch.islower() for ch in stem)
                and stem.lower() not in _PAGE_ROLES))


_PAGE_ROLES = frozenset({"readme", "index", "home", "main", "default", "intro", "contents", "summary"})


def _in_lang(kb, art: ArticleMatch, lang: str, hits: dict[str, float] | None = None, question: str = ""):
    """The passage's best chunk, or — when it is in the other language and the document
    has a twin in the asker's — the twin's chunk holding the same passage. `hits` (chunk id
    to score, over the whole retrieval) picks, among twin chunks that overlap the passage,
    the one that itself matched the question: sections split differently in each language,
    so a passage can straddle two chunks of its twin. A twin that lacks what the question
    quotes from the passage (a log line, a command) has fallen behind it, and the passage
    is quoted as written."""
    chunk = art.chunks[0].chunk
    if chunk.lang == lang:
        return chunk
    twin = kb.article_chunks(chunk.doc_id, lang)
    if not twin or _twin_lacks_what_is_quoted(question, chunk, twin):
        return chunk
    own = kb.article_chunks(chunk.doc_id, chunk.lang)
    try:
        pos = next(i for i, c in enumerate(own) if c.chunk_id == chunk.chunk_id)
    except StopIteration:
        return chunk
    # Translations keep their code, flags, env vars and numbers: the twin chunk sharing most
    # of them is the same passage, wherever the other language split its sections. Position
    # decides only between equals (and when nothing is shared).
    names = _names(kb, chunk)
    expected = pos * len(twin) / max(1, len(own))
    hits = hits or {}

    def key(ic):
        shared = len(names & _names(kb, ic[1]))
        return (shared > 0 and ic[1].chunk_id in hits, hits.get(ic[1].chunk_id, 0.0) if shared else 0.0, shared, -abs(ic[0] - expected))

    return max(enumerate(twin), key=key)[1]


_NAME = re.compile(r"[A-Za-z_][\w.-]{2,}|\d+(?:\.\d+)+")
_LITERAL_WORD = re.compile(r"[a-z0-9_][a-z0-9_./:=-]*")
LITERAL_RUN = 3  # words in a row the question and a passage share verbatim: a quoted message or command
_CODE_SPAN = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.S)


def _literal_words(text: str) -> list[str]:
    """Latin-script words, lower-cased, without the punctuation a sentence ends them with
    ("peer." is "peer"), so a twin's prose matches the question's quote."""
    return [w for w in (w.rstrip(".:/=-") for w in _LITERAL_WORD.findall(text.lower())) if w]


def _twin_lacks_what_is_quoted(question: str, chunk, twin: list) -> bool:
    """Whether the question shares a run of Latin-script words with the passage's code
    (`connection reset by peer`, `vault kv put secret`) that its twin never writes: the
    Chinese page of a runbook got a third step with the error it prevents, the English one
    did not, and the English answer quoted the two steps without it."""
    if not question:
        return False
    words = _literal_words(question[:4000])
    runs = {" ".join(words[i:i + LITERAL_RUN]) for i in range(len(words) - LITERAL_RUN + 1)}
    if not runs:
        return False
    # Only what the passage writes as code (`…` or a fenced block): a translation keeps those
    # verbatim, while English prose the question happens to share ("out of memory") is
    # naturally absent from a Chinese twin and says nothing about what it lacks.
    code = " ".join(m.group(1) or m.group(2) or "" for m in _CODE_SPAN.finditer(chunk.text))  # an empty fence is ""
    flat = " " + " ".join(_literal_words(code)) + " "
    shared = [run for run in runs if f" {run} " in flat]
    if not shared:
        return False
    twin_flat = " " + " ".join(_literal_words(" ".join(c.text for c in twin))) + " "
    return any(f" {run} " not in twin_flat for run in shared)


def _names(kb, chunk) -> frozenset[str]:
    """The identifiers and numbers a chunk writes, cached per loaded index: a twin page of a
    thousand chunks is compared on every answer quoting it."""
    from ingest.index import derived

    cache = derived(kb.index, "_chunk_names", dict)
    names = cache.get(chunk.chunk_id)
    if names is None:
        names = cache[chunk.chunk_id] = frozenset(_NAME.findall(chunk.text))
    return names


def _section_chunks(kb, chunk) -> list:
    """The chunks of the section `chunk` belongs to, in document order."""
    from .retrieval import section_key

    key = section_key(chunk.title)
    return [c for c in kb.article_chunks(chunk.doc_id, chunk.lang) if section_key(c.title) == key] or [chunk]


def _asked_entries(section: list, best, asked: frozenset[str], scores: dict[str, float]) -> tuple[list, object, list]:
    """The section's chunks narrowed to what the question asks about, the best chunk as
    narrowed, and the chunks left out. A FAQ's other questions, and a big table's other row
    groups, are other topics: kept only when they matched too. (Cut down to fit, a question
    about one variable of a 60-row table got the table's first rows too, for carrying
    `inline code`.) A table inside a passage is cut to the asked rows."""
    skipped: list = []
    if _names_entry(best, asked):
        kept = _entry_or_asked(section, best, asked)
        skipped = [c for c in section if c not in kept]
        section = kept
    entry = _faq_entry if best is not None and any(_faq_entry(c) for c in section) else _row_kind(best, section, asked)
    if entry is not None:
        kept = _entries_kept(section, best, entry, asked, scores)
        skipped += [c for c in section if c not in kept]
        section = kept
        if entry is not _faq_entry and asked:
            section = [_asked_rows(c, asked) if entry(c) else c for c in section]
    elif asked:
        section = [_asked_table_lines(c, asked) for c in section]
    if best is not None:
        best = next((c for c in section if c.chunk_id == best.chunk_id), best)
    return section, best, skipped


def _names_entry(best, asked: frozenset[str]) -> bool:
    """Whether the best chunk is a reference entry: a subsection headed by nothing but a name
    the question asks about ("### SECRET_KEY" under "Server configuration", one heading per
    variable). A heading that only contains the name ("Hangs with NCCL_P2P_DISABLE", "FP8 KV
    cache") is a topic with its own Cause and Fix, and a section's own heading is the passage."""
    from .retrieval import section_key

    if not asked or best is None or best.title == section_key(best.title):
        return False
    heading = best.section.strip(" `*").lstrip("-").lower().replace("-", "_")
    return heading in asked


def _entry_or_asked(chunks: list, best, asked: frozenset[str]) -> list:
    """Of a section whose best chunk is the asked name's own entry, that entry (with any
    subsections of its own) and the chunks that name the asked name themselves: the other
    entries are other settings. Cut down to fit, "SECRET_KEY 是干什么的" got the logging table
    and the storage credentials (OCI_SECRET_KEY…) after its entry, and their continuation
    after that."""
    return [c for c in chunks if c.title == best.title or c.title.startswith(best.title + " > ")
            or asked_identifiers(f"{c.section}\n{c.text}") & asked]


def _section_text(section: list, best, labels: dict, scores: dict[str, float] | None = None,
                  limit: int = MAX_PASSAGE_CHARS, asked: frozenset[str] = frozenset()) -> tuple[str, list]:
    """The section from its start, subsections under their own headings, bounded, and the
    chunks left out. Too long to quote whole, it keeps the best chunk, then the chunks that
    matched the question best (`scores`, by chunk id), then those that carry something to
    do (code, flags, settings), and quotes them in document order."""
    scores = scores or {}
    section, best, skipped = _asked_entries(section, best, asked, scores)

    def sub_of(c) -> str:
        return " > ".join(c.title.split(" > ")[2:])

    def render(chunks, last_heading: str | None = None) -> str:  # the subsection quoted just before, if any
        out: list[str] = []
        for c in chunks:
            sub = sub_of(c)
            if sub and sub != last_heading:
                out.append(_bold(sub))
            elif not sub and last_heading:  # the section's own text, after a subsection quoted first
                out.append(_bold(c.title.split(" > ")[1] if " > " in c.title else c.title))
            last_heading = sub
            out.append(_tables_compacted(c.text))
        return "\n\n".join(out)

    text = render(section)
    if len(text) <= limit:
        # Whole, too, the subsection that matched leads the subsections before it: a handbook
        # part's second alert ("三、SGLang 服务告警" > "2. SglangSchedulerHang") was quoted under
        # its first, which an engineer reading the top of the answer acted on (trial). The
        # section's own opening stays first (a warning above all its alerts), and nothing is
        # left out, so no gap is marked (review).
        led = [c for c in section if not sub_of(c)] + _matched_subsection_first([c for c in section if sub_of(c)], best, scores, sub_of)
        whole = render(led) if led != section else text
        return (whole if len(whole) <= limit else text), skipped
    rank = {"fixes": 1, "causes": 2, "checks": 3}
    best_id = best.chunk_id if best is not None else None
    # Cut down from the middle of a heading's text, the heading's first chunk comes next:
    # it says how to begin ("set AS_PROFILE=ON, then call get_op_profiling_info"), while
    # the chunk that matched ("how to read the report: Gemm, attention…") shares the
    # question's words and holds none of the steps.
    opening = getattr(_opening_with_steps(section, best), "chunk_id", None)
    order = sorted(range(len(section)), key=lambda i: (section[i].chunk_id != best_id, section[i].chunk_id != opening,
                                                       -scores.get(section[i].chunk_id, 0.0),
                                                       not _actionable(section[i].text), rank.get(section[i].kind, 4), i))
    position = {c.chunk_id: i for i, c in enumerate(section)}

    def written(keep: set[int]) -> str:
        kept = _matched_subsection_first([c for i, c in enumerate(section) if i in keep], best, scores, sub_of)
        runs = _runs(kept, position)
        return f"\n\n{labels['gap']}\n\n".join(render(run, sub_of(runs[i - 1][-1]) if i else None) for i, run in enumerate(runs))

    keep: set[int] = set()
    size = 0
    for i in order:
        text_size = len(_tables_compacted(section[i].text))
        cost = text_size + 40  # its heading and a gap mark, when the quote needs them
        # Over the estimate but not over the bound as written, a chunk is kept: a router
        # FAQ's second matched chunk (265 characters, the pinned gunicorn version) lost 11
        # characters of estimated headings to a chunk that matched half as well.
        if keep and size + cost > limit and (size + text_size > limit or len(written(keep | {i})) > limit):
            continue
        keep.add(i)
        size += cost

    text = _match_kept_whole(section, best_id, order, keep, written, limit, labels)
    return _bounded(text, limit, labels), [c for i, c in enumerate(section) if i not in keep] + skipped


def _matched_subsection_first(kept: list, best, scores: dict[str, float], sub_of) -> list:
    """Cut down, a section is no longer read from its start: what comes before the
    subsection that matched and did not itself match the question moves after it. In
    document order a matched "Rolling back" came after the tail of a long introduction and
    an unrelated "Prerequisites"; a subsection that matched too keeps its place."""
    if best is None or not sub_of(best):
        return kept
    floor = CONTINUATION_SHARE * scores.get(best.chunk_id, 0.0)
    at = next((i for i, c in enumerate(kept) if c.chunk_id == best.chunk_id), None)
    if at is None:
        return kept
    start = at
    while start > 0 and sub_of(kept[start - 1]) == sub_of(best):
        start -= 1  # the run of best's own subsection, not an earlier one of the same name
    moved = [c for c in kept[:start] if scores.get(c.chunk_id, 0.0) < floor]
    while at + 1 < len(kept) and sub_of(kept[at + 1]) == sub_of(best):
        at += 1
    return [c for c in kept[:at + 1] if c not in moved] + moved + kept[at + 1:]


def _match_kept_whole(section: list, best_id: str | None, order: list[int], keep: set[int], written,
                      limit: int, labels: dict) -> str:
    """The quote of the kept chunks, with the least wanted dropped (from `keep`) while the
    bound would cut into the matched chunk. The room estimate leaves out the subsection
    headings and gap marks a quote adds: over the bound, the cut fell at the end, in the
    match itself (an S3 page's tip on Istio sidecars lost its
    `holdApplicationUntilProxyStarts` line to a service-account example kept beside it)."""
    text = written(keep)
    # The whole match, not its last line: a closing line it shares with a chunk before it
    # ("Then restart: kubectl rollout restart …") read as "not cut" while it was.
    whole = next((_tables_compacted(c.text).strip() for c in section if c.chunk_id == best_id), None)
    droppable = [i for i in reversed(order) if i in keep and section[i].chunk_id != best_id]
    while whole is not None and droppable and len(text) > limit and whole not in _bounded(text, limit, labels):
        keep.discard(droppable.pop(0))
        text = written(keep)
    return text


_TABLE_PADDING = re.compile(r"(?<=\S) {2,}")  # a pipe is no space either
_RULE_DASHES = re.compile(r"-{4,}")


def _tables_compacted(text: str) -> str:
    """A markdown table's rows without the spaces that align its columns in the source:
    rendered, they are nothing, yet a guide's wide parameter table spent half of a
    1,500-character passage on them and the sentence that answered was cut. Lines in code
    blocks keep their spacing."""
    if "|  " not in text and "----" not in text:
        return text
    lines = text.split("\n")
    fenced = False
    for i, line in enumerate(lines):
        bare = line.strip()
        if bare.startswith("```"):
            fenced = not fenced
        elif not fenced and bare.startswith("|") and bare.endswith("|"):
            line = _TABLE_PADDING.sub(" ", line.rstrip())
            if not line.replace("|", "").replace(":", "").replace("-", "").strip():
                line = _RULE_DASHES.sub("---", line)  # the row under the header
            lines[i] = line
    return "\n".join(lines)


def _runs(kept: list, position: dict[str, int]) -> list[list]:
    """The quoted chunks as runs of neighbours: where a quote leaves text out or goes back,
    it says so (steps 16-45 of a long procedure had vanished between 15 and 46 unmarked)."""
    runs: list[list] = []
    for c in kept:
        if runs and position[c.chunk_id] == position[runs[-1][-1].chunk_id] + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    return runs


def _faq_entry(chunk) -> bool:
    """Whether a chunk is one entry of a FAQ ("**Q: …?**", "问：…"; chunking starts a chunk
    at each)."""
    from ingest.chunking import is_faq_question

    return is_faq_question(chunk.text.split("\n\n", 1)[0])


def _entries_kept(chunks: list, best, entry, asked: frozenset[str], scores: dict[str, float]) -> list:
    """`chunks` without the other entries of the best one's kind (`entry`: a FAQ's questions,
    a big table's row groups) that the question did not ask about. A FAQ entry counts when it
    scored at least CONTINUATION_SHARE of the best. Row groups share their header and the
    shape of their rows, so on a big table they all clear that share: one counts only when it
    names something the question asks about that the best group does not ("What do
    FD_DISABLED_RECOVER and FD_RECOVER_TIMEOUT do?"); on a question that names nothing, the
    score share still decides."""
    floor = CONTINUATION_SHARE * scores.get(best.chunk_id, 0.0)
    if entry is not _faq_entry and asked:
        names = _row_names if entry is _table_rows else asked_identifiers
        known = names(best.text)

        def matched(c) -> bool:
            return bool((names(c.text) & asked) - known)
    else:
        def matched(c) -> bool:
            return scores.get(c.chunk_id, 0.0) >= floor
    return [c for c in chunks if c.chunk_id == best.chunk_id or not entry(c) or matched(c)]


def _row_kind(best, section: list, asked: frozenset[str] = frozenset()):
    """The kind of entry a big listing was split into, when the best chunk is one: a
    table's row groups, or the pieces of a long code block of settings (FastDeploy's
    envs.py, forty variables split at blank lines) when one of them names what the
    question asks about. A section of code examples is not a listing: its other pieces
    (the `repetition_penalty` one) stay as they matched. None for anything else."""
    if best is None:
        return None
    if _table_rows(best):
        return _table_rows
    pieces = [c for c in section if _code_piece(c)]
    if _code_piece(best) and len(pieces) >= 2 and any(asked_identifiers(c.text) & setting_names(asked) for c in pieces):
        return _code_piece
    return None


def _code_piece(chunk) -> bool:
    """Whether a chunk is one fenced piece of a code block split at its blank lines."""
    text = chunk.text.strip()
    return text.startswith(("```", "~~~")) and text.endswith(("```", "~~~")) and text.count("\n") >= 2


# "Which parameter limits input + output?", "launcher 需要额外加什么参数": the answer is a
# setting the asker has not named; those the question names are what they already set.
# Not "X 是什么参数" or "what setting is X": that asks about X.
_SETTING_WORD = r"(?:flag|option|parameter|param|setting|env(?:ironment)?[ -]?var\w*|knob|argument)s?"
_ANOTHER_SETTING = re.compile(
    r"(?<![是叫])(?:哪个|哪一个|哪些|什么|啥)(?:参数|选项|配置项|环境变量|开关)"
    rf"|\b(?:which|what)\s+(?:other\s+|extra\s+)?{_SETTING_WORD}\b(?!\s+(?:is|does|do)\s+[`'\"]?-*[\w.]*[_.-])"
    rf"|\bis there (?:a|an|any)\s+(?:\w+\s+)?{_SETTING_WORD}\b",
    re.I)


def _tried_names(said: str) -> frozenset[str]:
    """The settings the sentences say were tried, spelt as `asked_identifiers` spells them: no sign
    of the row that answers. "HTTP 413 … I already raised --max-client-batch-size" was quoted that
    row of the arguments table, and not --payload-limit's (analysis of the dev trees)."""
    from .cleaning import tried_settings

    return asked_identifiers(" ".join(tried_settings(said, explicit=True)))


def _asks_for_another_setting(said: str) -> bool:
    """Whether the question's sentences (scope.sentences: no pasted log or config) ask which
    setting to add or change. Then the settings they name are no sign of the rows that
    answer, and a table or listing is not cut to them; it is quoted by its best-matching
    entries instead, like any long section, or cut to the rows the sentences describe
    (`_described_rows`: "which setting lets me install unsigned plugins?")."""
    return bool(_ANOTHER_SETTING.search(said))


def _asked_rows(chunk, asked: frozenset[str]):
    """A table row group cut to its header and the rows naming what the question asks
    about (with the row before and after each), or a code piece cut to the paragraphs that
    do, with "..." where others were: a question about FD_DISABLED_RECOVER quoted a dozen
    variables around it. Unchanged when nothing, or everything, names it."""
    from dataclasses import replace

    lines = chunk.text.strip().split("\n")
    if _table_rows(chunk):
        cut = _table_cut(lines, asked)
        return chunk if cut is None else replace(chunk, text="\n".join(cut))
    groups: list[list[str]] = [[]]
    for line in lines[1:-1]:
        if line.strip():
            groups[-1].append(line)
        elif groups[-1]:
            groups.append([])
    groups = [g for g in groups if g]
    hit = [bool(asked_identifiers("\n".join(g)) & asked) for g in groups]
    if not any(hit) or all(hit):
        return chunk
    out = [lines[0]]
    for g, h in zip(groups, hit):
        if h:
            out += g
        elif out[-1].strip() != "...":
            out.append("...")
    return replace(chunk, text="\n".join(out + [lines[-1]]))


DESCRIBED_ROWS_MAX = 3  # more rows tied on the question's words than this: the words do not pick a row
DESCRIBED_KB_SHARE = 1 / 3  # a word in more of the KB's documents than this share describes no row
_NUMERIC = re.compile(r"[\d.]+")  # "20 workers", "v0.8.5" → 0, 8, 5: a default value's digits are no description


def _described(kb, said: str, candidates: list) -> list[int]:
    """The candidates (a big table's rows, a listing's entries, each as its set of words) that
    the asker's sentences describe best, tied at the top; empty when none shares two of its
    rare words. A word counts when few candidates hold it (a fifth at most) and few of the KB's
    documents do, and weighs by both: "docker", "部署" in a long row's prose matched as many of
    the question's words as the row it asked for did; and a word that more than
    DESCRIBED_KB_SHARE of the documents hold is the tree's common vocabulary (a GPUStack tree's
    "gpustack", in 103 of 112): with "docker" it picked the registry row for "用 docker 起的
    gpustack 怎么改 UI 端口", and the --port row was cut away (dev trees). Numbers describe
    nothing ("20 workers", "v0.8.5")."""
    import math

    words = {w for w in kb.index.tokenizer(said[:MAX_QUERY_CHARS]) if not _NUMERIC.fullmatch(w)}
    shared = [candidate & words for candidate in candidates]
    df: dict[str, int] = {}
    for common in shared:
        for w in common:
            df[w] = df.get(w, 0) + 1
    n_docs = max(1, len(kb.index.terms))
    kb_df = kb.index.doc_freq
    ceiling = max(1.0, n_docs * DESCRIBED_KB_SHARE)
    rare = {w: math.log((len(candidates) + 1) / (n + 0.5)) * math.log((n_docs + 1) / (kb_df.get(w, 0) + 0.5))
            for w, n in df.items() if n <= max(1, len(candidates) // 5) and kb_df.get(w, 0) <= ceiling}
    scores = [(sum(rare.get(w, 0.0) for w in common), sum(1 for w in common if w in rare)) for common in shared]
    best = max(scores, default=(0.0, 0))
    if best[1] < 2:
        return []
    return [i for i, score in enumerate(scores) if score[0] >= best[0] - 1e-9]


def _described_rows(kb, art: ArticleMatch, said: str, asked: frozenset[str], tried: frozenset[str]) -> frozenset[str]:
    """The names of the rows of the best match's big tables that the asker's sentences
    describe without naming: "装不上没签名的插件 … has a bad signature" is the
    FORCE_VERIFYING_SIGNATURE row of a 60-row variables table, and the table was quoted from
    its top, cut three rows above it (dev trees). A row is picked by words that few of the
    rows and few of the KB's documents share ("插件" in a table of plugin settings, "docker"
    anywhere, a number say nothing), two at least. Nothing when a row already names what is
    asked, when the words tie more than DESCRIBED_ROWS_MAX rows, or when the best is a row
    the asker tried."""

    rows: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # row → (its words, its names)
    sections = {scored.chunk.chunk_id: scored.chunk for scored in art.chunks}
    for chunk in {c.chunk_id: c for first in sections.values() for c in _section_chunks(kb, first)}.values():
        rows.update(_table_row_words(kb, chunk))
    if len(rows) <= TABLE_ROWS_TO_CUT or any(names & asked for _words, names in rows.values()):
        return frozenset()
    named = list(rows.values())
    picked = [named[i][1] for i in _described(kb, said, [words for words, _names in named])]
    if not picked or len(picked) > DESCRIBED_ROWS_MAX or any(names & tried for names in picked):
        return frozenset()
    return frozenset().union(*picked)


_ITEM = re.compile(r"^[-*+]\s+\S")  # a bullet: numbered entries are steps, in an order, never cut
# An entry that names a setting: it leads with `code`, or with a bold label that holds code or a
# snake_case name or is one name ("- **`--port`**", "- **KV Cache Maximum Usage (`--kv_cache_limit`)**",
# "* **Ban the eos_token**", "* **ctx_size**").
# A bold phrase ("- **Stop the router**: …") is a step's title, not a name.
_NAMED_ITEM = re.compile(r"^[-*+]\s+(?:`|\*\*(?:[^*\n]*(?:`|[A-Za-z0-9]_[A-Za-z0-9])|[^\s*]+\*\*))")
_MARGIN_FENCE = re.compile(r"^(```|~~~)")
ITEMS_TO_CUT = 8  # a section listing fewer entries is quoted as it comes (as TABLE_ROWS_TO_CUT)


def _list_items(text: str) -> list[tuple[int, int]]:
    """The line spans of a chunk's top-level list entries that name something ("- **KV Cache
    Maximum Usage (`--kv_cache_limit`)**: …", "- `--port`: …"), with their indented lines;
    empty unless the chunk's entries mostly name something: a procedure's steps do not. (A
    listing spans several chunks: its length is counted over the section.) A code block at
    the margin is no entry's and never cut: its `- match:` lines are YAML (review)."""
    lines = text.split("\n")
    spans: list[tuple[int, int]] = []
    start = None
    fenced = False
    for i, line in enumerate(lines):
        if fenced:
            fenced = not _MARGIN_FENCE.match(line)
            continue
        if _MARGIN_FENCE.match(line):
            if start is not None:
                spans.append((start, i))
                start = None
            fenced = True
        elif _ITEM.match(line):
            if start is not None:
                spans.append((start, i))
            start = i
        elif start is not None and line.strip() and not line[:1].isspace():
            spans.append((start, i))  # a paragraph at the margin ends the listing's entry
            start = None
    if start is not None:
        spans.append((start, len(lines)))
    named = sum(1 for a, _b in spans if _NAMED_ITEM.match(lines[a]))
    return spans if named >= 0.6 * len(spans) else []


def _described_items(kb, section: list, question: str) -> tuple[list, object]:
    """The section's reference listings cut to the entries the asker's sentences describe
    without naming, as a big table is cut to its described rows (`_described_rows`): "is there
    a flag to cap how much memory the KV cache may use?" matched a parameter page whose
    thirty entries fill three chunks, and the passage quoted the first entries of each; the
    `--kv_cache_limit` entry ("KV Cache Maximum Usage") was cut off (dev trees). An entry is
    picked by words few entries and few of the KB's documents share, two at least; nothing is
    cut when more than DESCRIBED_ROWS_MAX entries tie, and the others stay behind "…". A chunk
    left with none of its entries and nothing else is dropped from the section. Returns the
    section and the first chunk holding a picked entry (None when nothing was cut)."""
    from dataclasses import replace

    from .scope import sentences

    listings = {c.chunk_id: spans for c in section if (spans := _list_items(c.text))}
    if sum(map(len, listings.values())) < ITEMS_TO_CUT:
        return section, None
    entries = [(c.chunk_id, span, "\n".join(c.text.split("\n")[span[0]:span[1]]))
               for c in section if c.chunk_id in listings for span in listings[c.chunk_id]]
    top = _described(kb, sentences(question), [set(kb.index.tokenizer(text)) for _id, _span, text in entries])
    if not top or len(top) > DESCRIBED_ROWS_MAX:
        return section, None
    # With the entry before and after each, as a table keeps the rows beside the one asked
    # for (`_table_cut`): a listing's neighbours are often its related settings ("gpu_layers"
    # above "ctx_size", both of what makes a GGUF fit).
    picked = {entries[j][:2] for i in top for j in (i - 1, i, i + 1) if 0 <= j < len(entries)}
    out = []
    first = None
    for c in section:
        if c.chunk_id not in listings:
            out.append(c)
            continue
        lines = c.text.split("\n")
        spans = listings[c.chunk_id]
        inside = {i for a, b in spans for i in range(a, b)}
        keep = {i for a, b in spans if (c.chunk_id, (a, b)) in picked for i in range(a, b)}
        kept: list[str] = []
        for i, line in enumerate(lines):
            if i not in inside or i in keep:
                kept.append(line)
            elif not kept or kept[-1] != "…":
                kept.append("…")
        text = "\n".join(kept).strip("\n")
        if out and out[-1].text.endswith("…") and text.startswith("…"):
            text = text[1:].lstrip("\n")  # the gap is marked once, at the end of the chunk before
        if text.strip("…\n "):
            out.append(replace(c, text=text))
            if keep and first is None:
                first = out[-1]
    return out, first


def _table_row_words(kb, chunk) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """A chunk's table rows (headers left out), each with its words and names; once per
    chunk and index, since every question on a big table reads them again."""
    from ingest.chunking import header_lines
    from ingest.index import derived

    cache = derived(kb.index, "_table_row_words", dict)
    if chunk.chunk_id not in cache:
        out: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        lines = chunk.text.strip().split("\n")
        start = 0
        while start < len(lines):
            if not lines[start].lstrip().startswith("|"):
                start += 1
                continue
            end = _table_end(lines, start)
            table = lines[start:end]
            # A row group repeats its header; a bare run of rows has none to leave out.
            head = header_lines(table) if len(table) > 1 and re.match(r"^\s*\|?\s*:?-{3,}", table[1]) else 0
            for row in table[head:]:
                out.setdefault(row, (frozenset(kb.index.tokenizer(row)), _row_names(row)))
            start = end
        cache[chunk.chunk_id] = out
    return cache[chunk.chunk_id]


def _row_names(text: str) -> frozenset[str]:
    """What table rows name: their first cells and `code`, not every hyphenated word of a
    description ("token-level" is no setting: a question saying it kept the two rows that
    did and dropped the metric it asked for). Nor a URL's host: `http://plugin_daemon:5002`,
    the default of PLUGIN_DAEMON_URL, made that row the one "plugin_daemon 日志 … 配国内 pip 源"
    asked about, and PIP_MIRROR_URL was cut away (dev trees)."""
    names: set[str] = set()
    for line in text.splitlines():
        cells = [c for c in line.strip().strip("|").split("|")]
        code = [span for span in re.findall(r"`([^`]+)`", line) if "://" not in span]
        names.update(asked_identifiers(" ".join(code) + " " + (cells[0] if cells else "")))
        if cells and re.fullmatch(r"\s*\d{2,5}\s*", cells[0]):
            names.add(cells[0].strip())  # a code table's row: "| 79 | GPU fell off the bus |"
    return frozenset(names)


TABLE_ROWS_TO_CUT = 8  # a table inside a passage with more rows than this is cut to the asked rows


def _table_cut(table: list[str], asked: frozenset[str], more_than: int = 0) -> list[str] | None:
    """A table's lines cut to its header and the rows naming what the question asks about,
    with the row before and after each (a table's neighbours are often its related
    settings: FD_DISABLED_RECOVER beside FD_RECOVER_TIMEOUT). None when it has no more than
    `more_than` rows, or when no row, or every row kept, names it."""
    from ingest.chunking import header_lines

    head = header_lines(table)
    body = table[head:]
    named = {i for i, line in enumerate(body) if _row_names(line) & asked}
    keep = [line for i, line in enumerate(body) if named & {i - 1, i, i + 1}]
    if len(body) <= more_than or not keep or len(keep) == len(body):
        return None
    return table[:head] + keep


def _asked_table_lines(chunk, asked: frozenset[str]):
    """A passage whose table (under its heading's prose, so not a row group of its own) is cut
    to the asked rows (see `_table_cut`) when it has more than TABLE_ROWS_TO_CUT: "what is the
    default of SERVE_GMU" quoted all 14 rows of a team's variables table. The prose stays."""
    from dataclasses import replace

    lines = chunk.text.split("\n")
    out: list[str] = []
    i = 0
    changed = False
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            out.append(lines[i])
            i += 1
            continue
        j = _table_end(lines, i)
        cut = _table_cut(lines[i:j], asked, TABLE_ROWS_TO_CUT)
        out += lines[i:j] if cut is None else cut
        changed = changed or cut is not None
        i = j
    return replace(chunk, text="\n".join(out)) if changed else chunk


def _table_end(lines: list[str], start: int) -> int:
    """Where the run of table lines that begins at `start` ends (the first line after it)."""
    end = start
    while end < len(lines) and lines[end].lstrip().startswith("|"):
        end += 1
    return end


def _table_rows(chunk) -> bool:
    """Whether a chunk is one row group of a table split by rows (ingest/chunking.py
    split_table): every line a table row."""
    lines = [line for line in chunk.text.splitlines() if line.strip()]
    return len(lines) >= 3 and all(line.lstrip().startswith("|") for line in lines)


_ACTION = re.compile(r"```|(?<![\w-])--[a-z][\w-]+|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|`[^`\n]{2,80}`")


def _actionable(text: str) -> bool:
    """Whether a passage carries something to run or set: a code block, a flag, an
    environment variable or inline code."""
    return bool(_ACTION.search(text))


_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")


def _whole_commands(code: list[str]) -> int:
    """How many of a code block's first lines end on a whole command: no quote, heredoc or
    `\\` continuation left open after them. All of them when the block ends whole or when no
    line does (a block whose quotes cannot be read so, kept as before)."""
    quote, heredoc, last_whole = "", "", 0
    for n, line in enumerate(code, 1):
        if heredoc:
            heredoc = "" if line.strip() == heredoc else heredoc
        elif not line.lstrip().startswith("#") or quote:
            escaped = False
            for i, ch in enumerate(line):
                if escaped:
                    escaped = False
                elif ch == "\\" and quote != "'":
                    escaped = True
                elif ch == "#" and not quote and (i == 0 or line[i - 1].isspace()):
                    break  # a comment to the line's end: its apostrophes open nothing
                elif ch in "'\"" and (not quote or ch == quote):
                    quote = "" if quote else ch
            opened = None if quote else _HEREDOC.search(line)
            heredoc = opened.group(1) if opened else ""
        if not quote and not heredoc and not line.rstrip().endswith("\\"):
            last_whole = n
    return len(code) if last_whole == len(code) or last_whole == 0 else last_whole


def _bounded(text: str, limit: int, labels: dict) -> str:
    """Cut at a line boundary under `limit` characters, closing an open code fence; the
    rest stays behind the citation. A source whose own fence is never closed is closed too:
    left open, it turned the rest of the answer (and of a Slack message) into code."""
    open_fence = sum(1 for line in text.splitlines() if line.strip().startswith("```")) % 2 == 1
    if len(text) <= limit and not open_fence:
        return text
    if len(text) + 4 <= limit:
        return text + "\n```"
    out: list[str] = []
    size = 0
    fenced = False
    for line in text.splitlines():
        if size + len(line) + 1 > limit - 40:
            break
        out.append(line)
        size += len(line) + 1
        if line.strip().startswith("```"):
            fenced = not fenced
    if fenced:
        # Cut right after a fence opened, the quote would end in an empty code box. Cut in
        # the middle of a command (an open quote, heredoc or line continuation), the block
        # ends before that command: closed as if whole, `python -c '` left open read as a
        # command, and pasted it hung the shell (newcomer).
        opened = max(i for i, line in enumerate(out) if line.strip().startswith("```"))
        del out[opened + 1 + _whole_commands(out[opened + 1:]):]
        if any(line.strip() for line in out[opened + 1:]):
            out.append("```")
        else:
            del out[opened:]
    lines = text.splitlines()
    if out and _TABLE_RULE.match(out[-1].strip()) and len(lines) > len(out) and lines[len(out)].lstrip().startswith("|"):
        # Only a table's header fitted: its first row, cut, says more than the header alone;
        # with no room for a useful part of it, the header goes too (given 80 characters
        # whatever the room, the cut row took the answer past the limit: 3,041 of 3,000).
        room = limit - 40 - size - len(" … |")
        if room >= 60:
            out.append(_cut_line(lines[len(out)], room) + " … |")
        elif len(out) >= 2:
            del out[-2:]
    if not any(line.strip() for line in out):
        # The first line alone is over the room (a wiki paragraph on one line, a long config
        # line): cut inside it, at a sentence or a word, not to a bare "(more in the source)".
        first = next(i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("```"))
        code = sum(1 for line in lines[:first] if line.strip().startswith("```")) % 2 == 1
        out = ["```", _cut_line(lines[first], limit - 48), "```"] if code else [_cut_line(lines[first], limit - 40)]
    out.append(labels["cut"])
    return "\n".join(out)


_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？；;]")


def _cut_line(line: str, limit: int) -> str:
    """A line cut under `limit` characters after its last full sentence there, else its last
    whole word; a line with neither (one CJK run) is cut at the limit."""
    head = line[:max(limit, 1)]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= len(head) // 3:
        return head[:ends[-1]].rstrip()
    space = head.rfind(" ")
    return head[:space].rstrip() if space >= len(head) // 3 else head


def _is_overview(kb, doc_id: str) -> bool:
    return any("summary" in meta.tags for key, meta in kb.index.docs.items() if meta.id == doc_id)


def _wrong_hardware_beside(top: ArticleMatch, art: ArticleMatch) -> bool:
    """An article declared for other hardware is no alternative beside an answer that applies
    (a TPU user answered from a team's runbook was offered the CUDA OOM article too)."""
    return bool(art.hardware_conflict) and not top.hardware_conflict


VAGUE_TERMS = 2  # keywords in a question too short to tell articles apart ("vllm hangs", "显存爆了")
VAGUE_SPAN = 0.35  # how far behind the best a fully covered article may score and still fit it
VAGUE_ALTERNATIVES = 3


def _vague(result: Retrieval) -> bool:
    """Whether a question is too short to choose: two keywords, each in at least three
    articles close to the best. "vllm hangs" got the download-or-load hang at 0.99, and the
    hang of requests waiting for KV-cache blocks was not even offered."""
    if result.n_terms > VAGUE_TERMS or result.articles[0].signatures:
        return False
    top = result.articles[0]
    fits = [a for a in result.articles[:5] if a.coverage >= 0.99 and a.score >= top.score - VAGUE_SPAN and not a.passage]
    return len(fits) >= 3


def _alternatives(kb, result: Retrieval, top_k: int, vague: bool = False) -> list[ArticleMatch]:
    """Other articles that fit about as well; overview articles are not alternatives. For a
    question too short to choose (`_vague`), every fully covered article close to the best."""
    top = result.articles[0]
    out = []
    for art in result.articles[1 : max(1, top_k) + 1]:
        if len(out) >= max(0, top_k - 1):
            break
        if top.signatures and not art.signatures:
            continue  # a verbatim log line is stronger evidence than any paraphrase
        if _is_overview(kb, art.doc_id):
            continue
        if _wrong_hardware_beside(top, art):
            continue
        if vague and art.coverage >= 0.99 and art.score >= top.score - VAGUE_SPAN:
            out.append(art)
        elif art.score >= top.score - AMBIGUITY_MARGIN and art.relevance >= ALTERNATIVE_RELEVANCE * top.relevance:
            out.append(art)
    return out


def _section(chunks, kind: str):
    for chunk in chunks:
        if chunk.kind == kind:
            return chunk
    return None


def _sections(chunks, kind: str) -> list:
    return [c for c in chunks if c.kind == kind]


def _fix_hint(text: str) -> str:
    """The first command of a Fixes section (or its first line): enough to act on."""
    in_code = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            continue
        if in_code and stripped and not stripped.startswith("#"):
            return f"`{stripped}`"
    for line in text.splitlines():
        if "`" in line and not line.strip().startswith("|---"):
            if line.strip().startswith("|"):  # a table row: its cells, not its pipes
                return ": ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip())[:200]
            return line.strip().lstrip("-*0123456789. |").strip()[:200]
    return _first_sentence(text)


def _first_sentence(text: str) -> str:
    line = _first_line(text)
    for stop in ("。", ". ", "；", "; "):
        if stop in line:
            return _code_closed(line[: line.index(stop) + 1].strip())
    return line


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("```") or line.startswith("|---"):
            continue
        if line.startswith("`") and line.endswith("`") and line.count("`") == 2:
            line = line[1:-1]  # a line that is one code span reads as plain text
        return _code_closed(line[:160])
    return ""


def _code_closed(text: str) -> str:
    """A cut that falls inside a code span closes it: a stray backtick turned the rest of a
    line ("tell them apart by: vllm serve` sits …") into code."""
    return text + "`" if text.count("`") % 2 else text


def _specific_signs(text: str, matched: list[str]) -> list[str]:
    """The log-signature bullets that hold a signature the question quoted and say what to do
    about that line (more than the quoted line itself)."""
    from oncall_common.lang import cjk_count

    from .retrieval import squash

    wanted = [squash(m) for m in matched if m.strip()]
    out = []
    for line in text.splitlines():
        if not line.lstrip().startswith(("-", "*", "•")) or not any(w in squash(line) for w in wanted):
            continue
        said = re.sub(r"`[^`]*`", "", line).strip(" -*•\t")
        if len(said.split()) >= 6 or cjk_count(said) >= 8:
            out.append(line)
    return out


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, a fenced code block (blank lines and all) kept with
    the paragraph it belongs to."""
    out: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if out[-1]:
                out.append([])
            continue
        out[-1].append(line)
    return ["\n".join(p) for p in out if p]


def _signature_first(text: str, matched: list[str]) -> str:
    """A fixes section with the paragraphs that name the asker's own log line first: the
    remedy for a client's `maximum context length is … tokens` 400 came after a table of
    batch budgets, past the quoting limit, so the answer never said to lower max_tokens."""
    from .retrieval import squash

    wanted = [squash(m) for m in matched if m.strip()]
    paragraphs = _paragraphs(text)
    named = [p for p in paragraphs if any(w in squash(p) for w in wanted)]
    if not named or named[0] is paragraphs[0]:
        return text
    return "\n\n".join(named + [p for p in paragraphs if not any(p is n for n in named)])


# A fix step that gives the weights room: more GPUs, a smaller checkpoint, or offloading. Not a
# bare "fp8": `--kv-cache-dtype fp8` shrinks the KV cache, not the weights (review).
_ADDS_ROOM = re.compile(r"tensor[-_]parallel|pipeline[-_]parallel|quantiz|\b(?:awq|gptq|int4)\b|cpu[-_]offload"
                        r"|\b(?:more|add|another)\s+gpus?\b|\bgpus?\s+with\b|张量并行|流水线并行|量化|加卡|多张卡"
                        r"|更多(?:的)?\s*(?:卡|gpu)|增加\s*(?:部署)?\s*(?:卡数|卡|gpu)", re.I)
_STEP = re.compile(r"^\s*\d+(?:[.)）]\s|、\s*)")


def _list_end(lines: list[str], last_step: int) -> int:
    """Where a numbered list ends: at a blank line before an unindented paragraph that is no
    step, so what follows the list (a note, a command for all of it) is not the last step's."""
    return next((i for i in range(last_step + 1, len(lines) - 1)
                 if not lines[i].strip() and lines[i + 1][:1] not in ("", " ", "\t", "`")), len(lines))


def _fixes_that_add_room(text: str, labels: dict) -> str:
    """The fix steps that can make weights fit the asker's GPUs, when the note above says
    nothing else can: under "no flag or memory setting changes that", the KV-cache article
    still listed "lower --max-model-len" first (newcomer trial). A table keeps its header and
    the rows that add room; a fix with none is kept behind a line that says it helps only
    once the weights fit."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _STEP.match(line)]
    if starts:
        end = _list_end(lines, starts[-1])
        steps = [lines[a:b] for a, b in zip(starts, starts[1:] + [end])]
        kept = [step for step in steps if _ADDS_ROOM.search("\n".join(step))]
        if kept:
            out = [_STEP.sub(f"{n}. ", line, count=1) if k == 0 else line
                   for n, step in enumerate(kept, 1) for k, line in enumerate(step)]
            return "\n".join(lines[:starts[0]] + out + lines[end:]).strip()
    rows = [i for i, line in enumerate(lines) if line.lstrip().startswith("|")]
    if len(rows) > 2 and any(_ADDS_ROOM.search(lines[i]) for i in rows[2:]):
        # header and rule, then the rows that add room ("add GPUs with --tensor-parallel-size")
        return "\n".join(line for i, line in enumerate(lines) if i not in rows[2:] or _ADDS_ROOM.search(line)).strip()
    return f"{labels['weights_first']}\n\n{text}"


_LOWER = re.compile(r"\b(?:lower|reduce|decrease|shrink)\b|调低|降低|减小|调小", re.I)
_FLAG_IN_CELL = re.compile(r"`(--[a-z][\w-]+)")
_STEP_CELL = re.compile(r"^(\s*)(\d+(?:\.\d+)?)\s*→\s*(\d+(?:\.\d+)?)(\s*)$")


def _steps_from_your_values(text: str, flags: dict[str, str] | None, labels: dict) -> str:
    """A table row that says to lower a setting by an example step ("lower `--max-model-len` |
    4096 → 2048") gets the asker's own value beside it, and says when that value is already
    at or below where the step ends: a server at --max-model-len 2048 and
    --gpu-memory-utilization 0.7 read "4096 → 2048" and "0.95 → 0.8" as the way to go
    (newcomer trial). No new figure is made up; the step stays the article's."""
    if not flags or "→" not in text:
        return text
    yours = {setting_key(flag): value for flag, value in flags.items() if value}
    out = []
    for line in text.splitlines():
        cells = line.split("|")
        flag = _FLAG_IN_CELL.search(cells[1]) if line.lstrip().startswith("|") and len(cells) >= 4 else None
        value = yours.get(setting_key(flag.group(1))) if flag and _LOWER.search(cells[1]) else None
        step = _STEP_CELL.match(cells[2]) if value is not None else None
        if step is not None and re.fullmatch(r"\d+(?:\.\d+)?", value):
            key = "yours_low" if float(value) <= float(step.group(3)) else "yours_value"
            halves = step.group(2).isdigit() and step.group(3).isdigit() and int(step.group(2)) == 2 * int(step.group(3))
            if key == "yours_value" and halves and value.isdigit() and int(value) > int(step.group(2)):
                # The step halves: "4096 → 2048" beside a server at 32768 read as "go to 2048";
                # the same step from the asker's value is 16384 (trial).
                key = "yours_step"
            said = labels[key].format(value=value, next=int(value) // 2 if value.isdigit() else value)
            cells[2] = f"{step.group(1)}{step.group(2)} → {step.group(3)}{said}{step.group(4)}"  # the English label starts with its space
            line = "|".join(cells)
        out.append(line)
    return "\n".join(out)


def _article_body(kb, art: ArticleMatch, lang: str, labels: dict, cites: _Cites, weights_over: bool = False,
                  flags: dict[str, str] | None = None) -> list[str]:
    doc_lang, other = _pick_lang(kb, art.doc_id, lang)
    chunks = kb.article_chunks(art.doc_id, doc_lang)
    title = chunks[0].title.split(" > ")[0] if chunks else art.doc_id
    parts = [f"### {title}"]
    if other:
        parts.append(labels["other_lang"])
    structured = False
    sig = _section(chunks, "signatures") if art.signatures else None
    specific = _specific_signs(sig.text, art.signatures) if sig else []
    if specific:
        # The asker's own log line, with the remedy the article gives for exactly that line,
        # comes first: "Free memory on device … is less than desired GPU memory utilization"
        # got the general OOM table and "start with --max-model-len", and its own fix (free
        # the GPU or lower --gpu-memory-utilization) only at the end.
        parts += ["", f"**{labels['your_line']}** {cites.ref(sig, art.score)}", "", "\n".join(specific)]
    for kind, label in (("causes", "cause"), ("fixes", "fix"), ("checks", "check")):
        found = _sections(chunks, kind)
        if not found:
            continue
        structured = True
        parts += ["", f"**{labels[label]}** {cites.ref(found[0], art.score)}", ""]
        text = "\n\n".join(c.text for c in found)
        if kind == "fixes":
            text = _fixes_that_add_room(text, labels) if weights_over else _steps_from_your_values(text, flags, labels)
        parts += [_signature_first(text, art.signatures) if specific and kind == "fixes" else text]
    if sig and not specific:
        parts += ["", f"**{labels['signs']}** {cites.ref(sig, art.score)}", "", sig.text]
    if not structured:
        # A user's runbook without the KB's section names: quote its best passages.
        best = [c for c in art.chunks if c.chunk.lang == doc_lang and c.chunk.kind != "question"][:2]
        best = best or art.chunks[:1]
        for sc in best:
            parts += ["", f"**{sc.chunk.section}** {cites.ref(sc.chunk, sc.score)}", "", sc.chunk.text]
    return parts
