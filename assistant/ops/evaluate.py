"""Offline evaluation: symptom→fix cases scored for retrieval, answers and refusals.

A case passes a text when every `expect` group has at least one alternative in it
(case-insensitive; a string in place of a group is a group of one). Retrieval is judged on
the whole text of each retrieved article (both languages), so the cases need no article ids
and held-out questions can be added freely; the answer is judged on what the user would read.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from assistant.config import Settings
from oncall_common.errors import BadInput
from oncall_common.lang import LANGS, detect_lang



@dataclass(frozen=True)
class Case:
    id: str
    lang: str
    kind: str
    question: str
    expect: list[list[str]]
    grounded: bool
    # Optional, for sets built from real users' questions and for a team's own docs:
    topics: tuple[str, ...] = ()  # acceptable article ids (`expect_topic`); empty = not judged
    expect_file: str | tuple[str, ...] = ""  # the file that answers (a suffix of the cited source), or files that each do
    source: str = ""  # where the question came from (owner/repo#N or a page address)
    split: str = ""  # "dev" (tune on it) or "test" (report only)


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
    cited: list[str] = field(default_factory=list)  # distinct cited article ids, in order of first citation
    cited_files: list[str] = field(default_factory=list)  # cited sources, in order
    confidence: float | None = None  # the refusal model's P(in scope)
    answer_chars: int = 0
    unsure: bool = False  # answered, but said to be a close call ("coverage": "tentative")
    file_ok: bool = False  # the first citation is the expected file, or its zh/en twin (see `_first_file_ok`)
    answer_text: str = ""  # kept to say which fix string a miss lacks

    def row(self) -> dict:
        """This case's result as report.json lists it: a team reads why one case failed."""
        return {"id": self.case.id, "lang": self.case.lang, "in_scope": self.case.grounded, "answered": self.grounded,
                "unsure": self.unsure, "cited": self.cited[:3], "cited_files": list(dict.fromkeys(self.cited_files))[:3],
                "rank": self.rank, "file_ok": self.file_ok if self.case.expect_file else None,
                "answer_has_fix": self.answer_pass if self.case.grounded and self.case.expect else None,  # nothing to check: not "found"
                "confidence": None if self.confidence is None else round(self.confidence, 3), "answer_chars": self.answer_chars,
                "question": self.case.question[:300], "answer_start": self.answer_text[:300]}


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
    topic_cases: int = 0
    topic1: float = 0.0  # first cited article is an expected topic
    topic3: float = 0.0  # an expected topic among the first three distinct cited articles
    fix_cases: int = 0  # in-scope cases with fix strings (answer_fix's denominator)
    ranked_cases: int = 0  # in-scope cases naming what answers them (pass@k's denominator)
    file_cases: int = 0
    file1: float = 0.0  # first citation comes from the expected file
    max_answer_chars: int = 0
    # Out-of-scope questions answered with no word of doubt (the costly mistake), and
    # in-scope answers said to be close calls (the price of saying so).
    sure_wrong: float = 0.0
    unsure_right: float = 0.0
    failures: list[str] = field(default_factory=list)


CASE_KEYS = ("id", "lang", "kind", "question", "expect", "expect_topic", "expect_file", "grounded", "source", "split",
             "note", "draft",
             "log", "tool", "expected", "arguments", "key", "missing")  # the last six: eval/capacity.jsonl's figure checks
_HINT = ("each line needs id and question; an in-scope case also expect (fix strings) and expect_topic or expect_file; "
         "an out-of-scope one expect_topic \"oos\" or grounded: false")


