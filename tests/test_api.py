"""The HTTP API over real HTTP (uvicorn on 127.0.0.1), with the real index and embedder."""

import json
import threading
from dataclasses import replace

import httpx
import pytest

from assistant.interfaces.http import create_app

from .fake_llm import ScriptedLLM
from .live_server import LiveServer, wait_ready


@pytest.fixture(scope="module")
def server(bundled_settings, bundled_kb, tmp_path_factory):
    settings = replace(bundled_settings, feedback_db=str(tmp_path_factory.mktemp("fb") / "feedback.sqlite3"))
    with LiveServer(create_app(settings)) as live:
        httpx.get(live.url + "/readyz", timeout=60)  # waits for nothing: the index is already built
        yield live


def test_ask_returns_the_cli_json_plus_an_answer_id(server):
    assert wait_ready(server.url)["index"]["chunks"] > 100
    r = httpx.post(server.url + "/v1/ask", json={"question": "requests hang after I enabled logprobs"}, timeout=30)
    data = r.json()
    assert r.status_code == 200 and len(data["id"]) == 16
    assert set(data) == {"id", "question", "answer", "lang", "grounded", "citations", "tool_calls", "backend", "timings_ms", "notes",
                         "coverage", "confidence", "fallback_reason"}
    assert data["fallback_reason"] is None  # no LLM was wanted, so nothing fell back
    assert data["grounded"] and data["citations"][0]["id"] == "fastdeploy-logprobs-hang" and "kernel.msgmax" in data["answer"]


def test_a_close_call_comes_back_marked_tentative(server):
    r = httpx.post(server.url + "/v1/ask", json={"question": "vllm prints a warning that the tokenizer is slow and recommends the fast tokenizer"},
                   timeout=30)
    data = r.json()
    assert r.status_code == 200 and data["grounded"] and data["coverage"] == "tentative"
    assert data["answer"].startswith("**Not a sure match.**")


