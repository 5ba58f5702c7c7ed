"""Offline evaluation: symptom→fix cases scored for retrieval, answers and refusals.

A case passes a text when every `expect` group has at least one alternative in it
(case-insensitive). Retrieval is judged on the whole text of each retrieved article (both
languages), so the cases need no article ids and held-out questions can be added freely;
the answer is judged on what the user would read.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import Settings
from .errors import AssistantError

LANGS = ("zh", "en")


@dataclass(frozen=True)
class Case:
    id: str
    lang: str
    kind: str
    question: str
    expect: list[list[str]]
    grounded: bool


@dataclass
class CaseResult:
    case: Case
    rank: int | None  # 1-based rank of the first passing article, None if none in the top 10
    answer_pass: bool
    grounded: bool
    top_ids: list[str]
    latency_ms: float
    citations_ok: bool = True  # every [n] in the answer names a listed citation, and there is one
    lang_ok: bool = True
    tool_calls: int = 0
    fallback: bool = False  # an LLM run that ended with the extractive answer


@dataclass
class Metrics:
    n: int = 0
    in_scope: int = 0
    pass1: float = 0.0
    pass3: float = 0.0
    mrr: float = 0.0
    answer_fix: float = 0.0
    grounded_rate: float = 0.0
    false_refusal: float = 0.0
    out_of_scope: int = 0
    oos_refusal: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    citations_ok: float = 0.0
    lang_ok: float = 0.0
    tool_calls: float = 0.0
    fallback: float = 0.0
    failures: list[str] = field(default_factory=list)


def load_cases(path: Path) -> list[Case]:
    cases = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise AssistantError(f"cannot read eval cases {path}: {exc}") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            cases.append(
                Case(str(raw["id"]), str(raw["lang"]), str(raw.get("kind", "")), str(raw["question"]),
                     [[str(a) for a in group] for group in raw.get("expect", [])], bool(raw.get("grounded", True)))
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise AssistantError(f"{path}:{n}: malformed case ({exc})", "each line needs id, lang, question, expect, grounded") from exc
    return cases


def passes(text: str, expect: list[list[str]]) -> bool:
    """Every group has one alternative in text, case-insensitively. No groups: nothing to check."""
    low = text.lower()
    return all(any(alt.lower() in low for alt in group) for group in expect)


def _article_texts(kb) -> dict[str, str]:
    texts: dict[str, list[str]] = {}
    for (doc_id, _lang), chunks in kb.by_doc.items():
        texts.setdefault(doc_id, []).extend(f"{c.title}\n{c.text}" for c in chunks)
    return {k: "\n".join(v) for k, v in texts.items()}


def run_case(kb, settings: Settings, case: Case, mode: str, texts: dict[str, str] | None = None) -> CaseResult:
    """mode: hybrid | dense | bm25 (extractive answers), or llm (hybrid retrieval + the LLM)."""
    from .answer import answer_question
    from .lang import detect_lang

    llm = mode == "llm"
    mode = "hybrid" if llm else mode
    started = time.perf_counter()
    answer = answer_question(case.question, settings, mode=mode, kb=kb, use_llm=llm)
    latency = (time.perf_counter() - started) * 1000
    from .retrieval import search

    result = search(kb.index, kb.embedder, case.question, mode=mode, dense_weight=settings.dense_weight,
                    bm25_weight=settings.bm25_weight, signature_boost=settings.signature_boost,
        faiss_min_vectors=settings.faiss_min_vectors,
        coverage_weight=settings.coverage_weight,
                    min_relevance=settings.min_relevance, limit=10)
    texts = texts if texts is not None else _article_texts(kb)
    rank = None
    for i, art in enumerate(result.articles, 1):
        if case.expect and passes(texts.get(art.doc_id, ""), case.expect):
            rank = i
            break
    refs = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    citations_ok = bool(answer.citations) and all(1 <= n <= len(answer.citations) for n in refs)
    return CaseResult(case, rank, passes(answer.answer, case.expect) and answer.grounded, answer.grounded,
                      [a.doc_id for a in result.articles[:3]], latency, citations_ok,
                      detect_lang(answer.answer) == case.lang or not answer.grounded, len(answer.tool_calls),
                      llm and answer.backend == "extractive" and answer.grounded)


def summarise(results: list[CaseResult]) -> Metrics:
    m = Metrics(n=len(results))
    scoped = [r for r in results if r.case.grounded]
    oos = [r for r in results if not r.case.grounded]
    m.in_scope, m.out_of_scope = len(scoped), len(oos)
    if scoped:
        m.pass1 = sum(r.rank == 1 for r in scoped) / len(scoped)
        m.pass3 = sum(r.rank is not None and r.rank <= 3 for r in scoped) / len(scoped)
        m.mrr = sum(1 / r.rank for r in scoped if r.rank) / len(scoped)
        m.answer_fix = sum(r.answer_pass for r in scoped) / len(scoped)
        m.grounded_rate = sum(r.grounded for r in scoped) / len(scoped)
        m.false_refusal = 1 - m.grounded_rate
    if oos:
        m.oos_refusal = sum(not r.grounded for r in oos) / len(oos)
    lat = sorted(r.latency_ms for r in results)
    m.p50_ms = lat[len(lat) // 2] if lat else 0.0
    m.p95_ms = lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else 0.0
    if results:
        m.citations_ok = sum(r.citations_ok for r in results) / len(results)
        m.lang_ok = sum(r.lang_ok for r in results) / len(results)
        m.tool_calls = sum(r.tool_calls for r in results) / len(results)
        m.fallback = sum(r.fallback for r in results) / len(results)
    for r in results:
        if r.case.grounded and (r.rank is None or r.rank > 3):
            m.failures.append(f"{r.case.id}: not in top 3 (got {', '.join(r.top_ids)}) — {r.case.question}")
        elif r.case.grounded and r.rank != 1:
            m.failures.append(f"{r.case.id}: expected fix at rank {r.rank}, first was {r.top_ids[0]} — {r.case.question}")
        elif r.case.grounded and not r.grounded:
            m.failures.append(f"{r.case.id}: refused an in-scope question — {r.case.question}")
        elif not r.case.grounded and r.grounded:
            m.failures.append(f"{r.case.id}: answered an out-of-scope question with {r.top_ids[0]} — {r.case.question}")
    return m


def evaluate(kb, settings: Settings, cases: list[Case], modes: list[str]) -> dict[str, dict[str, Metrics]]:
    """mode → group ("zh", "en", "all") → Metrics."""
    report: dict[str, dict[str, Metrics]] = {}
    texts = _article_texts(kb)
    for mode in modes:
        results = [run_case(kb, settings, c, mode, texts) for c in cases]
        groups = {"all": results}
        for lang in LANGS:
            groups[lang] = [r for r in results if r.case.lang == lang]
        report[mode] = {g: summarise(rs) for g, rs in groups.items()}
    return report


def check_thresholds(report: dict[str, dict[str, Metrics]], mode: str, min_pass3: float, min_pass1: float) -> list[str]:
    """What is under the bar, per language, for the mode that ships (hybrid)."""
    problems = []
    for lang in LANGS:
        m = report[mode].get(lang)
        if not m or not m.in_scope:
            continue
        if m.pass3 < min_pass3:
            problems.append(f"{mode}/{lang}: pass@3 {m.pass3:.3f} < {min_pass3}")
        if m.pass1 < min_pass1:
            problems.append(f"{mode}/{lang}: pass@1 {m.pass1:.3f} < {min_pass1}")
    all_m = report[mode]["all"]
    if all_m.out_of_scope and all_m.oos_refusal < 1.0:
        problems.append(f"{mode}: out-of-scope refusal {all_m.oos_refusal:.3f} < 1.0")
    if all_m.in_scope and all_m.grounded_rate < 0.97:
        problems.append(f"{mode}: in-scope grounded {all_m.grounded_rate:.3f} < 0.97")
    return problems


_COLUMNS = [("pass@1", "pass1"), ("pass@3", "pass3"), ("MRR", "mrr"), ("answer has fix", "answer_fix"),
            ("OOS refused", "oos_refusal"), ("false refusals", "false_refusal"), ("p50 ms", "p50_ms")]
_LLM_COLUMNS = [("answer has fix", "answer_fix"), ("citations valid", "citations_ok"), ("in asker's language", "lang_ok"),
                ("OOS refused", "oos_refusal"), ("tool calls/case", "tool_calls"), ("fell back to KB", "fallback"),
                ("p50 ms", "p50_ms"), ("p95 ms", "p95_ms")]


def to_json(report: dict[str, dict[str, Metrics]], problems: list[str], cases_path: str) -> dict:
    return {
        "cases": cases_path,
        "passed": not problems,
        "problems": problems,
        "modes": {mode: {g: vars(m) for g, m in groups.items()} for mode, groups in report.items()},
    }


def to_markdown(report: dict[str, dict[str, Metrics]], problems: list[str], cases_path: str) -> str:
    lines = ["# Eval report", "", f"Cases: `{cases_path}`", "",
             "**Result: " + ("PASS**" if not problems else "FAIL**: " + "; ".join(problems)), ""]
    lines += ["| mode | lang | cases | " + " | ".join(c for c, _ in _COLUMNS) + " |",
              "|---|---|---|" + "---|" * len(_COLUMNS)]
    for mode, groups in report.items():
        if mode == "llm":
            continue
        for g in ("zh", "en", "all"):
            m = groups[g]
            cells = [f"{getattr(m, a):.3f}" if a != "p50_ms" else f"{m.p50_ms:.0f}" for _, a in _COLUMNS]
            lines.append(f"| {mode} | {g} | {m.n} | " + " | ".join(cells) + " |")
    if "llm" in report:
        lines += ["", "## LLM answers (hybrid retrieval + the configured LLM)", "",
                  "| lang | cases | " + " | ".join(c for c, _ in _LLM_COLUMNS) + " |", "|---|---|" + "---|" * len(_LLM_COLUMNS)]
        for g in ("zh", "en", "all"):
            m = report["llm"][g]
            cells = [f"{getattr(m, a):.0f}" if a.endswith("_ms") else f"{getattr(m, a):.3f}" for _, a in _LLM_COLUMNS]
            lines.append(f"| {g} | {m.n} | " + " | ".join(cells) + " |")
    for mode, groups in report.items():
        fails = groups["all"].failures
        lines += ["", f"## Misses ({mode}): {len(fails)}", ""]
        lines += [f"- {f}" for f in fails] or ["- none"]
    return "\n".join(lines) + "\n"