def load_cases(path: Path, max_question_bytes: int = 8192) -> list[Case]:
    """Read and check a case file before anything runs. Every problem is one line naming the
    file, line and field, with exit code 2 (bad input), never a figure: a team's CI must tell
    "our runbooks regressed" (exit 1) from "the case file is broken" (trial: "grounded":
    "false" was read as true, a typo'd key was ignored, duplicate ids ran twice, an empty
    question failed after the whole run, an unfilled feedback draft was scored)."""
    cases = []
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()  # a Windows editor's BOM is no error
    except FileNotFoundError as exc:
        raise BadInput(f"no case file at {path}",
                       "the case sets live in a checkout's eval/ folder: run from the repository root, "
                       "or pass --cases FILE (one JSON case per line, see the README's Eval section)") from exc
    except OSError as exc:
        raise BadInput(f"cannot read eval cases {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded)",
                       "save the case file as UTF-8, one JSON case per line") from exc
    seen: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise BadInput(f"{path}:{n}: malformed case ({exc})", _HINT) from exc
        case = _case(path, n, raw, max_question_bytes)
        if case.id in seen:
            raise BadInput(f"{path}:{n}: case id {case.id!r} is also on line {seen[case.id]}", "give each case its own id")
        seen[case.id] = n
        cases.append(case)
    if not cases:
        raise BadInput(f"no cases in {path}", "one JSON object per line: id, question, expect (and expect_topic or expect_file)")
    return cases


def _labels(where: str, cid: str, raw: dict) -> str:
    """Check the string fields (lang, kind, source, split, note); the lang given, or ""."""
    for key in ("lang", "kind", "source", "split", "note"):
        if key in raw and not isinstance(raw[key], str):
            raise BadInput(f"{where}: case {cid!r}: {key} must be a string")
    lang = raw.get("lang") or ""
    if lang and lang not in LANGS:
        raise BadInput(f"{where}: lang {lang!r} is not one of {', '.join(LANGS)}", "leave lang out to have it detected from the question")
    if raw.get("split", "") not in ("", "dev", "test"):
        raise BadInput(f"{where}: case {cid!r}: split must be dev or test, got {raw['split']!r}")
    return lang


def _case(path: Path, n: int, raw: object, max_question_bytes: int) -> Case:
    """One line's case, checked field by field."""
    import difflib

    from assistant.questions import validate_question

    where = f"{path}:{n}"
    if not isinstance(raw, dict):
        raise BadInput(f"{where}: not a case (a JSON object with id and question)", _HINT)
    unknown = [key for key in raw if key not in CASE_KEYS]
    if unknown:
        near = difflib.get_close_matches(str(unknown[0]), CASE_KEYS, n=1)
        raise BadInput(f"{where}: unknown field {unknown[0]!r}" + (f" (did you mean {near[0]!r}?)" if near else ""),
                       "fields: " + ", ".join(CASE_KEYS))
    for key in ("id", "question"):
        if key not in raw:
            raise BadInput(f"{where}: the case has no {key}", _HINT)
    cid = raw["id"]
    if not isinstance(cid, str) or not cid.strip():
        raise BadInput(f"{where}: id must be a non-empty string, got {json.dumps(cid, ensure_ascii=False)[:40]}")
    if not isinstance(raw["question"], str):
        raise BadInput(f"{where}: case {cid!r}: question must be a string")
    try:
        question = validate_question(raw["question"], max_question_bytes)
    except BadInput as exc:
        raise BadInput(f"{where}: case {cid!r}: {exc.message}", "fix the question in the case file") from exc
    lang = _labels(where, cid, raw) or detect_lang(question)
    topic = raw.get("expect_topic") or ()
    if not (isinstance(topic, (str, tuple)) or isinstance(topic, list) and all(isinstance(t, str) for t in topic)):
        raise BadInput(f"{where}: case {cid!r}: expect_topic must be an article id or a list of them")
    topics = tuple([topic] if isinstance(topic, str) else topic)
    if "grounded" in raw and not isinstance(raw["grounded"], bool):
        raise BadInput(f"{where}: case {cid!r}: grounded must be true or false, got {json.dumps(raw['grounded'])[:40]}")
    grounded = raw.get("grounded", topics != ("oos",))
    files = raw.get("expect_file") or ""  # null and [] say "no file", as out-of-scope cases write it
    if not (isinstance(files, str) or isinstance(files, list) and all(isinstance(f, str) and f for f in files)):
        raise BadInput(f"{where}: case {cid!r}: expect_file must be a path or a list of paths")
    expect = _expect_groups(path, n, raw)
    if isinstance(raw.get("draft"), dict) and grounded and not expect and not files and not (topics and topics != ("oos",)):
        raise BadInput(f"{where}: case {cid!r} is an unfilled feedback draft (expect is empty)",
                       "fill in expect (and expect_file for your own docs) as draft.todo says, or set grounded false "
                       "if it is out of scope; then drop the draft field")
    if not any(key in raw for key in ("expect", "expect_topic", "expect_file", "grounded", "expected")):
        # Only an id and a question: scored as it stood, it counted a miss against whatever was
        # cited. ("expect": [] or "grounded": true says "should be answered": only the refusal
        # is judged; a capacity case checks its "expected" figure.)
        raise BadInput(f"{where}: case {cid!r} has nothing to check it by",
                       "an in-scope case needs expect (fix strings), expect_topic or expect_file; "
                       "an out-of-scope one expect_topic \"oos\" or grounded: false")
    if not grounded and (expect or files or topics not in ((), ("oos",))):
        raise BadInput(f"{where}: case {cid!r} is out of scope (grounded: false) yet names what answers it",
                       "drop expect/expect_file/expect_topic, or set grounded: true")
    return Case(cid, lang, str(raw.get("kind", "")), question, expect, grounded,
                () if topics == ("oos",) else topics, _files(files), str(raw.get("source", "")), str(raw.get("split", "")))


