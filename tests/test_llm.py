"""The LLM path end to end: real `openai` client, real HTTP, a scripted server on loopback."""

import json
import os
import time
from dataclasses import replace

import pytest

from assistant.answer import answer_question
from assistant.config import load_settings
from assistant.llm import fix_citations, looks_like_garbage

from .conftest import finishes_within, parse_json, run_cli
from .fake_llm import ScriptedLLM

LOGPROBS_Q = "requests hang after I enabled logprobs"


def _settings(base, llm_url, **kw):
    return replace(base, llm_base_url=llm_url, llm_model=kw.pop("model", ""), llm_timeout=kw.pop("timeout", 10.0),
                   llm_connect_timeout=1.0, **kw)


def test_grounded_answer_with_renumbered_citations(bundled_settings, bundled_kb):
    with ScriptedLLM([{"content": "Raise kernel.msgmax with sysctl -w kernel.msgmax=1048576 [2]. Ignore [9]."}]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url), kb=bundled_kb)
        prompt = llm.requests[0]["messages"]
    assert answer.backend == "llm:scripted-model" and answer.grounded
    assert "[1]" in answer.answer and "[2]" not in answer.answer and "[9]" not in answer.answer
    # A sentence whose only citation points at no passage is not left behind as uncited fact.
    assert "Ignore" not in answer.answer and answer.notes == [
        "removed 1 statement(s) of the LLM answer whose only citations point at no passage (nothing in the KB backs them)"]
    assert len(answer.citations) == 1 and answer.citations[0].id == "fastdeploy-logprobs-hang"
    assert prompt[0]["role"] == "system" and "Answer in English" in prompt[0]["content"]
    assert "[1] FastDeploy: requests get stuck after enabling logprobs" in prompt[1]["content"]
    assert llm.models_requests == 1  # the model name came from /v1/models


def test_the_model_is_given_the_askers_own_figures_as_the_extractive_answer_is(bundled_settings, bundled_kb):
    """The KV cache's real capacity from a pasted error goes into the prompt, worded for a
    server already at --gpu-memory-utilization 0.95 as the extractive lead line is (it told
    the model to raise it)."""
    error = ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
             "stored in KV cache (45232). Try increasing gpu_memory_utilization or decreasing max_model_len")
    with ScriptedLLM([{"content": "Use --max-model-len 45232 [1]."}]) as llm:
        answer_question(f"vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.95\n{error}",
                        _settings(bundled_settings, llm.url), kb=bundled_kb)
        prompt = "\n".join(m["content"] for m in llm.requests[0]["messages"] if isinstance(m.get("content"), str))
    assert "`--max-model-len 45232`" in prompt and "`--gpu-memory-utilization` is already 0.95" in prompt
    assert "raise `--gpu-memory-utilization`" not in prompt


