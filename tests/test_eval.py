import json

import pytest

from oncall_common.errors import AssistantError
from assistant.ops.evaluate import Case, CaseResult, check_thresholds, load_cases, passes, summarise, to_markdown

from .conftest import run_cli


def test_passes_needs_one_alternative_from_every_group_case_insensitively():
    text = "Set KERNEL.MSGMAX to 1048576 and restart."
    assert passes(text, [["kernel.msgmax"], ["1048576", "1MB"]])
    assert not passes(text, [["kernel.msgmax"], ["268435456"]])
    assert passes(text, [])


def _result(lang, rank, answer_ok=True, grounded=True, expect_grounded=True):
    case = Case(f"{lang}-{rank}", lang, "k", "q", [["x"]], expect_grounded)
    return CaseResult(case, rank, answer_ok, grounded, ["a", "b", "c"], 10.0)


def test_metrics_arithmetic():
    results = [_result("en", 1), _result("en", 2), _result("en", 4, answer_ok=False), _result("en", None, False, False),
               _result("en", None, False, False, expect_grounded=False), _result("en", None, False, True, expect_grounded=False)]
    m = summarise(results)
    assert m.in_scope == 4 and m.out_of_scope == 2
    assert m.pass1 == pytest.approx(1 / 4)
    assert m.pass3 == pytest.approx(2 / 4)
    assert m.mrr == pytest.approx((1 + 1 / 2 + 1 / 4) / 4)
    assert m.answer_fix == pytest.approx(2 / 4)
    assert m.false_refusal == pytest.approx(1 / 4)
    assert m.oos_refusal == pytest.approx(1 / 2)
    assert len(m.failures) == 4  # rank 2, rank 4, a false refusal, an answered out-of-scope case
    # The false refusal is a retrieval miss too; its line says it was refused (a newcomer
    # counted 2 refusals in the list under a false-refusal rate of 4 of 8).
    assert [f for f in m.failures if "(refused)" in f] == [f for f in m.failures if f.startswith("en-None: not in top 3")]


def test_answers_said_to_be_close_calls_are_counted_apart():
    """An out-of-scope question answered with a warning is still answered (not refused), but
    it is not the confident wrong answer the report counts as "OOS answered as sure"."""
    from dataclasses import replace as _replace

    oos_sure, oos_unsure, oos_refused = (_result("en", None, False, True, expect_grounded=False),
                                         _replace(_result("en", None, False, True, expect_grounded=False), unsure=True),
                                         _result("en", None, False, False, expect_grounded=False))
    right, right_unsure = _result("en", 1), _replace(_result("en", 1), unsure=True)
    m = summarise([oos_sure, oos_unsure, oos_refused, right, right_unsure])
    assert m.oos_refusal == pytest.approx(1 / 3) and m.sure_wrong == pytest.approx(1 / 3)
    assert m.unsure_right == pytest.approx(1 / 2) and m.false_refusal == 0


def test_thresholds_are_checked_per_language():
    report = {"hybrid": {"zh": summarise([_result("zh", 1)] * 10), "en": summarise([_result("en", 1)] * 9 + [_result("en", 2)]),
                         "all": summarise([_result("zh", 1)] * 10)}}
    assert check_thresholds(report, "hybrid", 0.98, 0.90) == []
    assert check_thresholds(report, "hybrid", 0.98, 0.95) == ["hybrid/en: pass@1 0.900 < 0.95"]
    assert "| hybrid | en | 10 | 10 / 0 | 0.900 |" in to_markdown(report, [], "cases.jsonl")


def test_a_rate_over_no_cases_reads_as_a_dash_not_zero():
    """A language with no out-of-scope cases refused none of them and all of them: the
    report says "–" rather than 0.000."""
    report = {"hybrid": {"zh": summarise([_result("zh", 1)] * 4),
                         "en": summarise([_result("en", None, False, False, expect_grounded=False)] * 2),
                         "all": summarise([_result("zh", 1)] * 4)}}
    table = to_markdown(report, [], "cases.jsonl")
    zh = next(line for line in table.splitlines() if line.startswith("| hybrid | zh |"))
    en = next(line for line in table.splitlines() if line.startswith("| hybrid | en |"))
    assert zh.split(" | ")[8:11] == ["–", "–", "0.000"]  # OOS refused, OOS answered as sure (no such case), false refusals
    assert en.split(" | ")[4:9] == ["–", "–", "–", "–", "1.000"]  # nothing in scope; both refused