def _expect_groups(path: Path, n: int, raw: dict) -> list[list[str]]:
    """`expect` as groups of alternatives. A string element is a group of its own, so a flat
    `["a", "b"]` requires both: iterated as a group, a string became single characters and
    any answer with an "a" in it passed."""
    value = raw.get("expect", [])
    groups = [[g] if isinstance(g, str) else g for g in value] if isinstance(value, list) else None
    # An empty group, or an empty alternative (contained in every text), would pass anything.
    if groups is not None and all(isinstance(g, list) and g and all(isinstance(a, str) and a.strip() for a in g)
                                  for g in groups):
        return [list(g) for g in groups]
    raise BadInput(f"{path}:{n}: case {raw.get('id')!r} has a malformed expect: {json.dumps(value, ensure_ascii=False)[:80]}",
                         'write a list of groups, each a string or a non-empty list of alternative strings, '
                         'e.g. [["kernel.msgmax"], ["1048576", "1MB"]]')


def missing_files(kb, cases: list[Case]) -> list[str]:
    """Cases whose `expect_file` names no file of this KB: a renamed page or a typo, which
    would otherwise count quietly as a miss in every run."""
    return [f"{c.id} ({', '.join((c.expect_file,) if isinstance(c.expect_file, str) else c.expect_file)})"
            for c in cases if c.expect_file and not _named_sources(kb, c.expect_file)]


def case_warnings(kb, cases: list[Case]) -> list[str]:
    """What about the cases and this KB makes figures suspect, for stderr and the report."""
    warnings: list[str] = []
    missing = missing_files(kb, cases)
    if missing:
        warnings.append(f"{len(missing)} case(s) expect a file this KB does not have, counted as file@1 misses (pass@1 and the "
                        "fix are still scored): " + "; ".join(missing[:5]) + (" …" if len(missing) > 5 else ""))
    loose = loosely_named(kb, cases)
    if loose:
        warnings.append(f"{len(loose)} case(s) name a file by a longer path than this KB has, matched by its last part only "
                        "(a moved or deleted page still counts as found): " + "; ".join(loose[:5]) + (" …" if len(loose) > 5 else ""))
    nowhere = unfindable_expects(kb, [c for c in cases if c.grounded])
    if nowhere:
        warnings.append(f"{len(nowhere)} case(s) expect fix strings that no document of this KB holds (a typo, or a runbook "
                        "that changed): " + "; ".join(nowhere[:5]) + (" …" if len(nowhere) > 5 else ""))
    return warnings


def loosely_named(kb, cases: list[Case]) -> list[str]:
    """Cases whose `expect_file` names a path this KB has only the end of ("runbooks/gateway.md"
    against a KB's "gateway.md"): a trial's case for a moved page scored 1.0 against another."""
    sources = {_path(meta.source) for meta in kb.index.docs.values()}
    out = []
    for c in cases:
        for expected in (c.expect_file,) if isinstance(c.expect_file, str) else c.expect_file:
            e = _path(expected)
            if e and e not in sources and not any(s.endswith("/" + e) for s in sources):
                found = [s for s in sources if e.endswith("/" + s)]
                if found:
                    out.append(f"{c.id} ({expected} → {found[0]})")
                    break
    return out