def test_chinese_question_gets_a_chinese_prompt_and_passages(bundled_settings, bundled_kb):
    with ScriptedLLM([{"content": "调大 kernel.msgmax：sysctl -w kernel.msgmax=1048576 [1]。"}]) as llm:
        answer = answer_question("开了 logprobs 以后请求卡住", _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
        prompt = llm.requests[0]["messages"]
    assert answer.lang == "zh" and answer.backend == "llm:m"
    assert "用中文回答" in prompt[0]["content"] and "开启 logprobs 后推理请求卡住" in prompt[1]["content"]
    assert llm.models_requests == 0


def test_tool_call_result_is_fed_back_and_recorded(bundled_settings, bundled_kb):
    script = [
        {"tool_calls": [{"name": "kv_concurrency", "arguments": json.dumps({"num_blocks": 17131, "avg_tokens_per_request": 20000})}]},
        {"content": "About 54 requests of 20K tokens fit at once [1]."},
    ]
    with ScriptedLLM(script) as llm:
        answer = answer_question("how many concurrent 20K-token requests fit in FastDeploy's KV cache", _settings(bundled_settings, llm.url), kb=bundled_kb)
        second = llm.requests[1]["messages"]
        offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert {"kv_concurrency", "gpu_status", "host_status", "serving_status", "diagnose_log", "logprobs_message_size"} <= offered
    call = next(c for c in answer.tool_calls if c["name"] == "kv_concurrency")
    assert call["result"]["concurrent_requests"] == 54 and call["error"] is None
    assistant_msg = next(m for m in second if m["role"] == "assistant")
    assert assistant_msg["content"] == "" and assistant_msg["tool_calls"][0]["function"]["name"] == "kv_concurrency"
    tool_msg = next(m for m in second if m["role"] == "tool")
    assert json.loads(tool_msg["content"])["result"]["total_tokens"] == 1096384


def test_malformed_and_invalid_tool_arguments_are_explained_to_the_model(bundled_settings, bundled_kb):
    script = [
        {"tool_calls": [{"name": "kv_concurrency", "arguments": "{not json"}]},
        {"tool_calls": [{"name": "kv_concurrency", "arguments": json.dumps({"num_blocks": "lots"})}]},
        {"tool_calls": [{"name": "rm_rf", "arguments": "{}"}]},
        {"content": "I could not compute it; the KB says the KV cache decides concurrency [1]."},
    ]
    with ScriptedLLM(script) as llm:
        answer = answer_question("how many concurrent requests can FastDeploy handle", _settings(bundled_settings, llm.url), kb=bundled_kb)
        fed_back = [json.loads(m["content"]) for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    errors = [f["error"] for f in fed_back]
    assert "not valid JSON" in errors[0]
    assert "missing required argument 'avg_tokens_per_request'" in errors[1] and "expected integer" in errors[1]
    assert "unknown tool 'rm_rf'" in errors[2]
    assert answer.backend == "llm:scripted-model"


def test_repeated_identical_calls_are_refused_and_the_loop_is_bounded(bundled_settings, bundled_kb):
    loop = {"tool_calls": [{"name": "host_status", "arguments": "{}"}]}
    with ScriptedLLM([loop]) as llm:  # the model calls the same tool for ever
        answer = answer_question("ipcs -l shows max size of message 8192", _settings(bundled_settings, llm.url, llm_max_tool_steps=3), kb=bundled_kb)
        n_requests = len(llm.requests)
        last_tools = [json.loads(m["content"]) for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert n_requests == 4  # 3 tool steps + 1 final request without tools
    assert "tools" not in llm.requests[-1]
    assert sum(c["name"] == "host_status" for c in answer.tool_calls) == 1
    assert any("already made" in (t.get("error") or "") for t in last_tools)
    # the model never produced text, so the user gets the KB answer and a note that says why
    # (it said "the LLM returned an empty answer")
    assert answer.backend == "extractive" and any("kept calling tools and never answered" in n for n in answer.notes)


@pytest.mark.parametrize(
    "step,fragment",
    [
        ({"status": 500}, "returned HTTP 500"),
        ({"hang": 5.0}, "did not answer in time"),
        ({"raw": "<html>oops</html>"}, "not an OpenAI-compatible stream"),
        ({"raw": '{"choices": [{"message": {"content": "Raise kern'}, "not an OpenAI-compatible stream"),
        ({"content": "token " * 100}, "repeats itself"),
        ({"content": ""}, "empty answer"),
        ({"content": "I don't know."}, "it said it does not know"),  # a stub that answered nothing kept grounded: true
    ],
)
def test_llm_failures_fall_back_to_the_kb_answer_with_a_note(bundled_settings, bundled_kb, step, fragment):
    with ScriptedLLM([step]) as llm:
        started = time.monotonic()
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m", timeout=1.5), kb=bundled_kb)
        elapsed = time.monotonic() - started
    assert answer.backend == "extractive" and answer.grounded
    assert "kernel.msgmax=1048576" in answer.answer
    assert any(fragment in n and "answered from the KB" in n for n in answer.notes), answer.notes
    assert answer.fallback_reason == "llm_failed"
    assert elapsed < 4.0


def test_unreachable_llm_falls_back_quickly(bundled_settings, bundled_kb):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, f"http://127.0.0.1:{port}/v1", model="m"), kb=bundled_kb)
    assert answer.backend == "extractive" and any("unreachable" in n for n in answer.notes)
    assert answer.fallback_reason == "llm_failed"
    nothing = answer_question("How do I bake sourdough bread?", _settings(bundled_settings, f"http://127.0.0.1:{port}/v1", model="m"), kb=bundled_kb)
    assert not nothing.grounded and nothing.fallback_reason == "not_grounded"
    # the note is in the asker's language, its reason too ("大模型调用失败（the LLM is unreachable）" read half in English)
    zh = answer_question("为什么推理卡住", _settings(bundled_settings, f"http://127.0.0.1:{port}/v1", model="m"), kb=bundled_kb)
    assert zh.fallback_reason == "llm_failed" and zh.notes == ["大模型调用失败（连不上大模型），已改用知识库回答"]
    unset = answer_question(LOGPROBS_Q, bundled_settings, kb=bundled_kb, use_llm=True)
    assert unset.fallback_reason == "llm_not_configured"


def test_out_of_scope_questions_are_not_sent_to_the_llm(bundled_settings, bundled_kb):
    with ScriptedLLM([{"content": "Canberra."}]) as llm:
        answer = answer_question("What is the capital of Australia?", _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
        assert llm.requests == []
    assert not answer.grounded and "Canberra" not in answer.answer


def test_no_tools_means_no_tools_offered(bundled_settings, bundled_kb):
    with ScriptedLLM([{"content": "Lower max-model-len [1]."}]) as llm:
        answer_question("vLLM CUDA out of memory", _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb, use_tools=False)
        assert "tools" not in llm.requests[0]


def test_an_answer_citing_only_passages_that_do_not_exist_falls_back_to_the_kb(bundled_settings, bundled_kb):
    with ScriptedLLM([{"content": "Set --foo-bar 7 to fix it [9].\n\n- Also export FOO_MAGIC=1 [12]."}]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert answer.backend == "extractive" and "--foo-bar" not in answer.answer and "FOO_MAGIC" not in answer.answer
    assert "kernel.msgmax" in answer.answer


def test_drop_unsupported_keeps_sentences_with_a_real_citation_or_none():
    from assistant.llm import drop_unsupported

    text = "Raise msgmax [1]. Set --foo 7 [9]! Restart the service.\n- bad flag [4, 5]\n- good [2, 7]\n\n```\nsysctl -p\n```"
    kept, dropped = drop_unsupported(text, 3)
    assert dropped == 2
    assert kept == "Raise msgmax [1]. Restart the service.\n- good [2, 7]\n\n```\nsysctl -p\n```"


def test_citation_repair_and_garbage_checks():
    text, cited = fix_citations("A [3], B [1, 3], C [7].", ["p1", "p2", "p3"])
    assert text == "A [1], B [2][1], C." and cited == ["p3", "p1"]
    assert looks_like_garbage("ok", "") == "the LLM returned an empty answer"
    from assistant.i18n import t

    prompt = t("llm.system_prompt", "en") + "\n\nPassages: [1] vLLM: CUDA out of memory ..."
    assert looks_like_garbage(prompt[:400], prompt) == "the LLM echoed its prompt"
    assert looks_like_garbage("Set kernel.msgmax to 1048576 and restart the service [1].", prompt) is None


def test_settings_fall_back_to_the_standard_openai_variables(tmp_path):
    s = load_settings(tmp_path / "none.toml", environ={"OPENAI_BASE_URL": "http://x/v1", "OPENAI_API_KEY": "k"})
    assert (s.llm_base_url, s.llm_api_key) == ("http://x/v1", "k")
    s = load_settings(tmp_path / "none.toml", environ={"OPENAI_BASE_URL": "http://x/v1", "ASSISTANT_LLM_BASE_URL": "http://y/v1"})
    assert s.llm_base_url == "http://y/v1"


def test_cli_streams_tokens_and_json_stays_one_object(bundled_env):
    answer = "Raise kernel.msgmax to 1048576 with sysctl [1]. In Docker use --privileged [1]."
    script = [{"tool_calls": [{"name": "logprobs_message_size", "arguments": json.dumps({"mtp": True})}]}, {"content": answer}]
    with ScriptedLLM(script * 2) as llm:
        env = dict(bundled_env, ASSISTANT_LLM_BASE_URL=llm.url, ASSISTANT_LLM_MODEL="m")
        proc = run_cli(["ask", LOGPROBS_Q], env)
        out, err = proc.stdout.decode(), proc.stderr.decode()
        assert proc.returncode == 0, err
        assert answer in out and "Sources" in out and "answered by llm:m" in out
        assert "→ logprobs_message_size" in err and "ok" in err
        assert all(r.get("stream") for r in llm.requests)
        data = parse_json(run_cli(["ask", "--json", LOGPROBS_Q], env))
    assert data["backend"] == "llm:m" and data["answer"] == answer
    assert data["tool_calls"][0]["result"]["bytes"] == 802840
    assert len(data["citations"]) == 1


def test_cli_says_which_text_stands_when_a_stream_is_cut_off(bundled_env):
    """A stream cut off by the deadline has put half an LLM answer on screen (or into a
    pipe), where it cannot be taken back: a line between it and the KB answer says which
    text stands."""
    with ScriptedLLM([{"content": "Probably the NCCL socket " * 12, "chunk_delay": 0.2}]) as llm:
        env = dict(bundled_env, ASSISTANT_LLM_BASE_URL=llm.url, ASSISTANT_LLM_MODEL="m", ASSISTANT_LLM_TIMEOUT="1.5",
                   ASSISTANT_LLM_FIRST_TOKEN_TIMEOUT="1.0", COLUMNS="200")
        out, err, code = _run_on_a_terminal(["ask", LOGPROBS_Q], env)
        piped = run_cli(["ask", LOGPROBS_Q], env)
    assert code == 0, err
    assert "did not finish within 1.5 s" in err
    partial, _, rest = out.partition("The LLM stopped mid-answer: do not act on the unfinished text above.")
    assert partial.startswith("Probably the NCCL") and "kernel.msgmax=1048576" in rest and "Sources" in rest
    # into a pipe nothing is streamed: only the text that stands is written
    assert "Probably the NCCL" not in piped.stdout.decode() and "kernel.msgmax=1048576" in piped.stdout.decode()


def _run_on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[str, str, int]:
    """`run_cli` with stdout on a pseudo-terminal, where `ask` streams tokens as they come."""
    import pty
    import re
    import subprocess
    import sys

    master, slave = pty.openpty()
    entry = "from assistant.interfaces.cli import ask_main as m"
    proc = subprocess.Popen([sys.executable, "-c", f"import sys; sys.argv[0]='ask'; {entry}; m()", *args[1:]],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace")).replace("\r\n", "\n")
    return text, err, code


def test_cli_no_llm_flag_skips_a_configured_llm(bundled_env):
    with ScriptedLLM([{"content": "should not be used"}]) as llm:
        env = dict(bundled_env, ASSISTANT_LLM_BASE_URL=llm.url)
        data = parse_json(run_cli(["ask", "--json", "--no-llm", LOGPROBS_Q], env))
        assert llm.requests == [] and data["backend"] == "extractive"


def test_eval_with_llm_reports_llm_columns(bundled_env, tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in [
        {"id": "en-1", "lang": "en", "kind": "d", "question": LOGPROBS_Q, "expect": [["kernel.msgmax"]], "grounded": True},
        {"id": "zh-1", "lang": "zh", "kind": "d", "question": "开了 logprobs 以后请求卡住", "expect": [["kernel.msgmax"]], "grounded": True},
        {"id": "oos", "lang": "en", "kind": "o", "question": "What is the capital of Australia?", "expect": [], "grounded": False},
    ]) + "\n", encoding="utf-8")

    def reply(body):
        zh = "用中文回答" in body["messages"][0]["content"]
        return {"content": "调大 kernel.msgmax 到 1048576 [1]。" if zh else "Raise kernel.msgmax to 1048576 [1]."}

    with ScriptedLLM([reply]) as llm:
        env = dict(bundled_env, ASSISTANT_LLM_BASE_URL=llm.url, ASSISTANT_LLM_MODEL="m")
        proc = run_cli(["assistant", "eval", "--llm", "--mode", "hybrid", "--cases", str(cases), "--out", str(tmp_path)], env)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    llm_metrics = json.loads((tmp_path / "report.json").read_text())["modes"]["llm"]["all"]
    assert llm_metrics["answer_fix"] == 1.0 and llm_metrics["citations_ok"] == 1.0 and llm_metrics["lang_ok"] == 1.0
    assert llm_metrics["oos_refusal"] == 1.0 and llm_metrics["fallback"] == 0.0
    assert "## LLM answers" in (tmp_path / "report.md").read_text()


@pytest.mark.skipif(not os.environ.get("ASSISTANT_LLM_BASE_URL"), reason="live test: set ASSISTANT_LLM_BASE_URL to run it against a real endpoint")
def test_live_endpoint_answers_a_grounded_question(bundled_settings, bundled_kb):
    settings = replace(load_settings(), kb_dir=bundled_settings.kb_dir, cache_dir=bundled_settings.cache_dir)
    answer = answer_question(LOGPROBS_Q, settings, kb=bundled_kb)
    assert answer.grounded and answer.citations
    assert answer.backend.startswith("llm:") or answer.notes  # either the model answered or we know why not


@pytest.mark.parametrize("step", [{"hang": 20.0}, {"stall": 20.0}], ids=["no-headers", "headers-then-silence"])
def test_a_hung_endpoint_falls_back_after_the_first_token_deadline_not_the_whole_budget(bundled_settings, bundled_kb, step):
    settings = _settings(bundled_settings, "", model="m", timeout=60.0, llm_first_token_timeout=1.0)
    with ScriptedLLM([step]) as llm:
        started = time.monotonic()
        answer = answer_question(LOGPROBS_Q, replace(settings, llm_base_url=llm.url), kb=bundled_kb)
        elapsed = time.monotonic() - started
    assert answer.backend == "extractive" and "kernel.msgmax=1048576" in answer.answer
    assert any("nothing within 1 s" in n for n in answer.notes), answer.notes
    assert elapsed < 5.0


def test_a_slow_but_streaming_endpoint_may_use_the_whole_budget(bundled_settings, bundled_kb):
    text = "Raise kernel.msgmax with sysctl -w kernel.msgmax=1048576 [1]."  # 10 chunks, 0.3 s apart
    settings = _settings(bundled_settings, "", model="m", timeout=30.0, llm_first_token_timeout=1.0)
    with ScriptedLLM([{"content": text, "chunk_delay": 0.3}]) as llm:
        started = time.monotonic()
        answer = answer_question(LOGPROBS_Q, replace(settings, llm_base_url=llm.url), kb=bundled_kb)
        elapsed = time.monotonic() - started
    assert answer.backend == "llm:m" and answer.answer.startswith("Raise kernel.msgmax") and answer.notes == []
    assert elapsed > 2.5  # it took longer than the first-token deadline, and that was fine


def test_a_stream_that_outlasts_the_total_budget_is_cut_off(bundled_settings, bundled_kb):
    settings = _settings(bundled_settings, "", model="m", timeout=1.5, llm_first_token_timeout=1.0)
    with ScriptedLLM([{"content": "word " * 40, "chunk_delay": 0.2}]) as llm:
        started = time.monotonic()
        answer = answer_question(LOGPROBS_Q, replace(settings, llm_base_url=llm.url), kb=bundled_kb)
    assert answer.backend == "extractive" and any("did not finish within 1.5 s" in n for n in answer.notes), answer.notes
    assert time.monotonic() - started < 4.0


def test_notes_never_carry_the_llm_url_and_logs_redact_its_credentials(bundled_settings, bundled_kb, caplog):
    with ScriptedLLM([{"status": 500}]) as llm:
        url = llm.url.replace("http://", "http://alice:hunter2@")
        with caplog.at_level("WARNING"):
            answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, url, model="m"), kb=bundled_kb)
    assert answer.backend == "extractive"
    assert any(n.startswith("the LLM returned HTTP 500") for n in answer.notes), answer.notes
    shown = json.dumps(answer.to_dict())
    assert "hunter2" not in shown and "127.0.0.1" not in shown and "alice" not in shown
    logged = caplog.text
    assert "hunter2" not in logged and "alice" not in logged and "***@127.0.0.1" in logged
    # Some gateways take the key in the query string: its values are masked too.
    from assistant.llm import redact_url

    assert redact_url(url + "?api_key=topsecret&team=x") == url.replace("alice:hunter2@", "***@") + "?api_key=***&team=***"


def test_citation_cleanup_is_linear_on_long_runs_of_spaces():
    hostile = "a" + " " * 8000 + "b [1]" + "[" + "9" * 5000 + "]"
    assert finishes_within(0.5, fix_citations, hostile, ["p1"])
    text, _ = fix_citations(hostile, ["p1"])
    assert text.startswith("a") and text.endswith("]")


def test_the_llm_finding_the_passages_do_not_answer_makes_a_refusal(bundled_settings, bundled_kb):
    """Retrieval grounds on scores; the model has read the passages. When it opens with the
    not-covered mark, the answer is not grounded, offers no fix, and the mark never shows,
    not even in the stream (the scripted server sends it split over two chunks)."""
    reply = "[NOT IN KB]\nThe passages cover FastDeploy's message-size limit [1], not the server this question is about."
    streamed: list[str] = []
    with ScriptedLLM([{"content": reply}]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url), kb=bundled_kb, on_token=streamed.append)
        system = llm.requests[0]["messages"][0]["content"]
    assert "[NOT IN KB]" in system
    assert not answer.grounded and answer.coverage == "none" and answer.backend == "llm:scripted-model"
    assert "NOT IN KB" not in answer.answer and answer.answer.startswith("The passages cover")
    assert "".join(streamed).startswith("The passages cover") and "NOT IN" not in "".join(streamed)
    assert any("do not answer" in n for n in answer.notes) and answer.citations
    with ScriptedLLM([{"content": "[1] says: raise kernel.msgmax with sysctl -w kernel.msgmax=1048576."}]) as llm:
        streamed.clear()
        kept = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url), kb=bundled_kb, on_token=streamed.append)
    assert kept.grounded and kept.coverage == "full" and "".join(streamed).startswith("[1] says")