def test_ask_options_and_log(server):
    r = httpx.post(server.url + "/v1/ask", json={"question": "what happened?", "lang": "zh", "top_k": 1,
                                                 "log": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191"}, timeout=30)
    data = r.json()
    assert data["lang"] == "zh" and data["citations"][0]["id"] == "vllm-nccl-error-multi-gpu"
    assert data["tool_calls"][0]["name"] == "diagnose_log"
    # "auto" is what `ask --lang` takes too: the question's language.
    r = httpx.post(server.url + "/v1/ask", json={"question": "请求一直卡住不返回", "lang": "auto"}, timeout=30)
    assert r.status_code == 200 and r.json()["lang"] == "zh"


def test_a_log_alone_is_the_question(server):
    """A portal posting only the log its user pasted got 422 "question: Field required",
    though `ask --log FILE` takes the log alone."""
    for body in ({"log": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191"},
                 {"question": " ", "log": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191", "lang": "zh"}):
        r = httpx.post(server.url + "/v1/ask", json=body, timeout=30)
        data = r.json()
        assert r.status_code == 200 and data["citations"][0]["id"] == "vllm-nccl-error-multi-gpu", r.text
        assert data["tool_calls"][0]["name"] == "diagnose_log" and data["lang"] == body.get("lang", "en")
    r = httpx.post(server.url + "/v1/ask/stream", json={"log": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191"}, timeout=30)
    assert r.status_code == 200 and "vllm-nccl-error-multi-gpu" in r.text


@pytest.mark.parametrize("body,status,fragment", [
    ({"question": ""}, 422, "empty"),
    ({"question": "x" * 9000}, 413, "8192"),
    ({"question": "q", "top_k": 99}, 422, "top_k"),
    ({"nope": 1}, 422, "question"),
    ({"question": "\x00\x01\x02\x03binary"}, 422, "binary"),
    # Letters of eight writing systems interleaved, as random Unicode is: answered with the CUDA
    # OOM article, tentative (newcomer).
    ({"question": "".join(chr(base + i) for i in range(5) for base in (0x0531, 0x10D0, 0x1200, 0x13A0, 0x16A0, 0x1820, 0x0F40, 0x0D85))},
     422, "does not read as text in any language"),
])
def test_bad_requests_get_clear_errors(server, body, status, fragment):
    r = httpx.post(server.url + "/v1/ask", json=body, timeout=30)
    assert r.status_code == status and fragment in r.text
    assert "Traceback" not in r.text and set(r.json()) == {"error", "hint"}
    assert 'ask "' not in r.json()["hint"]  # a hint for the API, not for the command line


def test_oversized_body_is_refused_before_parsing(server):
    r = httpx.post(server.url + "/v1/ask", content=b'{"question": "' + b"a" * 100_000 + b'"}', headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 413 and "request body over" in r.json()["error"]
    r = httpx.post(server.url + "/v1/ask", content=b"{not json", headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 422 and "Traceback" not in r.text
    r = httpx.post(server.url + "/v1/ask", content=b'{"question": ', headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 422 and r.json()["error"] == "invalid request: the body is not valid JSON (at character 13)"


def test_questions_in_other_languages_are_not_taken_for_noise():
    """The noise check counted kanji, hiragana, katakana, ー and 々 as five writing systems and
    refused an ordinary Japanese question (review); Korean and Russian pass too."""
    from assistant.questions import validate_question

    for question in ("vLLMサーバーで様々なモデルを動かすとKVキャッシュが足りなくなります。ＧＰＵはA100です。設定はどうすればいいですか",
                     "vLLM 서버에서 모델을 실행하면 KV 캐시가 부족합니다. 설정은 어떻게 하나요? GPU는 A100입니다",
                     "Привет, vLLM падает с ошибкой CUDA out of memory при запуске модели на A100, что делать?"):
        assert validate_question(question, 8192) == question


def test_slack_events_on_a_server_without_slack_says_why(server):
    """POST /slack/events answered a bare "Not Found" when Slack is not configured (newcomer)."""
    r = httpx.post(server.url + "/slack/events", json={"type": "url_verification"}, timeout=30)
    assert r.status_code == 404 and r.json()["error"] == "Slack is not configured on this server"
    assert "SLACK_SIGNING_SECRET" in r.json()["hint"]


def test_a_misspelt_field_is_refused_and_named_not_ignored(server):
    """{"question": "vllm oom", "topk": 1, "language": "zh"} got an English answer with five
    citations and no word that both fields were dropped (newcomer)."""
    r = httpx.post(server.url + "/v1/ask", json={"question": "vllm oom", "topk": 1, "language": "zh"}, timeout=30)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert "unknown field `topk` (did you mean `top_k`?" in error and "unknown field `language` (did you mean `lang`?" in error
    assert "Extra inputs" not in error
    r = httpx.post(server.url + "/v1/ask", json={"问题": "vllm oom"}, timeout=30)
    assert r.status_code == 422 and "unknown field `问题`" in r.json()["error"]
    feedback = httpx.post(server.url + "/v1/feedback", json={"answer_id": "x", "rating": 1, "stars": 5}, timeout=30)
    assert feedback.status_code == 422 and "unknown field `stars`" in feedback.json()["error"]


def test_a_body_that_is_not_json_is_told_so_in_plain_words(server):
    """A text/plain or form body got pydantic's "body: Input should be a valid dictionary or
    object to extract fields from" (422); a bad `lang` got "lang.literal['zh','en']: …"."""
    for content, ctype in ((b"vLLM CUDA out of memory", "text/plain"), (b"question=vLLM+OOM", "application/x-www-form-urlencoded"),
                           (b'{"question": "vLLM OOM"}', "text/json")):  # FastAPI reads application/json and */*+json only
        r = httpx.post(server.url + "/v1/ask", content=content, headers={"content-type": ctype}, timeout=30)
        assert r.status_code == 415 and r.json()["error"] == f"the body must be JSON, not {ctype}", r.text
        assert "application/json" in r.json()["hint"] and "dictionary" not in r.text
    empty = httpx.post(server.url + "/v1/ask", timeout=30)
    assert empty.status_code == 422 and empty.json()["error"] == "the request has no body"
    r = httpx.post(server.url + "/v1/ask", json={"question": "vLLM OOM", "lang": "fr"}, timeout=30)
    assert r.status_code == 422 and r.json()["error"].startswith("invalid request: lang: ") and "literal[" not in r.text
    # One line names every accepted value, not one line per member of the union (trial).
    assert r.json()["error"] == "invalid request: lang: Input should be 'zh', 'en' or 'auto'", r.text


def test_openai_compatible_chat_completions(server):
    import openai

    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list()] == ["kb-assistant"]
    resp = client.chat.completions.create(model="kb-assistant", messages=[{"role": "user", "content": "多卡启动报 NCCL 错误"}])
    text = resp.choices[0].message.content
    assert "NCCL_P2P_DISABLE" in text and "来源" in text and "[1]" in text
    extra = resp.model_extra or {}
    assert extra["citations"][0]["id"] == "vllm-nccl-error-multi-gpu"
    chunks = list(client.chat.completions.create(model="kb-assistant", stream=True, messages=[{"role": "user", "content": "vLLM CUDA out of memory"}]))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "--max-model-len" in streamed and chunks[-1].choices[0].finish_reason == "stop"
    assert (chunks[-1].model_extra or {}).get("citations")


def test_openai_compatible_errors_come_in_openais_shape(server):
    """A string "error" reached the `openai` client as "Error code: 422 - {...}", with no
    message, type or code: chat front ends showed a raw dict or nothing."""
    import openai

    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.chat.completions.create(model="kb-assistant", messages=[{"role": "system", "content": "hi"}])
    assert caught.value.message == "Error code: 422 - no user message in `messages`" and caught.value.type == "invalid_request_error"
    assert str(caught.value.code) == "422" and caught.value.body["hint"]
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.chat.completions.create(model="kb-assistant", messages=[])
    assert caught.value.body["message"].startswith("invalid request: messages")
    # Streamed, a question /v1/ask refuses is refused before the stream, not as a 200 "error: …" message.
    for content, status in (("", 422), ("x" * 9000, 413)):
        r = httpx.post(server.url + "/v1/chat/completions", json={"stream": True, "messages": [{"role": "user", "content": content}]}, timeout=30)
        assert r.status_code == status and r.json()["error"]["message"], r.text
    # A blank log alone is no question: it got a 200 answer at confidence 0.95 saying "(0 lines)".
    assert httpx.post(server.url + "/v1/ask", json={"log": "  "}, timeout=30).status_code == 422
    too_big = httpx.post(server.url + "/v1/chat/completions", content=b"x" * 2_000_000, headers={"content-type": "application/json"}, timeout=30)
    assert too_big.status_code == 413 and too_big.json()["error"]["message"].startswith("request body over")
    # The assistant's own endpoints keep their flat {"error", "hint"}.
    assert set(httpx.post(server.url + "/v1/ask", json={"question": ""}, timeout=30).json()) == {"error", "hint"}
    # From a newcomer trial: each was accepted or answered with a misleading word.
    chat = server.url + "/v1/chat/completions"
    big = httpx.post(chat, json={"messages": [{"role": "user", "content": "x" * 9000}]}, timeout=30)
    assert big.status_code == 413 and "/v1/ask" in big.json()["error"]["hint"]  # chat requests have no `log` field of their own
    three = httpx.post(chat, json={"n": 3, "messages": [{"role": "user", "content": "vLLM OOM"}]}, timeout=30)
    assert three.status_code == 422 and "n=1" in three.json()["error"]["message"]
    image = httpx.post(chat, json={"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]},
                       timeout=30)
    assert image.status_code == 422 and "text only" in image.json()["error"]["message"]
    assert httpx.post(server.url + "/v1/ask", json={"question": "vLLM OOM", "llm": "yes"}, timeout=30).status_code == 422


def test_openai_compatible_chat_answers_a_follow_up_in_its_conversation(server):
    """A chat front end sends the whole conversation: "tried that, still failing, what next?"
    alone was answered as a question of its own (a model-download article, or a refusal)."""
    import openai

    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    messages = [{"role": "user", "content": "vllm 启动报 CUDA out of memory，Qwen2.5-32B 单卡 A100 80G"},
                {"role": "assistant", "content": "先把 --max-model-len 调小"},
                {"role": "user", "content": "调了也没用，还是不行，接下来呢？"}]
    resp = client.chat.completions.create(model="kb-assistant", messages=messages)
    assert (resp.model_extra or {})["citations"][0]["id"] == "vllm-cuda-oom"
    # A long first message leaves the follow-up whole.
    messages[0]["content"] += " " + "x" * 9000
    resp = client.chat.completions.create(model="kb-assistant", messages=messages)
    assert resp.choices[0].message.content


def test_a_chat_follow_up_asking_for_english_answers_the_question_before_it_in_english(server):
    """"英文怎么说" and "what about in English?" got the same Chinese answer again (trial)."""
    import openai

    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    first = "vllm 跑 Qwen2.5-14B，A100 40G，启动报 CUDA out of memory"
    reply = client.chat.completions.create(model="kb-assistant", messages=[{"role": "user", "content": first}])
    for ask_again in ("英文怎么说", "what about in English?"):
        messages = [{"role": "user", "content": first}, {"role": "assistant", "content": reply.choices[0].message.content},
                    {"role": "user", "content": ask_again}]
        again = client.chat.completions.create(model="kb-assistant", messages=messages)
        text = again.choices[0].message.content
        assert (again.model_extra or {})["citations"][0]["id"] == "vllm-cuda-oom"
        assert "vLLM: CUDA out of memory" in text and "显存" not in text, ask_again
    back = [{"role": "user", "content": "vLLM CUDA out of memory at startup"}, {"role": "assistant", "content": "…"},
            {"role": "user", "content": "中文呢"}]
    assert "显存" in client.chat.completions.create(model="kb-assistant", messages=back).choices[0].message.content


def test_a_chat_follow_up_saying_the_fix_failed_is_told_its_first_setting_was_tried(server):
    """"tried that, still preempting. what next?" got the same fix list, the setting it had
    tried first (a newcomer trial); the last answer's first fix is what "that" is."""
    import openai

    from assistant.interfaces.chat import tried_first_fix

    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    first = "vllm logs say PreemptionMode.RECOMPUTE a lot under load"
    reply = client.chat.completions.create(model="kb-assistant", messages=[{"role": "user", "content": first}]).choices[0].message.content
    messages = [{"role": "user", "content": first}, {"role": "assistant", "content": reply},
                {"role": "user", "content": "tried that, still preempting. what next?"}]
    text = client.chat.completions.create(model="kb-assistant", messages=messages).choices[0].message.content
    # The article's first fix tried: a close call that says so, then what was tried, above the advice.
    assert text.startswith("**Not a sure match.** You already tried this article's main fix")
    head = text.split("**Likely cause**")[0]
    assert "already tried" in head and "`gpu_memory_utilization`" in head
    # A second "tried that" takes the next setting, not the same one again (review).
    messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "tried that too, no luck"}]
    third = client.chat.completions.create(model="kb-assistant", messages=messages).choices[0].message.content
    # Two of the article's settings tried: a close call now, said first, then what was tried.
    assert third.startswith("**Not a sure match.**") and "`gpu_memory_utilization`, `max_num_seqs`" in third.split("\n\n", 4)[2]
    assert tried_first_fix(reply) == "gpu_memory_utilization" and tried_first_fix(reply, ["gpu_memory_utilization"]) == "max_num_seqs"
    assert tried_first_fix("### An answer\n\n**Check next** [1]\n\n1. `max_num_seqs`") == ""  # no fix section
    # Not said to have failed: a question, a negation, 没用 as "not using", 还是 as "or" (review).
    for not_tried in ("I haven't tried that yet. what does raising it do?", "has anyone tried this on H20?",
                      "does it still preempt if I use fp8 kv cache?", "我们没用 k8s，裸机部署，这个也适用吗？",
                      "这是显存不够还是卡的问题？"):
        follow = [{"role": "user", "content": first}, {"role": "assistant", "content": reply}, {"role": "user", "content": not_tried}]
        out = client.chat.completions.create(model="kb-assistant", messages=follow).choices[0].message.content
        assert "already tried" not in out and "已经试过" not in out, not_tried
    # A follow-up naming what it changed is tried for that setting, not for the answer's first one.
    follow = [{"role": "user", "content": first}, {"role": "assistant", "content": reply},
              {"role": "user", "content": "lowered --max-num-seqs too, still preempting"}]
    out = client.chat.completions.create(model="kb-assistant", messages=follow).choices[0].message.content
    tried_line = next(line for line in out.splitlines() if "already tried" in line)
    assert "--max-num-seqs" in tried_line and "gpu_memory_utilization" not in tried_line


def test_openai_compatible_chat_carries_the_answers_notes(bundled_settings, bundled_kb, tmp_path):
    """/v1/chat/completions sent `answer` and sources only: the note that an LLM statement cites
    a passage that does not say it, or that the LLM failed and the KB answered, never reached a
    chat front end, streamed or not."""
    import openai

    made_up = "Raise kernel.msgmax [1]. Also set --ipc-turbo 1 to fix it [9]. Check ipcs -l [3]."
    cut = "The likely cause is the one the passage describes [1]. Apply"  # stream closed mid-sentence
    script = [{"content": made_up}, {"content": made_up}, {"status": 500}, {"content": cut, "finish_reason": None}]
    with ScriptedLLM(script) as llm:
        settings = replace(bundled_settings, llm_base_url=llm.url, llm_model="m", feedback_db=str(tmp_path / "f.db"))
        with LiveServer(create_app(settings)) as live:
            wait_ready(live.url)
            client = openai.OpenAI(base_url=live.url + "/v1", api_key="unused", max_retries=0)
            question = [{"role": "user", "content": "FastDeploy requests hang after I enabled logprobs"}]
            plain = client.chat.completions.create(model="kb-assistant", messages=question).choices[0].message.content
            chunks = list(client.chat.completions.create(model="kb-assistant", stream=True, messages=question))
            streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            failed = client.chat.completions.create(model="kb-assistant", messages=question).choices[0].message.content
            chunks = list(client.chat.completions.create(model="kb-assistant", stream=True, messages=question))
            fell_back = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "--ipc-turbo" not in plain and "_removed 1 statement(s) of the LLM answer" in plain
    # Streamed, the made-up sentence is on screen before it can be judged: the note must follow it.
    assert "--ipc-turbo" in streamed and "1 streamed statement(s)" in streamed.split("--ipc-turbo", 1)[1], streamed[-600:]
    assert streamed.count("Raise kernel.msgmax") == 1  # the trimmed final answer is not sent a second time
    assert "msgmax" in failed and "_the LLM returned HTTP 500; answered from the KB instead_" in failed
    # A KB answer after a streamed partial one says to disregard the unfinished text first (trial)
    head, _, tail = fell_back.partition("-- The LLM stopped mid-answer: do not act on the unfinished text above.")
    assert head.startswith("The likely cause") and "msgmax" in tail and "cut off" in tail, fell_back[-400:]


def test_stream_endpoint_sends_events_ending_with_the_answer(server):
    with httpx.stream("POST", server.url + "/v1/ask/stream", json={"question": "加载模型卡住不动"}, timeout=30) as r:
        text = "".join(r.iter_text())
    events = [block.split("\n", 1)[0] for block in text.strip().split("\n\n")]
    assert events[-1] == "event: answer"
    data = json.loads(text.strip().split("\n\n")[-1].split("data: ", 1)[1])
    assert "HF_ENDPOINT" in data["answer"] and data["id"]


@pytest.mark.parametrize("question,status", [("", 422), ("x" * 9000, 413), ("\x00\x01\x02\x03binary", 422)])
def test_stream_endpoint_refuses_a_bad_question_with_the_status_ask_gives(server, question, status):
    """It answered 200 with an `error` event, and /metrics counted the rejection as a success."""
    r = httpx.post(server.url + "/v1/ask/stream", json={"question": question}, timeout=30)
    assert r.status_code == status and set(r.json()) == {"error", "hint"} and r.json()["hint"]


def test_tools_over_http(server):
    tools = {t["name"]: t for t in httpx.get(server.url + "/v1/tools").json()}
    assert "kv_concurrency" in tools and tools["kv_concurrency"]["parameters"]["required"] == ["num_blocks", "avg_tokens_per_request"]
    r = httpx.post(server.url + "/v1/tools/kv_concurrency", json={"num_blocks": 17131, "avg_tokens_per_request": 20000})
    assert r.status_code == 200 and r.json()["result"]["concurrent_requests"] == 54
    assert httpx.post(server.url + "/v1/tools/kv_concurrency", json={"num_blocks": "x"}).status_code == 422
    assert httpx.post(server.url + "/v1/tools/rm_rf", json={}).status_code == 404
    # no reading server files, no probing arbitrary hosts
    r = httpx.post(server.url + "/v1/tools/diagnose_log", json={"path": "/etc/passwd"})
    assert r.status_code == 422 and "not allowed" in r.json()["error"]
    r = httpx.post(server.url + "/v1/tools/serving_status", json={"base_url": "http://169.254.169.254/latest"})
    assert r.status_code == 422 and "may only probe" in r.json()["error"]
    assert httpx.post(server.url + "/v1/tools/diagnose_log", json={"text": "CUDA out of memory"}).json()["result"]["findings"][0]["article"] == "vllm-cuda-oom"


def test_feedback_is_stored_and_exported(server, bundled_settings):
    answer = httpx.post(server.url + "/v1/ask", json={"question": "vLLM CUDA out of memory"}, timeout=30).json()
    assert httpx.post(server.url + "/v1/feedback", json={"answer_id": answer["id"], "rating": -1, "comment": "wanted the swap-space size"}).status_code == 200
    assert httpx.post(server.url + "/v1/feedback", json={"answer_id": "nope", "rating": 1}).status_code == 404  # an id never issued is not found, not a bad request
    bad = httpx.post(server.url + "/v1/feedback", json={"answer_id": answer["id"], "rating": 5})
    assert bad.status_code == 422 and "rating: Input should be 1 or -1" in bad.json()["error"], bad.json()  # not "one of the documented values"
    store = server.server.config.app.state.assistant.feedback
    drafts = store.export_negative()
    assert drafts[-1]["question"] == "vLLM CUDA out of memory" and drafts[-1]["expect"] == []
    assert "swap-space" in drafts[-1]["draft"]["comments"] and drafts[-1]["draft"]["cited"][0] == "vllm-cuda-oom"


def test_health_ready_metrics_docs(server):
    assert httpx.get(server.url + "/healthz").json()["status"] == "ok"
    ready = wait_ready(server.url)
    assert ready["ready"] and ready["llm"] == {"configured": False, "reachable": None}
    metrics = httpx.get(server.url + "/metrics").text
    for name in ("assistant_http_requests_total", "assistant_http_request_seconds_bucket", "assistant_grounded_ratio",
                 "assistant_llm_fallbacks_total", "assistant_tool_calls_total"):
        assert name in metrics
    assert httpx.get(server.url + "/docs").status_code == 200
    assert "/v1/ask" in httpx.get(server.url + "/openapi.json").json()["paths"]
    assert "access-control-allow-origin" not in httpx.options(server.url + "/v1/ask", headers={"Origin": "http://evil", "Access-Control-Request-Method": "POST"}).headers


def test_tokens_and_a_busy_client_is_queued_not_refused(bundled_settings, bundled_kb, tmp_path):
    settings = replace(bundled_settings, api_tokens="s3cret,other", feedback_db=str(tmp_path / "f.db"))
    with LiveServer(create_app(settings)) as live:
        wait_ready(live.url)
        r = httpx.post(live.url + "/v1/ask", json={"question": "NCCL error"})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert httpx.post(live.url + "/v1/ask", json={"question": "NCCL error"}, headers={"Authorization": "Bearer wrong"}).status_code == 401
        ok = httpx.post(live.url + "/v1/ask", json={"question": "NCCL error"}, headers={"Authorization": "Bearer s3cret"}, timeout=30)
        assert ok.status_code == 200
        assert httpx.get(live.url + "/healthz").status_code == 200  # probes stay open

    # One answer slot, held by a request whose LLM hangs: the same client's next requests
    # wait their turn and are answered (no per-client 429); only a full queue refuses.
    with ScriptedLLM([{"hang": 2.0}]) as llm:
        slow_settings = replace(settings, llm_base_url=llm.url, llm_model="m", llm_timeout=1.5, answer_threads=1, queue_size=2)
        with LiveServer(create_app(slow_settings)) as slow:
            wait_ready(slow.url)
            results: dict = {}

            def send(name: str, body: dict, token: str = "s3cret") -> None:
                results[name] = httpx.post(slow.url + "/v1/ask", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)

            first = threading.Thread(target=send, args=("first", {"question": "vLLM CUDA out of memory"}))
            first.start()
            import time

            time.sleep(0.5)
            queued = [threading.Thread(target=send, args=(f"q{i}", {"question": "NCCL error", "llm": False})) for i in range(2)]
            for t in queued:
                t.start()
            time.sleep(0.3)
            send("over", {"question": "NCCL error", "llm": False})  # the queue (2) is full: refused
            send("other", {"question": "NCCL error", "llm": False}, token="other")  # another client: the hog's newest waiter makes room
            for t in [first, *queued]:
                t.join()
    assert results["over"].status_code == 429 and int(results["over"].headers["retry-after"]) >= 1
    assert set(results["over"].json()) == {"error", "hint"} and "queue is full" in results["over"].json()["error"]
    assert results["other"].status_code == 200
    codes = sorted(results[f"q{i}"].status_code for i in range(2))
    assert codes == [200, 429]  # one of the hog's two waiters was shed for the other client
    # the hanging LLM did not hang the request: extractive answer with a note, within the timeout
    first_data = results["first"].json()
    assert first_data["backend"] == "extractive" and any("did not answer in time" in n for n in first_data["notes"])


def test_cors_only_when_configured(bundled_settings, bundled_kb, tmp_path):
    settings = replace(bundled_settings, cors_origins="https://portal.example", feedback_db=str(tmp_path / "f.db"))
    with LiveServer(create_app(settings)) as live:
        r = httpx.options(live.url + "/v1/ask", headers={"Origin": "https://portal.example", "Access-Control-Request-Method": "POST"})
        assert r.headers.get("access-control-allow-origin") == "https://portal.example"


def test_every_error_says_where_to_look_next(server):
    """An error with an empty "hint" left a portal developer with nothing to try."""
    requests = [
        ("post", "/v1/feedback", {"answer_id": "nope", "rating": 1}),
        ("post", "/v1/tools/kv_concurrency", {"num_blocks": -5, "avg_tokens_per_request": 10}),
        ("post", "/v1/chat/completions", {"messages": [{"role": "system", "content": "hi"}]}),
        ("get", "/static/nothing.js", None),
        ("get", "/v1/nothing", None),
        ("delete", "/v1/ask", None),
        ("post", "/v1/ask", {"question": ""}),
    ]
    for method, path, body in requests:
        r = httpx.request(method, server.url + path, json=body, timeout=30)
        data = r.json()
        if path == "/v1/chat/completions":  # OpenAI's shape, the hint inside it
            data = {"error": data["error"]["message"], "hint": data["error"]["hint"]}
        assert r.status_code >= 400 and set(data) == {"error", "hint"}, (path, r.status_code, data)
        assert data["error"] and data["hint"].strip(), (path, data)


def test_readyz_calls_an_llm_reachable_only_when_it_speaks_the_models_api(bundled_settings):
    """An endpoint whose /v1/models answered 200 with binary garbage was "reachable"."""
    from assistant.llm import llm_reachable

    from .fake_llm import ScriptedLLM

    with ScriptedLLM([], models_body=b"\x00\xff\xfe garbage") as garbage:
        assert llm_reachable(replace(bundled_settings, llm_base_url=garbage.url)) is False
    with ScriptedLLM([]) as llm:
        assert llm_reachable(replace(bundled_settings, llm_base_url=llm.url)) is True