def unfindable_expects(kb, cases: list[Case]) -> list[str]:
    """Cases with a group of fix strings that no document of this KB holds: a typo, or a
    runbook that no longer says it. The miss read "right file first, but `x` is not in the
    answer", as if the answer had cut it (trial)."""
    everything = "\n".join(_article_texts(kb).values()).lower()
    out = []
    for c in cases:
        for group in c.expect:
            if not any(alt.lower() in everything for alt in group):
                out.append(f"{c.id} ({' / '.join(group)[:60]})")
                break
    return out


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
    from assistant.answer import answer_question
    from oncall_common.lang import detect_lang

    llm = mode == "llm"
    mode = "hybrid" if llm else mode
    started = time.perf_counter()
    trace: dict = {}
    answer = answer_question(case.question, settings, mode=mode, kb=kb, use_llm=llm, trace=trace)
    latency = (time.perf_counter() - started) * 1000
    result = trace["retrieval"]
    texts = texts if texts is not None else _article_texts(kb)
    rank = None
    named = _named_sources(kb, case.expect_file) if case.expect_file and not case.expect else set()
    for i, art in enumerate(result.articles, 1):
        # A case that names only its file is ranked by that file: with no fix strings it
        # scored pass@1 0 and was listed "not in top 3 (got gateway)" with gateway.md first (trial);
        # one that names only its article, by that article.
        if (case.expect and passes(texts.get(art.doc_id, ""), case.expect) or named and _sources_of(kb, art.doc_id) & named
                or not case.expect and not named and art.doc_id in case.topics):
            rank = i
            break
    refs = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    citations_ok = bool(answer.citations) and all(1 <= n <= len(answer.citations) for n in refs)
    cited: list[str] = []
    for c in answer.citations:
        if c.id not in cited:
            cited.append(c.id)
    return CaseResult(case, rank, passes(answer.answer, case.expect) and answer.grounded, answer.grounded,
                      [a.doc_id for a in result.articles[:3]], latency, citations_ok,
                      detect_lang(answer.answer) == case.lang or not answer.grounded, len(answer.tool_calls),
                      llm and answer.backend == "extractive" and answer.grounded,
                      cited, [c.source for c in answer.citations], answer.confidence, len(answer.answer),
                      answer.grounded and answer.coverage == "tentative", _first_file_ok(kb, answer.citations, case.expect_file),
                      answer.answer)


def _first_file_ok(kb, citations, expect_file) -> bool:
    """Whether the first citation is the file that answers, or that file's twin in the other
    language: a Chinese question answered from `docs/zh/x.md` when the case names `docs/x.md`
    was answered as the README promises (from the twin in the asker's language), yet counted
    as a file@1 miss."""
    if not citations or not expect_file:
        return False
    first = citations[0]
    named = _named_sources(kb, expect_file)
    if _path(first.source) in named:
        return True
    twins = {meta.id for meta in kb.index.docs.values() if _path(meta.source) in named}
    return first.id in twins and sum(meta.id == first.id for meta in kb.index.docs.values()) == 2


def _named_sources(kb, expect_file) -> set[str]:
    """The KB's files that `expect_file` names: the file at exactly that path where the KB
    has one, else those whose path ends with it (cases written against a tree that was
    indexed from a folder above it). By the suffix alone, a case's root `README.md` was
    also `finetune_demo/README.md`, and citing any README counted as the right file."""
    sources = {_path(meta.source) for meta in kb.index.docs.values()}
    named: set[str] = set()
    for expected in (expect_file,) if isinstance(expect_file, str) else expect_file:
        e = _path(expected)
        named |= {e} if e in sources else {s for s in sources if _same_file(s, e)}
    return named


def _sources_of(kb, doc_id: str) -> set[str]:
    return {_path(meta.source) for meta in kb.index.docs.values() if meta.id == doc_id}