@pytest.mark.parametrize("script", [
    [{"content": "Let me check the limits.", "tool_calls": [{"name": "logprobs_message_size", "arguments": "{}"}]},
     {"content": "[NOT IN KB]\nThe passages cover the message size limit [1] only."}],
    [{"content": "   [NOT IN KB]\nThe passages cover the message size limit [1] only."}],
    [{"content": "**[NOT IN KB]**: The passages cover the message size limit [1] only."}],
])
def test_the_mark_never_streams_after_a_tool_turn_a_chunk_boundary_or_markdown(bundled_settings, bundled_kb, script):
    streamed: list[str] = []
    with ScriptedLLM(script) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url), kb=bundled_kb, on_token=streamed.append)
    final_turn = "".join(streamed).replace("Let me check the limits.", "")
    assert not answer.grounded and "NOT IN KB" not in "".join(streamed)
    assert final_turn.startswith("The passages cover") and answer.answer.startswith("The passages cover")


def test_a_streamed_answer_keeps_the_numbers_the_user_saw_and_is_not_sent_twice(bundled_settings, bundled_kb, tmp_path):
    """The numbers in a streamed answer are on screen already; renumbering them afterwards
    made the sources list disagree with the text, and the OpenAI-compatible stream sent the
    whole answer a second time."""
    import openai

    from assistant.interfaces.http.app import create_app

    from .live_server import LiveServer

    reply = "Raise kernel.msgmax with sysctl -w kernel.msgmax=1048576 [2]. Ignore [9].\n"
    streamed: list[str] = []
    with ScriptedLLM([{"content": reply}] * 2) as llm:
        settings = replace(_settings(bundled_settings, llm.url, model="m"), feedback_db=str(tmp_path / "f.db"))
        answer = answer_question(LOGPROBS_Q, settings, kb=bundled_kb, on_token=streamed.append)
        with LiveServer(create_app(settings)) as live:
            client = openai.OpenAI(base_url=live.url + "/v1", api_key="unused", max_retries=0)
            chunks = list(client.chat.completions.create(model="kb-assistant", stream=True,
                                                         messages=[{"role": "user", "content": LOGPROBS_Q}]))
    assert "[2]" in answer.answer and "[9]" not in answer.answer and len(answer.citations) == 2
    assert answer.citations[1].id == "fastdeploy-logprobs-hang"
    # The sentence that cited no passage was on screen, flagged; the final answer, which a page
    # shows in its place, leaves it out (it kept it, its "[9]" gone, reading as backed: newcomer).
    assert "Ignore" in "".join(streamed) and "Ignore" not in answer.answer
    assert any("streamed statement(s) cite only passages that do not exist" in n for n in answer.notes)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.count("kernel.msgmax=1048576") == 1 and "[2]" in text