def test_malformed_case_file_gives_a_located_error(tmp_path):
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "a", "lang": "en", "question": "q", "expect": [["x"]], "grounded": true}\n{"id": "b"}\n')
    with pytest.raises(AssistantError) as err:
        load_cases(bad)
    assert "cases.jsonl:2" in str(err.value)


def test_a_case_with_nothing_to_check_it_by_is_refused_by_name(tmp_path):
    """{"id": "y", "question": "oom"} ran, and its miss read "got gateway-502, gateway-502,
    gateway-502"; an explicit "expect": [] still means "should be answered"."""
    f = tmp_path / "cases.jsonl"
    f.write_text('{"id": "x", "question": "NCCL error", "expect": []}\n{"id": "y", "question": "oom"}\n', encoding="utf-8")
    with pytest.raises(AssistantError, match="cases.jsonl:2: case 'y' has nothing to check it by") as err:
        load_cases(f)
    assert "expect_topic" in err.value.hint


def test_a_flat_expect_list_requires_each_string_not_each_character(tmp_path):
    """"expect": ["qqqq_absent"] was read as one group of the letters q, a, b…, so any answer
    with an "a" in it passed; each string of a flat list is its own required group."""
    f = tmp_path / "cases.jsonl"
    f.write_text('{"id": "b", "lang": "en", "question": "gateway 502", "grounded": true, "expect": ["qqqq_absent"]}\n'
                 '{"id": "c", "lang": "en", "question": "gateway 502", "expect": ["gatewayctl", ["pool", "drain"]]}\n',
                 encoding="utf-8")
    flat, mixed = load_cases(f)
    assert flat.expect == [["qqqq_absent"]] and not passes("a gateway answer", flat.expect)
    assert mixed.expect == [["gatewayctl"], ["pool", "drain"]]
    assert passes("run gatewayctl drain", mixed.expect) and not passes("run gatewayctl", mixed.expect)


@pytest.mark.parametrize("expect", ['"qqqq"', '[["a"], []]', '[["a", 3]]', '[""]', '{"a": 1}', '[null]'])
def test_a_malformed_expect_is_a_one_line_error_naming_the_case(tmp_path, expect):
    f = tmp_path / "cases.jsonl"
    f.write_text(f'{{"id": "rb-7", "lang": "en", "question": "gateway 502", "expect": {expect}}}\n', encoding="utf-8")
    with pytest.raises(AssistantError, match=r"cases.jsonl:1: case 'rb-7' has a malformed expect") as err:
        load_cases(f)
    assert "\n" not in str(err.value)