def _missing_text(r: CaseResult) -> str:
    """The first group of fix strings the answer lacks, as a miss names it."""
    group = next((g for g in r.case.expect if not any(alt.lower() in r.answer_text.lower() for alt in g)), ())
    return " / ".join(f"`{alt}`" for alt in group)


def _path(source: str) -> str:
    return source.replace("\\", "/").strip("/")


def summarise(results: list[CaseResult]) -> Metrics:
    m = Metrics(n=len(results))
    scoped = [r for r in results if r.case.grounded]
    oos = [r for r in results if not r.case.grounded]
    m.in_scope, m.out_of_scope = len(scoped), len(oos)
    # Ranked over the cases that say what answers them (fix strings, a file, an article): one
    # that only says "should be answered" scored pass@1 0 with the right file first (trial).
    ranked = [r for r in scoped if r.case.expect or r.case.expect_file or r.case.topics]
    m.ranked_cases = len(ranked)
    if ranked:
        m.pass1 = sum(r.rank == 1 for r in ranked) / len(ranked)
        m.pass3 = sum(r.rank is not None and r.rank <= 3 for r in ranked) / len(ranked)
        m.mrr = sum(1 / r.rank for r in ranked if r.rank) / len(ranked)
    if scoped:
        # over the cases that name fix strings: one with none has nothing to find (it read 1.000)
        fixable = [r for r in scoped if r.case.expect]
        m.fix_cases = len(fixable)
        m.answer_fix = sum(r.answer_pass for r in fixable) / len(fixable) if fixable else 0.0
        m.grounded_rate = sum(r.grounded for r in scoped) / len(scoped)
        m.false_refusal = 1 - m.grounded_rate
        m.unsure_right = sum(r.grounded and r.unsure for r in scoped) / len(scoped)
    if oos:
        m.oos_refusal = sum(not r.grounded for r in oos) / len(oos)
        m.sure_wrong = sum(r.grounded and not r.unsure for r in oos) / len(oos)
    lat = sorted(r.latency_ms for r in results)
    m.p50_ms = lat[len(lat) // 2] if lat else 0.0
    m.p95_ms = lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else 0.0
    if results:
        m.citations_ok = sum(r.citations_ok for r in results) / len(results)
        m.lang_ok = sum(r.lang_ok for r in results) / len(results)
        m.tool_calls = sum(r.tool_calls for r in results) / len(results)
        m.fallback = sum(r.fallback for r in results) / len(results)
    topical = [r for r in scoped if r.case.topics]
    m.topic_cases = len(topical)
    if topical:
        m.topic1 = sum(bool(r.cited) and r.cited[0] in r.case.topics for r in topical) / len(topical)
        m.topic3 = sum(any(t in r.case.topics for t in r.cited[:3]) for r in topical) / len(topical)
    filed = [r for r in scoped if r.case.expect_file]
    m.file_cases = len(filed)
    if filed:
        m.file1 = sum(r.file_ok for r in filed) / len(filed)
    m.max_answer_chars = max((r.answer_chars for r in results), default=0)
    m.failures = [f for r in results if (f := _miss(r))]
    return m


def _miss(r: CaseResult) -> str:
    """What went wrong with one case, as the report lists it; "" when nothing did."""
    if r.case.grounded and not (r.case.expect or r.case.expect_file or r.case.topics):
        # "should be answered" alone: only its refusal is judged (review: listed "not in top 3")
        return "" if r.grounded else f"{r.case.id}: refused an in-scope question — {r.case.question[:80]}"
    if r.case.topics and r.case.grounded and (not r.cited or r.cited[0] not in r.case.topics):
        got = ", ".join(r.cited[:3]) or "nothing"
        return f"{r.case.id}: expected {'/'.join(r.case.topics)}, cited {got}{'' if r.grounded else ' (refused)'} — {r.case.question[:160]}"
    if r.case.topics and r.case.grounded and not r.answer_pass:
        why = "refused, though the first cited article is right" if not r.grounded else "right topic but the fix is not in the answer"
        return f"{r.case.id}: {why} — {r.case.question[:160]}"
    refused = "" if r.grounded else " (refused)"  # each miss says so: the false refusals are counted from all of them
    if r.case.expect_file and r.case.grounded and not r.case.topics and (not r.file_ok or not r.answer_pass):
        # A case that names its file is judged by it first: "not in top 3 (got gateway)" for a
        # stale fix string, with gateway.md cited first, sent a team to its retrieval (trial).
        files = ", ".join(r.case.expect_file) if isinstance(r.case.expect_file, tuple) else r.case.expect_file
        if not r.file_ok:
            got = ", ".join(dict.fromkeys(r.cited_files[:3])) or "nothing"
            return f"{r.case.id}: expected {files}, cited {got}{refused} — {r.case.question[:160]}"
        if not r.grounded:
            return f"{r.case.id}: refused, though the first cited file is right — {r.case.question[:160]}"
        return f"{r.case.id}: right file first, but {_missing_text(r)} is not in the answer — {r.case.question[:160]}"
    if r.case.grounded and (r.rank is None or r.rank > 3):
        # Passages of one file share its id: named once each, not "gateway-502, gateway-502".
        return f"{r.case.id}: not in top 3 (got {', '.join(dict.fromkeys(r.top_ids))}){refused} — {r.case.question}"
    if r.case.grounded and r.rank != 1:
        return f"{r.case.id}: expected fix at rank {r.rank}, first was {r.top_ids[0]}{refused} — {r.case.question}"
    if r.case.grounded and not r.grounded:
        return f"{r.case.id}: refused an in-scope question — {r.case.question}"
    if not r.case.grounded and r.grounded:
        return f"{r.case.id}: answered an out-of-scope question with {r.top_ids[0]} — {r.case.question}"
    if r.case.grounded and not r.answer_pass:
        # The right passage first, but the answer quotes too little of it to hold the fix: it
        # counts against answer-has-fix and must be listed with the misses that explain the figure.
        return f"{r.case.id}: right passage first but the fix is not in the answer — {r.case.question}"
    return ""


def _files(value: object) -> str | tuple[str, ...]:
    """`expect_file` as written: one path, or a list when the fix is written in several files
    (a FAQ entry and the page it summarises)."""
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return str(value or "")


def _same_file(cited: str, expected: str) -> bool:
    """Sources are relative to the root they were found under; compare by path suffix."""
    a, b = _path(cited), _path(expected)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def evaluate(kb, settings: Settings, cases: list[Case], modes: list[str],
             collected: dict[str, list[CaseResult]] | None = None) -> dict[str, dict[str, Metrics]]:
    """mode → group ("zh", "en", "all", and per split) → Metrics. `collected` receives
    each mode's case results, for the reliability table and for fitting refusals."""
    report: dict[str, dict[str, Metrics]] = {}
    texts = _article_texts(kb)
    for mode in modes:
        results = [run_case(kb, settings, c, mode, texts) for c in cases]
        if collected is not None:
            collected[mode] = results
        report[mode] = {g: summarise(rs) for g, rs in group_results(results).items()}
    return report


def group_results(results: list[CaseResult]) -> dict[str, list[CaseResult]]:
    """"all", per language, and — when the cases carry a split — per split and language
    ("dev/zh", "test/all", …), so a report never mixes what was tuned on with what was not."""
    groups: dict[str, list[CaseResult]] = {"all": results}
    for lang in LANGS:
        groups[lang] = [r for r in results if r.case.lang == lang]
    for split in sorted({r.case.split for r in results if r.case.split}):
        part = [r for r in results if r.case.split == split]
        for lang in (*LANGS, "all"):
            groups[f"{split}/{lang}"] = [r for r in part if lang == "all" or r.case.lang == lang]
    return groups


@dataclass(frozen=True)
class Thresholds:
    """The bar an eval run must clear, per language. The bundled set has always demanded
    every out-of-scope case refused; sets of real questions set their own bars."""

    min_pass3: float = 0.0
    min_pass1: float = 0.0
    min_topic1: float = 0.0
    min_fix: float = 0.0
    min_oos_refusal: float = 1.0
    max_false_refusal: float = 0.03
    min_file1: float = 0.0
    max_oos_sure: float = 1.0

    def __post_init__(self) -> None:
        import math

        for name, value in vars(self).items():
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0):
                # 1.5 could never pass and NaN never failed (trial)
                raise BadInput(f"the bar {name.replace('_', '-')} must be a share from 0 to 1, got {value}")