@pytest.mark.parametrize("url", ["not a url", "127.0.0.1:8000/v1", "ftp://h/v1"])
def test_a_base_url_that_is_not_http_is_named_as_such_not_unreachable(bundled_settings, bundled_kb, url):
    answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, url, model="m"), kb=bundled_kb)
    assert answer.backend == "extractive" and answer.notes == [
        "the LLM base URL (llm_base_url / ASSISTANT_LLM_BASE_URL) is not an http(s) URL; answered from the KB instead"]


def test_a_refused_connection_is_known_without_importing_the_client(bundled_env):
    """The openai client costs 0.75 s to import: an LLM that is down cost every answer
    1.2 s. A refused connection is found first, and the client is never imported."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import sys; from assistant.answer import answer_question; from assistant.config import load_settings; "
            "a = answer_question('requests hang after enabling logprobs', load_settings()); "
            "print(a.fallback_reason, a.notes[0], 'openai' in sys.modules)")
    env = dict(bundled_env, ASSISTANT_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1", ASSISTANT_LLM_MODEL="m")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120).stdout.decode()
    assert out.strip() == "llm_failed the LLM is unreachable; answered from the KB instead False", out


def test_a_close_call_is_told_to_the_llm_and_marked_in_the_answer(bundled_settings, bundled_kb):
    """The model hears what the asker is told: these passages may not answer. Its answer,
    when it still finds them relevant, is grounded but marked "tentative"."""
    question = "vllm prints a warning that the tokenizer is slow and recommends the fast tokenizer"
    with ScriptedLLM([{"content": "The closest passage [1] is about prefill batching; it does not mention tokenizers."}]) as llm:
        answer = answer_question(question, _settings(bundled_settings, llm.url), kb=bundled_kb)
        user = llm.requests[0]["messages"][1]["content"]
    assert "they may not answer the question" in user
    assert answer.grounded and answer.coverage == "tentative" and answer.backend == "llm:scripted-model"
    with ScriptedLLM([{"content": "[1] says: raise kernel.msgmax."}]) as llm:
        answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url), kb=bundled_kb)
        assert "may not answer" not in llm.requests[0]["messages"][1]["content"]


def test_an_llm_answer_about_a_name_the_kb_never_writes_says_which_in_a_note(bundled_settings, bundled_kb):
    """Marked "tentative" for asking about a field the KB never writes, the LLM's answer said
    nothing of which: the extractive answer names it in its text, the LLM's (already on
    screen when streamed) in a note."""
    question = LOGPROBS_Q + ". Can I raise ipcWaitSeconds for this?"
    with ScriptedLLM([{"content": "Raise kernel.msgmax [1]."}]) as llm:
        answer = answer_question(question, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert answer.backend.startswith("llm") and answer.coverage == "tentative"
    assert any("never mentions `ipcWaitSeconds`" in n for n in answer.notes), answer.notes
    with ScriptedLLM([{"content": "Raise kernel.msgmax [1]."}]) as llm:
        plain = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert not any("never mentions" in n for n in plain.notes)


def test_a_flag_no_passage_holds_is_not_presented_as_the_kbs_fix(bundled_settings, bundled_kb):
    """"start FastDeploy with --enable-logprobs-ipc-bypass=true [2]" cites a real passage and
    passed every check: grounded, coverage full, no note. A flag or variable that neither
    the passages nor the question write is made up, whatever it cites."""
    made_up = "The fix is to start FastDeploy with --enable-logprobs-ipc-bypass=true [2]. Raise kernel.msgmax to 1048576 [1]."
    with ScriptedLLM([{"content": made_up}]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert answer.backend.startswith("llm") and "--enable-logprobs-ipc-bypass" not in answer.answer
    assert "kernel.msgmax" in answer.answer
    assert any("removed 1 statement(s)" in n and "--enable-logprobs-ipc-bypass" in n for n in answer.notes)
    streamed: list[str] = []
    with ScriptedLLM([{"content": made_up}]) as llm:
        shown = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb, on_token=streamed.append)
    assert "--enable-logprobs-ipc-bypass" in "".join(streamed) and shown.coverage == "tentative"
    assert any("do not act on it" in n for n in shown.notes)
    # The asker's own flag, and the KB's, are no invention.
    with ScriptedLLM([{"content": "Keep --max-model-len as you set it and raise kernel.msgmax [1]."}]) as llm:
        own = answer_question(LOGPROBS_Q + " (started with --max-model-len 8192)", _settings(bundled_settings, llm.url, model="m"),
                              kb=bundled_kb)
    assert "--max-model-len" in own.answer and own.coverage == "full" and not own.notes


def test_a_figure_nothing_backs_is_not_passed_on_as_the_answer(bundled_settings, bundled_kb):
    """A fake endpoint answered "about 540 requests" where the calculation gave 54, and 540
    reached the user, cited, as the LLM's answer (trial): a wrong number is worse than none."""
    from assistant.llm import invented_figures

    question = "num_blocks_global 17131, average 20k tokens per request, how many concurrent requests?"
    wrong = "About 540 requests of 20,000 tokens run at once [1]. Size the batch from the KV cache, not from max-num-seqs [1]."
    with ScriptedLLM([{"content": wrong}]) as llm:
        answer = answer_question(question, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert "540" not in answer.answer and any("removed 1 statement(s)" in n and "540" in n for n in answer.notes)
    streamed: list[str] = []
    with ScriptedLLM([{"content": wrong}]) as llm:
        shown = answer_question(question, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb, on_token=streamed.append)
    assert "540" in "".join(streamed) and shown.coverage == "tentative" and any("do not use it" in n for n in shown.notes)
    assert "540" not in shown.answer  # flagged on screen, and left out of the final answer a page re-renders (trial)
    # The calculation's own figures, rounded or as a share, and small counts are no invention.
    known = "Computed with kv_concurrency: 17131 × 64 = 1,096,384 tokens; ÷ 20000 = 54.82 → 54. gpu_memory_utilization 0.9"
    assert invented_figures("About 54 requests (54.8 before rounding), 1,096,384 tokens, 90% of memory, in 2 steps on H100.", known) == []
    assert invented_figures("At 10:05 on v0.8.0 with Llama-3.1-8B it used 16 GiB.", known) == ["16 GiB"]
    # A version or size a name in the prompt holds backs the answer's plain figure.
    assert invented_figures("Since vLLM 0.8 the defaults changed; an 80 GB card holds it.", "v0.8.0 on an A100-80GB") == []
    # Written the Chinese way, next to characters, or with a unit glued on (trial: all passed)
    assert invented_figures("这台机器最多同时跑540个请求，把显存利用率设为0.97即可 [1]。", known) == ["540", "0.97"]
    assert invented_figures("每张卡至少需要 88GB 显存，把上下文改成12k即可 [1]。", known) == ["88GB", "12k"]
    assert invented_figures("上下文 20k 时大约 54 个 [1]。", known) == []  # 20k is the prompt's 20000


def test_a_setting_nothing_backs_is_caught_however_it_is_written():
    """Only `--x`, `X=` and `export X` were checked: "set VLLM_KV_TURBO to 1", `kv_turbo_mode:
    true` and a bare kv_turbo_swap reached the user as cited fixes (trial)."""
    from assistant.llm import invented_settings

    known = "passage: export NCCL_P2P_DISABLE=1, --max-model-len 8192; the log: CUDA_ERROR_OUT_OF_MEMORY"
    assert invented_settings("Set the environment variable VLLM_KV_TURBO to 1 [1].", known) == ["VLLM_KV_TURBO"]
    assert invented_settings("把环境变量 VLLM_KV_TURBO 设成 1 [1]。打开kv_turbo_swap开关 [1]。", known) == ["VLLM_KV_TURBO", "kv_turbo_swap"]
    assert invented_settings("In the config file set `kv_turbo_mode: true` [1].", known) == ["kv_turbo_mode"]
    # what the prompt holds, in either spelling, and code that names no setting, are not
    assert invented_settings("Use max_model_len 4096; CUDA_ERROR_OUT_OF_MEMORY means OOM; call torch.cuda.empty_cache() "
                             "in model_runner.py; set NCCL_P2P_DISABLE=1.", known) == []


def test_an_answer_that_cites_nothing_falls_back_to_the_kb(bundled_settings, bundled_kb):
    """An uncited LLM answer got every passage listed as its sources, unrelated articles too,
    as a grounded, full answer."""
    with ScriptedLLM([{"content": "Restart the server, then raise kernel.msgmax so the queue accepts the messages."}]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert answer.backend == "extractive" and "Restart the server" not in answer.answer
    assert any("cites no passage" in n for n in answer.notes) and answer.citations


@pytest.mark.parametrize("question,content,reason", [
    ("开启 logprobs 之后请求卡住", "Raise kernel.msgmax to 1048576 with sysctl, then restart the service [1].", "大模型用英文回答了中文问题"),
    (LOGPROBS_Q, "把 kernel.msgmax 调到 1048576，然后重启服务 [1]。", "the LLM answered in Chinese, not the asker's language"),
])
def test_an_answer_in_the_other_language_falls_back_to_the_kb_in_the_askers(bundled_settings, bundled_kb, question, content, reason):
    """A wrong-language answer was kept as a full answer, with an English note even for a
    Chinese asker."""
    with ScriptedLLM([{"content": content}]) as llm:
        answer = answer_question(question, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert answer.backend == "extractive" and content[:12] not in answer.answer
    assert any(reason in n for n in answer.notes), answer.notes
    # A Chinese answer that is mostly commands is still Chinese.
    with ScriptedLLM([{"content": "执行：\n```\nsysctl -w kernel.msgmax=1048576\nsysctl -w kernel.msgmnb=268435456\n```\n[1]"}]) as llm:
        kept = answer_question("开启 logprobs 之后请求卡住", _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert kept.backend.startswith("llm")


def test_the_invented_setting_check_compares_whole_names_and_splits_chinese_sentences():
    """A review found "--tp" known from "http", error codes (RESOURCE_EXHAUSTED) taken for
    variables, and one made-up flag deleting a whole Chinese line (。 needs no space after it)."""
    from assistant.llm import drop_sentences_naming, invented_settings

    assert invented_settings("Set --tp 2 [1].", "see the http endpoint") == ["--tp"]
    assert invented_settings("Use --enable [1].", "use --enable-prefix-caching") == ["--enable"]
    assert invented_settings("Lower --max-model-len [1].", "max_model_len is too large") == []
    assert invented_settings("RESOURCE_EXHAUSTED means the queue is full; export FOO_BAR=1 and NCCL_P2P_DISABLE=1 [1].",
                             "NCCL_P2P_DISABLE") == ["FOO_BAR"]
    assert drop_sentences_naming("设置 --max-num-seqs 8 即可。然后重启 [1]。", ["--max-num-seqs"]) == ("然后重启 [1]。", 1)


def test_an_answer_drawn_from_a_tool_result_needs_no_passage_citation(bundled_settings, bundled_kb):
    """The rule that an uncited answer falls back to the KB must not throw away an answer the
    model based on a tool's result."""
    script = [{"tool_calls": [{"name": "kv_concurrency", "arguments": '{"num_blocks": 17131, "avg_tokens_per_request": 20000}'}]},
              {"content": "With 17131 blocks of 64 tokens, about 54 requests of 20,000 tokens fit at once."}]
    with ScriptedLLM(script) as llm:
        answer = answer_question("FastDeploy num_blocks_global 17131, 20000 tokens per request: how many concurrent requests?",
                                 _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert answer.backend.startswith("llm") and "about 54 requests" in answer.answer


def test_an_unexpected_failure_is_said_without_the_exceptions_name(bundled_settings):
    """A garbage endpoint's note read "the LLM call failed (AttributeError)" (trial): the
    name is for the log. The Chinese note is translated too."""
    from assistant.answer import _reason_in
    from assistant.llm import _explain

    reason = _explain(AttributeError("'str' object has no attribute 'choices'"), bundled_settings, False)
    assert reason == "the LLM's reply could not be used" and "Error" not in reason
    assert _reason_in(reason, "zh") == "大模型的回复无法使用"


@pytest.mark.parametrize("step", [
    {"content": "最可能的原因是知识库段落里描述的情况 [1]。请按照段落中的解决办法操作", "finish_reason": "length"},
    {"content": "The likely cause is the one the passage describes [1]. Apply", "finish_reason": None},
])
def test_an_answer_cut_off_is_no_answer(step, bundled_settings, bundled_kb):
    """A reply stopped at the length limit, or a stream that closed mid-sentence, was shown as
    the whole answer with no note (trial)."""
    with ScriptedLLM([step]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb)
    assert answer.backend == "extractive" and any("cut off" in n for n in answer.notes), answer.notes
    # a server that leaves out finish_reason but ends its sentence is believed
    whole = {"content": "Raise kernel.msgmax and kernel.msgmnb as the passage says [1].", "finish_reason": None}
    with ScriptedLLM([whole]) as llm:
        assert answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb).backend != "extractive"


def test_a_reasoning_block_never_reaches_the_asker(bundled_settings, bundled_kb):
    """Qwen3 or DeepSeek-R1 served without a reasoning parser send <think>…</think> first; it
    was shown, "I am not sure" and all (trial)."""
    reply = "<think>\nThe user asks about a hang. I am not sure.\n</think>\n\nRaise kernel.msgmax as the passage says [1]."
    streamed: list[str] = []
    with ScriptedLLM([{"content": reply}]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb, on_token=streamed.append)
    assert "think" not in answer.answer and "not sure" not in answer.answer and "Raise kernel.msgmax" in answer.answer
    assert "think" not in "".join(streamed) and "Raise kernel.msgmax" in "".join(streamed)


def test_a_template_opened_reasoning_block_is_held_while_streaming(bundled_settings, bundled_kb):
    """An R1 distill's template opens `<think>` in the prompt, so the stream carries the
    reasoning with only a `</think>` after it: it was streamed to the asker and dropped only
    from the final answer (review). A model of that kind is held back until the tag."""
    from assistant.llm import _DropThink

    reply = "Okay, the user asks about a hang. I am not sure.\n</think>\n\nRaise kernel.msgmax as the passage says [1]."
    streamed: list[str] = []
    with ScriptedLLM([{"content": reply}]) as llm:
        settings = _settings(bundled_settings, llm.url, model="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
        answer = answer_question(LOGPROBS_Q, settings, kb=bundled_kb, on_token=streamed.append)
    assert "not sure" not in answer.answer and "Raise kernel.msgmax" in answer.answer
    assert "not sure" not in "".join(streamed) and "think" not in "".join(streamed), streamed

    def run(deltas: list[str], template_opens: bool) -> str:
        out: list[str] = []
        drop = _DropThink(out.append, template_opens)
        for d in deltas:
            drop(d)
        drop.flush()
        return "".join(out)

    # the tag split across deltas; no tag at all (a parser already took the reasoning) loses nothing
    assert run(["Hmm, let me", " think.</th", "ink>\n", "Raise it [1]."], True) == "Raise it [1]."
    assert run(["Raise it ", "[1]."], True) == "Raise it [1]."
    # any other model streams at once, as before
    assert run(["Okay.</think>Raise it [1]."], False) == "Okay.</think>Raise it [1]."


def test_runaway_and_wrong_language_answers_fall_back():
    """100 kB of one reply and a Chinese loop passed as answers; an English answer quoting one
    Chinese title passed as Chinese (trial)."""
    from assistant.llm import MAX_LLM_ANSWER_CHARS, _other_language, looks_like_garbage

    assert "characters" in looks_like_garbage("Cause is in [1]. " + "x" * 100_000, "")
    assert looks_like_garbage("最可能的原因是 KV cache 不够 [1]。" * 3000, "")  # over the bound
    assert looks_like_garbage(("显存不够请重启。" * 60)[:MAX_LLM_ANSWER_CHARS], "") == "the LLM answer repeats itself"
    assert looks_like_garbage("把 kernel.msgmax 调到 1048576，然后重启服务 [1]。先确认 FastDeploy 开了 logprobs [2]。", "") is None
    english = ("The likely cause is described in the passage titled 原因 [1]. The message queue limit is too small, "
               "so apply the sysctl fix from the passage exactly as written [1]. Then check the limits again [2].")
    assert _other_language(english, "zh") and not _other_language("把 kernel.msgmax 调到 1048576，然后重启 FastDeploy 服务 [1]。", "zh")


def test_the_checks_keep_what_is_grounded_and_catch_what_hides_in_markup():
    """From the reviewer of the LLM checks: a backticked env var passed; the tool the model
    called, a code block's variables and rounded or scaled figures were taken for inventions;
    a Chinese answer quoting an English log line was judged English; complete answers ending
    in a list or a URL were judged cut off; vLLM's "abort" passed; reasoning whose opening tag
    the template sent passed."""
    from assistant.llm import _Turn, _cut_off, _other_language, _tool_words, invented_figures, invented_settings, strip_reasoning

    known = "passage: export NCCL_P2P_DISABLE=1, --max-model-len 8192; log: CUDA_ERROR_OUT_OF_MEMORY"
    assert invented_settings("Then set the environment variable `FD_LOGPROBS_IPC_BYPASS` to `1` [2].", known) == ["FD_LOGPROBS_IPC_BYPASS"]
    assert invented_settings("env:\n- name: FD_LOGPROBS_IPC_BYPASS\n  value: \"1\"", known) == ["FD_LOGPROBS_IPC_BYPASS"]
    assert invented_settings("Per logprobs_message_size, one message is 133,136 bytes [1].", known + _tool_words()) == []
    assert invented_settings("```python\nsampling_params = SamplingParams(temperature=0)\nouts = llm.generate(p, sampling_params)\n```",
                             known) == []
    assert invented_figures("The KV cache holds about 1.1M tokens, 45k per GPU [1].", "1,096,384 tokens; 45232") == []
    # a thousands group is no number of its own; a list's items still are
    assert invented_figures("Each GPU has 96 GB free [1].", "17131 × 64 = 1,096,384 tokens") == ["96 GB"]
    assert invented_figures("Use block size 16 [1].", "block sizes 8,16,32") == []
    assert invented_figures("每个请求20000个token [1]。", "each request 2万 tokens") == []
    assert invented_figures("Start it with --shm-size=64g; TTFT drops to 350ms [1].", "--shm-size=16g") == ["64g", "350ms"]
    assert not _other_language("原因 [1]：\nWARNING scheduler.py:1 Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode "
                               "because there is not enough KV cache space\n即 KV Cache 不够。调高 gpu_memory_utilization [2]。", "zh")
    assert not _cut_off(_Turn("Raise both limits [1]:\n\n- sysctl -w kernel.msgmax=1048576", [], None))
    assert not _cut_off(_Turn("See https://github.com/PaddlePaddle/FastDeploy/issues/", [], None))
    assert _cut_off(_Turn("The likely cause is the one the passage describes [1]. Apply", [], "abort"))
    assert strip_reasoning("Okay, the user asks about a hang.\n</think>\n\nRaise kernel.msgmax [1].") == "Raise kernel.msgmax [1]."


def test_a_streamed_answer_resting_on_an_unbacked_figure_stays_flagged_not_called_empty(bundled_settings, bundled_kb):
    """Its only sentence removed, the answer fell back as "the LLM returned an empty answer"
    under "the LLM stopped mid-answer", neither true (review): it stays, flagged."""
    streamed: list[str] = []
    with ScriptedLLM([{"content": "Raise kernel.msgmax to 2097152 with sysctl, as the passage says [2]."}]) as llm:
        answer = answer_question(LOGPROBS_Q, _settings(bundled_settings, llm.url, model="m"), kb=bundled_kb, on_token=streamed.append)
    assert answer.backend != "extractive" and answer.coverage == "tentative" and any("2097152" in n for n in answer.notes)


def test_an_index_in_code_is_no_citation():
    """`print(out.outputs[0].text)` read as citation [0], pointing at no passage: the code line
    was deleted, leaving a loop with no body (review)."""
    from assistant.llm import drop_unsupported

    code = "Run it [1].\n```python\nfor out in outputs:\n    print(out.outputs[0].text)\n```"
    assert drop_unsupported(code, 3) == (code, 0)


def test_code_keeps_its_indexes_and_its_spaces():
    """An answer's code is quoted as written: `outputs[2]` was renumbered as citation [2], or
    deleted as one pointing at no passage, and `docker cp x:/a .` lost the space before its
    dot (review of the citation repair)."""
    from assistant.llm import drop_unsupported

    text = ("Copy the log out first [3]:\n```\ndocker cp vllm:/tmp/log .\n```\n"
            "Then read `outputs[2].text` [1] and `x[7]`.\n```python\nprint(outputs[5].text)\n```")
    fixed, cited = fix_citations(text, ["p1", "p2", "p3"])
    assert cited == ["p3", "p1"]
    assert fixed == ("Copy the log out first [1]:\n```\ndocker cp vllm:/tmp/log .\n```\n"
                     "Then read `outputs[2].text` [2] and `x[7]`.\n```python\nprint(outputs[5].text)\n```")
    assert drop_unsupported(text, 3) == (text, 0)
    # the same text after a citation is dropped outside code still loses the space before "."
    assert fix_citations("Restart it [9].", ["p1"])[0] == "Restart it."
    # an unclosed fence (a cut answer) is code to its end
    assert fix_citations("See [2].\n```\nprint(a[1])", ["p1", "p2"]) == ("See [1].\n```\nprint(a[1])", ["p2"])


def test_number_lists_stray_backticks_and_parsed_reasoning_after_review():
    """From the review of the citation and figure checks: a list's items ("8192,16384",
    "[256,512,1024]") were read as one grouped number, so the answer's 16384 was "invented";
    a stray backtick made the prose after it "code", so its [3] was kept unrenumbered; and an
    R1 served with a reasoning parser streamed nothing until the end."""
    from assistant.llm import _DropThink, drop_unsupported, invented_figures

    assert invented_figures("16384 fits [1].", "--max-model-len 8192,16384,32768") == []
    assert invented_figures("Use 1024 [1].", '"cudagraph_capture_sizes":[256,512,1024]') == []
    assert invented_figures("Up to 256 [1].", "sizes 64,128,256,512") == []
    assert invented_figures("Each GPU has 96 GB free [1].", "1,096,384 tokens") == ["96 GB"]
    text = "Check memory with `nvidia-smi [3]. Then lower `--gpu-memory-utilization` to 0.85 [1]."
    assert fix_citations(text, ["p1", "p2", "p3"]) == (
        "Check memory with `nvidia-smi [1]. Then lower `--gpu-memory-utilization` to 0.85 [2].", ["p3", "p1"])
    assert drop_unsupported(text.replace("[3]", "[7]"), 3)[1] == 1
    assert drop_unsupported("Keep \ue000 out [1].", 3) == ("Keep  out [1].", 0)  # the mask character never turns into "["
    out: list[str] = []
    drop = _DropThink(out.append, template_opens=True)
    drop("Raise it ")
    assert out == []
    drop.parsed_reasoning()  # the server sent reasoning_content: no </think> will come
    drop("[1].")
    assert "".join(out) == "Raise it [1]."