def test_a_case_file_that_is_not_utf8_is_bad_input_not_an_internal_error(tmp_path):
    """It printed "internal error: UnicodeDecodeError … (please report this)" and exited 70."""
    f = tmp_path / "cases.jsonl"
    f.write_bytes(b'\xff\xfe{\x00"\x00i\x00d\x00"\x00}\x00\n')
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ASSISTANT_")}
    env.update(ASSISTANT_CACHE_DIR=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = run_cli(["assistant", "eval", "--cases", str(f), "--out", str(tmp_path / "out")], env)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "is not UTF-8 text" in err and str(f) in err
    assert "internal error" not in err and "Traceback" not in err


def test_a_case_file_without_cases_is_an_error_not_a_pass(tmp_path):
    """An empty file passed every bar: a CI gate pointed at it was off without anyone knowing."""
    empty = tmp_path / "cases.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(AssistantError, match="no cases in"):
        load_cases(empty)


def test_a_case_without_lang_gets_the_questions_and_an_unknown_lang_is_named(tmp_path):
    f = tmp_path / "cases.jsonl"
    f.write_text('{"id": "a", "question": "多卡启动报 NCCL 错误", "expect": []}\n'
                 '{"id": "b", "question": "NCCL error at start-up", "expect": []}\n', encoding="utf-8")
    assert [c.lang for c in load_cases(f)] == ["zh", "en"]
    f.write_text('{"id": "c", "lang": "fr", "question": "erreur NCCL", "expect": []}\n', encoding="utf-8")
    with pytest.raises(AssistantError, match="cases.jsonl:1: lang 'fr' is not one of"):
        load_cases(f)


def test_shipped_cases_follow_the_format():
    cases = load_cases(__import__("pathlib").Path(__file__).resolve().parent.parent / "eval" / "cases.jsonl")
    assert len(cases) >= 100 and len({c.id for c in cases}) == len(cases)
    assert sum(not c.grounded for c in cases) >= 10
    assert {c.lang for c in cases} == {"zh", "en"}
    assert all(c.expect for c in cases if c.grounded)


def test_eval_command_writes_reports_and_fails_under_the_threshold(bundled_env, tmp_path):
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": "en-1", "lang": "en", "kind": "direct", "question": "requests hang after I enabled logprobs", "expect": [["kernel.msgmax"]], "grounded": True},
        {"id": "zh-1", "lang": "zh", "kind": "direct", "question": "多卡启动报 NCCL 错误", "expect": [["NCCL_P2P_DISABLE"]], "grounded": True},
        {"id": "en-2", "lang": "en", "kind": "oos", "question": "What is the capital of Australia?", "expect": [], "grounded": False},
    ]
    cases.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    ok = run_cli(["assistant", "eval", "--cases", str(cases), "--out", str(out)], bundled_env)
    assert ok.returncode == 0, ok.stdout.decode() + ok.stderr.decode()
    report = json.loads((out / "report.json").read_text())
    assert report["passed"] and report["modes"]["hybrid"]["en"]["pass1"] == 1.0
    assert set(report["modes"]) == {"hybrid", "dense", "bm25"}
    assert "| hybrid | zh |" in (out / "report.md").read_text()
    # without topic or file columns there is no note on them
    assert "judge the first citation whether or not the answer was refused" not in (out / "report.md").read_text()
    rows[1]["expect"] = [["this string is in no article"]]
    cases.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    failing = run_cli(["assistant", "eval", "--cases", str(cases), "--mode", "hybrid", "--out", str(out)], bundled_env)
    assert failing.returncode == 1 and "FAIL" in failing.stdout.decode()
    # a case naming a file the KB does not have is said, not only counted as a miss
    rows[0]["expect_file"] = "runbooks/renamed-page.md"
    cases.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    warned = run_cli(["assistant", "eval", "--cases", str(cases), "--mode", "hybrid", "--out", str(out)], bundled_env)
    assert "1 case(s) expect a file this KB does not have, counted as file@1 misses" in warned.stderr.decode()
    assert "en-1 (runbooks/renamed-page.md)" in warned.stderr.decode()
    # file@1 counts the first citation of a refused case too: the report says so (a trial recounted it)
    assert "topic@1 and file@1 judge the first citation whether or not the answer was refused" in (out / "report.md").read_text()
    none = run_cli(["assistant", "eval", "--cases", str(cases), "--split", "test", "--out", str(out)], bundled_env)
    assert none.returncode != 0 and "no cases in" in none.stderr.decode() and "Traceback" not in none.stderr.decode()