def check_thresholds(report: dict[str, dict[str, Metrics]], mode: str, min_pass3: float = 0.0, min_pass1: float = 0.0,
                     bar: Thresholds | None = None, group_prefix: str = "") -> list[str]:
    """What is under the bar, per language, for the mode that ships (hybrid).

    group_prefix: "test/" judges only the test split of a set that has one."""
    bar = bar or Thresholds(min_pass3=min_pass3, min_pass1=min_pass1)
    problems = []
    for lang in LANGS:
        m = report[mode].get(group_prefix + lang)
        if not m or not m.n:
            continue
        name = f"{mode}/{group_prefix}{lang}"
        checks = [("pass@3", m.pass3, bar.min_pass3, m.ranked_cases), ("pass@1", m.pass1, bar.min_pass1, m.ranked_cases),
                  ("topic@1", m.topic1, bar.min_topic1, m.topic_cases), ("answer has fix", m.answer_fix, bar.min_fix, m.fix_cases),
                  ("file@1", m.file1, bar.min_file1, m.file_cases),
                  ("out-of-scope refused", m.oos_refusal, bar.min_oos_refusal, m.out_of_scope)]
        for label, value, floor, count in checks:
            if count and value < floor:
                problems.append(f"{name}: {label} {value:.3f} < {floor}")
        if m.in_scope and m.false_refusal > bar.max_false_refusal:
            problems.append(f"{name}: false refusals {m.false_refusal:.3f} > {bar.max_false_refusal}")
        if m.out_of_scope and m.sure_wrong > bar.max_oos_sure:
            problems.append(f"{name}: out of scope answered as sure {m.sure_wrong:.3f} > {bar.max_oos_sure}")
    return problems


def reliability(results: list[CaseResult], bins: int = 5) -> list[dict]:
    """How often questions the refusal model scored in each band really were in scope:
    a calibrated model's rows read like the diagonal."""
    rows = []
    scored = [r for r in results if r.confidence is not None]
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [r for r in scored if lo <= r.confidence < hi or (b == bins - 1 and r.confidence == 1.0)]
        rows.append({"band": f"{lo:.1f}–{hi:.1f}", "cases": len(inside),
                     "in_scope": sum(r.case.grounded for r in inside),
                     "answered": sum(r.grounded for r in inside)})
    return rows


_COLUMNS = [("pass@1", "pass1"), ("pass@3", "pass3"), ("MRR", "mrr"), ("answer has fix", "answer_fix"),
            ("OOS refused", "oos_refusal"), ("OOS answered as sure", "sure_wrong"), ("false refusals", "false_refusal"),
            ("in scope, said unsure", "unsure_right"), ("p50 ms", "p50_ms")]
_TOPIC_COLUMNS = [("topic@1", "topic1"), ("topic@3", "topic3")]
_FILE_COLUMNS = [("file@1", "file1"), ("longest answer", "max_answer_chars")]
_LLM_COLUMNS = [("answer has fix", "answer_fix"), ("citations valid", "citations_ok"), ("in asker's language", "lang_ok"),
                ("OOS refused", "oos_refusal"), ("tool calls/case", "tool_calls"), ("fell back to KB", "fallback"),
                ("p50 ms", "p50_ms"), ("p95 ms", "p95_ms")]


def to_json(report: dict[str, dict[str, Metrics]], problems: list[str], cases_path: str,
            calibration: list[dict] | None = None, results: dict[str, list[CaseResult]] | None = None,
            context: dict | None = None) -> dict:
    return {
        "cases": cases_path,
        # what was measured and how it was judged: a PASS from an empty KB looked healthy (trial)
        "run": context or {},
        "passed": not problems,
        "problems": problems,
        "modes": {mode: {g: vars(m) for g, m in groups.items()} for mode, groups in report.items()},
        "reliability": calibration or [],
        "results": {mode: [r.row() for r in rs] for mode, rs in (results or {}).items()},
    }