def test_real_question_cases_carry_topic_source_and_split(tmp_path):
    f = tmp_path / "real.jsonl"
    rows = [
        {"id": "r1", "lang": "en", "question": "q", "source": "a/b#1", "expect_topic": "t1", "expect": [["x"]], "split": "dev"},
        {"id": "r2", "lang": "zh", "question": "q", "source": "a/b#2", "expect_topic": ["t1", "t2"], "expect": [["x"]], "split": "test"},
        {"id": "r3", "lang": "en", "question": "q", "source": "a/b#3", "expect_topic": "oos", "expect": [], "split": "test"},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cases = load_cases(f)
    assert [c.topics for c in cases] == [("t1",), ("t1", "t2"), ()]
    assert [c.grounded for c in cases] == [True, True, False]
    assert [c.split for c in cases] == ["dev", "test", "test"]


def test_topic_and_file_metrics_use_the_first_distinct_cited_articles():
    def result(topics, cited, files=(), expect_file="", split="dev", grounded=True):
        case = Case("c", "en", "k", "q", [["x"]], True, tuple(topics), expect_file, "src", split)
        from assistant.ops.evaluate import _same_file

        return CaseResult(case, 1, True, grounded, ["a"], 1.0, cited=list(cited), cited_files=list(files),
                          file_ok=bool(files) and bool(expect_file) and any(
                              _same_file(files[0], e) for e in ((expect_file,) if isinstance(expect_file, str) else expect_file)))

    m = summarise([result(["a"], ["a", "b"]), result(["b"], ["a", "b"]), result(["c"], ["a"]),
                   result([], [], ["docs/x.md"], expect_file="x.md")])
    assert m.topic_cases == 3 and m.topic1 == pytest.approx(1 / 3) and m.topic3 == pytest.approx(2 / 3)
    assert m.file_cases == 1 and m.file1 == 1.0
    # A fix written in two files: citing either one counts.
    both = ("faq.md", "context-length.md")
    m = summarise([result([], [], ["docs/context-length.md"], expect_file=both), result([], [], ["docs/gpu.md"], expect_file=both)])
    assert m.file_cases == 2 and m.file1 == 0.5
    from assistant.ops.evaluate import group_results

    groups = group_results([result(["a"], ["a"]), result(["a"], ["b"], split="test")])
    assert {"dev/en", "test/en", "dev/all", "test/all"} <= set(groups)
    assert len(groups["test/en"]) == 1


def test_a_twin_in_the_askers_language_is_the_expected_file():
    """A Chinese question answered from `docs/zh/serve.md` when the case names `docs/serve.md`
    was answered from the twin, as the README promises; another file with the same name is not it."""
    from types import SimpleNamespace

    from assistant.ops.evaluate import _first_file_ok
    from ingest.index import DocMeta

    docs = {f"{i}:{lang}": DocMeta(i, lang, "t", "general", src, [], []) for i, lang, src in
            [("docs-serve", "en", "docs/serve.md"), ("docs-serve", "zh", "docs/zh/serve.md"),
             ("docs-faq", "en", "docs/faq.md"), ("other-serve", "zh", "other/zh_only/serve.md"),
             ("readme", "en", "README.md"), ("demo-readme", "en", "demo/README.md")]}
    kb = SimpleNamespace(index=SimpleNamespace(docs=docs))
    cite = lambda doc_id, source: [SimpleNamespace(id=doc_id, source=source)]  # noqa: E731
    assert _first_file_ok(kb, cite("docs-serve", "docs/zh/serve.md"), "docs/serve.md")
    assert _first_file_ok(kb, cite("docs-serve", "docs/serve.md"), "docs/serve.md")
    assert not _first_file_ok(kb, cite("docs-faq", "docs/faq.md"), "docs/serve.md")
    assert not _first_file_ok(kb, cite("other-serve", "other/zh_only/serve.md"), "docs/serve.md")
    assert not _first_file_ok(kb, [], "docs/serve.md") and not _first_file_ok(kb, cite("docs-serve", "docs/serve.md"), "")
    # The root README is not every README: a path the KB has names that file only; a path
    # it lacks is still found by its end (cases written against a tree indexed from above).
    assert _first_file_ok(kb, cite("readme", "README.md"), "README.md")
    assert not _first_file_ok(kb, cite("demo-readme", "demo/README.md"), "README.md")
    assert _first_file_ok(kb, cite("docs-faq", "docs/faq.md"), "faq.md")


def test_shipped_real_question_set_is_split_by_source_and_large_enough():
    path = __import__("pathlib").Path(__file__).resolve().parent.parent / "eval" / "real.jsonl"
    cases = load_cases(path)
    in_scope = [c for c in cases if c.grounded]
    assert len(in_scope) >= 150 and len(cases) - len(in_scope) >= 50
    assert sum(c.lang == "zh" for c in cases) >= 0.25 * len(cases)
    assert all(c.source and c.split in ("dev", "test") for c in cases)
    by_source: dict[str, set[str]] = {}
    for c in cases:
        by_source.setdefault(c.source, set()).add(c.split)
    assert all(len(splits) == 1 for splits in by_source.values())  # one thread never sits on both sides


def test_every_shipped_case_file_loads_and_its_fixes_are_in_the_expected_article():
    """A case whose fix is not in the article it names can never pass: the set would
    measure its own mistakes. Every real-question set names KB articles that exist and
    whose text (either language) holds one alternative of each expected group."""
    from pathlib import Path

    from assistant.ops.evaluate import passes

    root = Path(__file__).resolve().parent.parent
    texts: dict[str, str] = {}
    for md in (root / "kb").rglob("*.md"):
        texts[md.stem] = texts.get(md.stem, "") + md.read_text(encoding="utf-8")
    for path in sorted((root / "eval").glob("*.jsonl")):
        cases = load_cases(path)
        assert cases, path
        assert len({c.id for c in cases}) == len(cases), path
        for c in cases:
            assert c.lang in ("zh", "en"), c.id
            if c.topics and c.grounded:
                assert all(t in texts for t in c.topics), c.id
                assert any(passes(texts[t], c.expect) for t in c.topics), c.id


def test_eval_outside_a_checkout_says_where_the_cases_are(bundled_env, tmp_path):
    """`assistant eval` run away from the repository printed a bare "[Errno 2]"."""
    import subprocess
    import sys

    cmd = [sys.executable, "-c", "import sys; sys.argv[0]='assistant'; from assistant.interfaces.commands import main as m; m()", "eval"]
    proc = subprocess.run(cmd, env=bundled_env, capture_output=True, timeout=120, cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "no case file at eval/cases.jsonl" in err and "--cases FILE" in err
    assert "Errno" not in err and "Traceback" not in err


def test_readme_figures_for_the_capacity_set_and_the_bundled_kb_match_the_files():
    """The README said "99 capacity phrasings" in prose and 95 in the eval table, and 468
    chunks for the bundled KB where `assistant ingest --status` shows 488."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    capacity = sum(1 for line in (root / "eval" / "capacity.jsonl").read_text(encoding="utf-8").splitlines() if line.strip())
    assert re.findall(r"`eval/capacity.jsonl` holds (\d+) capacity phrasings", readme) == [str(capacity)]
    assert re.findall(r"\| `eval/capacity.jsonl` \|[^|]*\| (\d+) \|", readme) == [str(capacity)]
    manifest = json.loads((root / "assistant" / "bundled_index" / "manifest.json").read_text(encoding="utf-8"))
    articles = list((root / "kb").rglob("*.md"))
    row = re.search(r"\| bundled KB \((\d+) articles\) \| (\d+)", readme)
    assert row and (int(row.group(1)), int(row.group(2))) == (len(articles), manifest["chunk_count"])


def test_a_right_passage_without_the_fix_is_listed_with_the_misses():
    """A newcomer's report said answer-has-fix 4 of 6 and listed one miss: a case whose right
    file came first but whose answer left out the fix was counted and never named."""
    m = summarise([_result("en", 1), _result("en", 1, answer_ok=False)])
    assert m.answer_fix == pytest.approx(1 / 2)
    assert m.failures == ["en-1: right passage first but the fix is not in the answer — q"]


def test_a_teams_case_is_judged_by_its_file_and_a_miss_names_the_missing_text(bundled_env, tmp_path):
    """A team lead's trial: a case naming only its file scored file@1 1.000 but pass@1 0.000
    and was listed "not in top 3 (got gateway)" with gateway.md first; a fix string gone stale
    after an edit got the same words. report.json had no per-case results."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "gateway.md").write_text("# Gateway\n\n## TLS certificate expired\nThe gateway's certificate is renewed with "
                                     "`gatewayctl cert renew --pool chat`. Check the expiry with `gatewayctl cert show`.\n\n"
                                     "## Upstream quota\nRaise the per-tenant quota with `gatewayctl quota raise`.\n", encoding="utf-8")
    (docs / "gpu.md").write_text("# GPU nodes\n\n## Node drained\nA drained GPU node comes back with "
                                 "`kubectl uncordon <node>` once its Xid errors stop.\n", encoding="utf-8")
    rows = [{"id": "x-1", "lang": "en", "question": "TLS certificate expired on the gateway", "expect_file": "gateway.md", "grounded": True},
            {"id": "x-2", "lang": "en", "question": "how do I raise a tenant's upstream quota on the gateway?", "expect_file": "gateway.md",
             "expect": [["gatewayctl quota set"]], "grounded": True}]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    env = {**bundled_env, "ASSISTANT_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    run_cli(["assistant", "eval", "--kb", str(docs), "--cases", str(cases), "--mode", "hybrid", "--out", str(out)], env, timeout=300)
    report = json.loads((out / "report.json").read_text())
    m = report["modes"]["hybrid"]["en"]
    assert m["file1"] == 1.0 and m["pass1"] == 0.5  # x-1 by its file; x-2's stale string is in no file
    (fail,) = m["failures"]
    assert fail.startswith("x-2: right file first, but `gatewayctl quota set` is not in the answer")
    rows_out = {r["id"]: r for r in report["results"]["hybrid"]}
    assert rows_out["x-1"]["rank"] == 1 and rows_out["x-1"]["file_ok"] and rows_out["x-1"]["answer_has_fix"] is None
    assert rows_out["x-2"]["cited_files"][0] == "gateway.md" and rows_out["x-2"]["answer_has_fix"] is False
    # ... and the stale string is said before the run, as in no document of this KB (trial), and
    # the report says what it measured and which bars judged it
    warned = run_cli(["assistant", "eval", "--kb", str(docs), "--cases", str(cases), "--mode", "hybrid", "--out", str(out),
                      "--min-file1", "0.9"], env, timeout=300)
    assert "1 case(s) expect fix strings that no document of this KB holds" in warned.stderr.decode()
    assert "x-2 (gatewayctl quota set)" in warned.stderr.decode()
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["kb"]["documents"] == 2 and report["run"]["bars"]["min-file1"] == 0.9
    assert report["run"]["kb"]["path"] == "docs"  # not the absolute path of someone's home (review)
    assert report["run"]["warnings"] and "no document of this KB holds" in (out / "report.md").read_text()
    assert report["results"]["hybrid"][0]["question"].startswith("TLS certificate") and report["results"]["hybrid"][0]["answer_start"]
    # a case for a page under another folder is matched by its name only: said (trial)
    rows[0]["expect_file"] = "runbooks/gateway.md"
    cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    loose = run_cli(["assistant", "eval", "--kb", str(docs), "--cases", str(cases), "--mode", "hybrid", "--out", str(out)], env, timeout=300)
    assert "matched by its last part only" in loose.stderr.decode() and "x-1 (runbooks/gateway.md → gateway.md)" in loose.stderr.decode()


def test_a_teams_case_file_is_checked_before_the_run_with_exit_code_2(bundled_env, tmp_path):
    """From a team lead's trial of measuring their own runbooks in CI: "grounded": "false" was
    read as true, a typo'd key ignored, duplicate ids both ran, an unfilled feedback draft
    was scored, an empty question failed after the whole run, --judge test on a file without
    splits judged nothing and passed, a bar of 1.5 or NaN was taken, a BOM was an error,
    and all of it exited 1 like a real regression."""
    good = {"id": "g", "lang": "en", "question": "requests hang after I enabled logprobs", "expect": [["kernel.msgmax"]], "grounded": True}
    bad_lines = {
        "grounded must be true or false": {**good, "grounded": "false"},
        "unknown field 'expect_files' (did you mean 'expect_file'?)": {**good, "expect_files": "x.md"},
        "question must be a string": {**good, "question": ["q"]},
        "id must be a non-empty string": {**good, "id": 7},
        "unfilled feedback draft": {**good, "expect": [], "draft": {"todo": "fill expect"}},
        "the question is empty": {**good, "question": "   "},
        "split must be dev or test": {**good, "split": "prod"},
        "is out of scope (grounded: false) yet names what answers it": {**good, "grounded": False},
    }
    f = tmp_path / "cases.jsonl"
    for message, row in bad_lines.items():
        f.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
        with pytest.raises(AssistantError, match="cases.jsonl:2: ") as err:
            load_cases(f)
        assert message in str(err.value) and err.value.exit_code == 2, (message, str(err.value))
    f.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    with pytest.raises(AssistantError, match="case id 'g' is also on line 1"):
        load_cases(f)
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(good).encode() + b"\r\n")
    assert [c.id for c in load_cases(f)] == ["g"]  # a Windows editor's BOM and CRLF
    out = tmp_path / "out"
    judged = run_cli(["assistant", "eval", "--cases", str(f), "--mode", "hybrid", "--judge", "test", "--out", str(out)], bundled_env)
    assert judged.returncode == 2 and "--judge test: no case in" in judged.stderr.decode()
    for bar in (["--min-pass1", "1.5"], ["--max-false-refusals", "nan"]):
        wrong = run_cli(["assistant", "eval", "--cases", str(f), "--mode", "hybrid", "--out", str(out), *bar], bundled_env)
        assert wrong.returncode == 2 and "must be a share from 0 to 1" in wrong.stderr.decode(), wrong.stderr.decode()
    missing = run_cli(["assistant", "eval", "--cases", str(tmp_path / "nope.jsonl"), "--out", str(out)], bundled_env)
    assert missing.returncode == 2 and "no case file at" in missing.stderr.decode()


def test_a_case_that_only_says_answer_it_is_no_retrieval_miss_and_has_no_fix_to_find():
    """"expect": [] (should be answered) read pass@1 0 with the right file first, and "answer
    has fix" 1.000 with nothing to find (trial): both leave it out of their denominators."""
    from dataclasses import replace as _replace

    answered = _result("en", None)
    answered = _replace(answered, case=_replace(answered.case, expect=[], expect_file="", topics=()))
    m = summarise([answered, _result("en", 1)])
    assert (m.ranked_cases, m.pass1, m.fix_cases) == (1, 1.0, 1) and m.false_refusal == 0
    assert m.failures == []  # and not listed as "not in top 3" (second review)
    refused = _replace(answered, grounded=False)
    assert summarise([refused]).failures[0].endswith("refused an in-scope question — " + refused.case.question[:80])