# What each rate is a share of: a rate over no cases is "–", not a 0.000 that reads as
# "refused none".
_DENOMINATORS = {"pass1": "ranked_cases", "pass3": "ranked_cases", "mrr": "ranked_cases", "answer_fix": "fix_cases",
                 "false_refusal": "in_scope", "oos_refusal": "out_of_scope", "sure_wrong": "out_of_scope",
                 "unsure_right": "in_scope", "topic1": "topic_cases",
                 "topic3": "topic_cases", "file1": "file_cases"}


def _cell(m: Metrics, attr: str) -> str:
    if attr in _DENOMINATORS and not getattr(m, _DENOMINATORS[attr]):
        return "–"
    value = getattr(m, attr)
    return f"{value:.0f}" if attr.endswith("_ms") or attr.endswith("_chars") else f"{value:.3f}"


def to_markdown(report: dict[str, dict[str, Metrics]], problems: list[str], cases_path: str,
                calibration: list[dict] | None = None, context: dict | None = None) -> str:
    lines = ["# Eval report", "", f"Cases: `{cases_path}`", ""]
    if context:
        kb = context.get("kb") or {}
        lines += [f"KB: `{kb.get('path', '?')}` ({kb.get('documents', '?')} documents, {kb.get('chunks', '?')} chunks, "
                  f"built {kb.get('built_at', '?')}); run {context.get('at', '?')}",
                  "Bars (per language" + (f", {context['judge']} split" if context.get("judge") not in (None, "all") else "") + "): "
                  + ", ".join(f"{k} {v}" for k, v in (context.get("bars") or {}).items()), ""]
        lines += [f"- warning: {w}" for w in context.get("warnings") or ()] + ([""] if context.get("warnings") else [])
    lines += ["**Result: " + ("PASS**" if not problems else "FAIL**: " + "; ".join(problems)), ""]
    any_groups = next(iter(report.values()))
    columns = list(_COLUMNS)
    if any(m.topic_cases for m in any_groups.values()):
        columns = _TOPIC_COLUMNS + columns
    if any(m.file_cases for m in any_groups.values()):
        columns = _FILE_COLUMNS + columns
    lines += ["| mode | group | cases | in / out of scope | " + " | ".join(c for c, _ in columns) + " |",
              "|---|---|---|---|" + "---|" * len(columns)]
    for mode, groups in report.items():
        if mode == "llm":
            continue
        for g, m in groups.items():
            if m.n:
                lines.append(f"| {mode} | {g} | {m.n} | {m.in_scope} / {m.out_of_scope} | " + " | ".join(_cell(m, a) for _, a in columns) + " |")
    if len(columns) > len(_COLUMNS):
        # A refused in-scope case still cites the closest article or file: the rank columns
        # measure retrieval, the refusal columns the decision (a trial recounted file@1 by
        # hand and found a refused case among its hits).
        lines += ["", "topic@1 and file@1 judge the first citation whether or not the answer was refused: they measure "
                  "retrieval. A refused in-scope case counts in false refusals and never in answer has fix."]
    if "llm" in report:
        lines += ["", "## LLM answers (hybrid retrieval + the configured LLM)", "",
                  "| group | cases | " + " | ".join(c for c, _ in _LLM_COLUMNS) + " |", "|---|---|" + "---|" * len(_LLM_COLUMNS)]
        for g, m in report["llm"].items():
            if m.n:
                lines.append(f"| {g} | {m.n} | " + " | ".join(_cell(m, a) for _, a in _LLM_COLUMNS) + " |")
    if calibration and any(row["cases"] for row in calibration):
        lines += ["", "## Refusal model reliability (hybrid)", "",
                  "P(in scope) as the model scored it, against what the cases really were.", "",
                  "| P(in scope) | cases | really in scope | answered |", "|---|---|---|---|"]
        for row in calibration:
            share = f"{row['in_scope'] / row['cases']:.2f}" if row["cases"] else "–"
            lines.append(f"| {row['band']} | {row['cases']} | {row['in_scope']} ({share}) | {row['answered']} |")
    for mode, groups in report.items():
        fails = groups["all"].failures
        lines += ["", f"## Misses ({mode}): {len(fails)}", ""]
        lines += [f"- {f}" for f in fails] or ["- none"]
    return "\n".join(lines) + "\n"
