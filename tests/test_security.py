"""Security and fault hardening (issue 11), each finding checked the way it was found: over
real HTTP against `assistant serve`'s app on 127.0.0.1, with the scripted OpenAI-compatible
server standing in for a model that a prompt-injected runbook or question steers."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from assistant.answer import answer_question
from assistant.interfaces.http import create_app
from assistant.interfaces.http.auth import client_label
from oncall_common.errors import ConfigError
from assistant.ops.feedback import FeedbackStore

from .fake_llm import ScriptedLLM
from .live_server import LiveServer, wait_ready

OOM = "vLLM CUDA out of memory"
SECRET_LINE = "db password=hunter2-very-secret"


class Victim:
    """A loopback HTTP server that only counts hits: a host the server must not be made to probe."""

    def __init__(self) -> None:
        self.hits = 0
        owner = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                owner.hits += 1
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def secret_log(tmp_path):
    path = tmp_path / "secret.log"
    path.write_text(f"torch.OutOfMemoryError: CUDA out of memory. {SECRET_LINE}\n", encoding="utf-8")
    return path


@pytest.fixture()
def victim():
    v = Victim()
    yield v
    v.close()


def _tool_script(calls: list[dict]) -> list:
    """First request: call the tools; second: answer, citing passage 1."""
    return [{"tool_calls": [{"name": c["name"], "arguments": json.dumps(c["arguments"])} for c in calls]},
            {"content": "Lower --gpu-memory-utilization and --max-model-len [1]."}]


@pytest.fixture(scope="module")
def plain(bundled_settings, bundled_kb, tmp_path_factory):
    """A server as `assistant serve` starts it with defaults: no tokens, no LLM."""
    settings = replace(bundled_settings, feedback_db=str(tmp_path_factory.mktemp("fb") / "f.sqlite3"))
    app = create_app(settings)
    with LiveServer(app) as live:
        yield live, app


# ---------------------------------------------------------------- 2. the LLM's tools over HTTP and Slack

def test_llm_answering_over_http_gets_only_remote_safe_tools_and_arguments(bundled_settings, bundled_kb, tmp_path, secret_log, victim, monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "sk-live-0123456789")
    calls = [{"name": "diagnose_log", "arguments": {"path": str(secret_log)}},
             {"name": "serving_status", "arguments": {"base_url": victim.url}},
             {"name": "host_status", "arguments": {}}]
    with ScriptedLLM(_tool_script(calls)) as llm:
        # only port 1 of loopback may be probed: the victim's port is not on the list
        settings = replace(bundled_settings, llm_base_url=llm.url, llm_model="m", serving_hosts_allow="127.0.0.1:1",
                           feedback_db=str(tmp_path / "f.db"))
        with LiveServer(create_app(settings)) as live:
            r = httpx.post(live.url + "/v1/ask", json={"question": OOM}, timeout=60)
        offered = {t["function"]["name"]: t["function"]["parameters"] for t in llm.requests[0]["tools"]}
        fed_back = [json.loads(m["content"]) for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert r.status_code == 200 and r.json()["backend"] == "llm:m"
    assert "path" not in offered["diagnose_log"]["properties"]  # the model is not even told about paths
    by_name = {c["name"]: c for c in r.json()["tool_calls"]}
    assert "not allowed" in by_name["diagnose_log"]["error"]
    assert "may only probe" in by_name["serving_status"]["error"] and victim.hits == 0
    assert by_name["host_status"]["result"]["env"]["VLLM_API_KEY"] == "<set, value hidden>"
    seen_by_client_and_model = r.text + json.dumps(fed_back)
    for secret in ("hunter2", "sk-live-0123456789"):
        assert secret not in seen_by_client_and_model


def test_llm_answering_over_http_cannot_make_kv_bytes_per_token_read_a_server_file(bundled_settings, bundled_kb, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                                  "hidden_size": 4096, "torch_dtype": "bfloat16"}), encoding="utf-8")
    calls = [{"name": "kv_bytes_per_token", "arguments": {"config_json": str(config)}},
             {"name": "kv_bytes_per_token", "arguments": {"config_json": str(tmp_path / "missing.json")}},
             {"name": "kv_bytes_per_token", "arguments": {"config_path": str(config)}}]
    with ScriptedLLM(_tool_script(calls)) as llm:
        settings = replace(bundled_settings, llm_base_url=llm.url, llm_model="m", feedback_db=str(tmp_path / "f.db"))
        with LiveServer(create_app(settings)) as live:
            data = httpx.post(live.url + "/v1/ask", json={"question": OOM}, timeout=60).json()
    present, missing, by_path = [c for c in data["tool_calls"] if c["name"] == "kv_bytes_per_token"]
    assert present["result"] is None and present["error"]  # the file was not read
    assert by_path["result"] is None and "not allowed" in by_path["error"]
    assert present["error"].replace(str(config), "X") == missing["error"].replace(str(tmp_path / "missing.json"), "X")


def test_the_cli_keeps_every_tool(bundled_settings, bundled_kb, secret_log):
    with ScriptedLLM(_tool_script([{"name": "diagnose_log", "arguments": {"path": str(secret_log)}}])) as llm:
        answer = answer_question(OOM, replace(bundled_settings, llm_base_url=llm.url, llm_model="m"), kb=bundled_kb)
        offered = {t["function"]["name"]: t["function"]["parameters"] for t in llm.requests[0]["tools"]}
    assert "path" in offered["diagnose_log"]["properties"]
    call = next(c for c in answer.tool_calls if c["name"] == "diagnose_log")
    assert call["error"] is None and call["result"]["findings"][0]["article"] == "vllm-cuda-oom"


def test_every_remote_schema_is_free_of_file_parameters(plain):
    from assistant.tools import registry

    live, _ = plain
    listed = {t["name"]: t["parameters"] for t in httpx.get(live.url + "/v1/tools").json()}
    for t in registry().values():
        for name in t.access.reads_files:
            assert name not in listed[t.name]["properties"]
    assert "path" not in listed["diagnose_log"]["properties"] and "text" in listed["diagnose_log"]["properties"]
    r = httpx.post(live.url + "/v1/tools/serving_status", json={"base_url": "http://127.0.0.1@169.254.169.254/"})
    assert r.status_code == 422 and "may only probe" in r.json()["error"]


# ---------------------------------------------------------------- 4. host_status and secrets

def test_host_status_reports_secret_variables_by_name_only(plain, monkeypatch):
    live, _ = plain
    monkeypatch.setenv("VLLM_API_KEY", "sk-live-0123456789")
    monkeypatch.setenv("FD_SECRET", "fd-secret-value")
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("HF_ENDPOINT", "https://user:pa55@hf-mirror.example/")
    r = httpx.post(live.url + "/v1/tools/host_status", json={}, timeout=30)
    env = r.json()["result"]["env"]
    assert env["VLLM_API_KEY"] == env["FD_SECRET"] == "<set, value hidden>"
    assert env["NCCL_DEBUG"] == "INFO" and env["HF_ENDPOINT"] == "https://hf-mirror.example/"
    assert "sk-live" not in r.text and "fd-secret" not in r.text and "pa55" not in r.text


# ---------------------------------------------------------------- 7. the feedback store never breaks answering

def test_a_locked_feedback_db_costs_the_answer_nothing(bundled_settings, bundled_kb, tmp_path, caplog):
    db = tmp_path / "f.db"
    settings = replace(bundled_settings, feedback_db=str(db), feedback_timeout=0.3)
    with LiveServer(create_app(settings)) as live:
        wait_ready(live.url)
        earlier = httpx.post(live.url + "/v1/ask", json={"question": OOM}, timeout=30).json()["id"]
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            started = time.monotonic()
            r = httpx.post(live.url + "/v1/ask", json={"question": OOM}, timeout=30)
            elapsed = time.monotonic() - started
            fb = httpx.post(live.url + "/v1/feedback", json={"answer_id": earlier, "rating": 1}, timeout=30)
        finally:
            holder.rollback()
            holder.close()
    assert r.status_code == 200 and "--max-model-len" in r.json()["answer"] and elapsed < 3.0
    assert fb.status_code == 503 and set(fb.json()) == {"error", "hint"}
    assert "not recorded" in caplog.text


@pytest.mark.parametrize("kind", ["unopenable", "corrupt"])
def test_the_server_starts_and_answers_without_a_usable_feedback_db(bundled_settings, bundled_kb, tmp_path, kind, caplog):
    if kind == "unopenable":  # what a read-only cache directory does to SQLite
        db = tmp_path / "a-directory"
        db.mkdir()
    else:
        db = tmp_path / "f.db"
        db.write_bytes(b"this is not a database" * 100)
    app = create_app(replace(bundled_settings, feedback_db=str(db)))
    with LiveServer(app) as live:
        ready = wait_ready(live.url)
        r = httpx.post(live.url + "/v1/ask", json={"question": OOM}, timeout=30)
    assert ready["feedback"].startswith("unavailable")
    assert r.status_code == 200 and r.json()["grounded"]
    assert "feedback store" in caplog.text


# ---------------------------------------------------------------- 8. bad input is a 422, surprises are logged

@pytest.mark.parametrize("raw", [
    b'{"question": "vLLM \\ud800 OOM"}',
    b'{"question": "vLLM OOM", "log": "CUDA \\udc00 out of memory"}',
])
def test_lone_surrogates_are_rejected_with_422(plain, raw):
    live, _ = plain
    r = httpx.post(live.url + "/v1/ask", content=raw, headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 422 and "surrogate" in r.json()["error"]


def test_lone_surrogates_elsewhere_are_rejected_with_422(plain):
    live, _ = plain
    for path, raw in [("/v1/feedback", b'{"answer_id": "\\ud800", "rating": 1}'),
                      ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "\\udfff"}]}'),
                      ("/v1/tools/diagnose_log", b'{"text": "\\ud800"}')]:
        r = httpx.post(live.url + path, content=raw, headers={"content-type": "application/json"}, timeout=30)
        error = r.json()["error"]
        if isinstance(error, dict):  # the OpenAI-compatible path answers in OpenAI's shape
            assert path == "/v1/chat/completions" and set(error) == {"message", "type", "param", "code", "hint"}, r.text
            error = error["message"]
        assert r.status_code == 422 and ("surrogate" in error or set(r.json()) == {"error", "hint"}), (path, r.text)


def test_a_7000_digit_number_in_a_calculation_question_is_not_a_500(plain):
    live, _ = plain
    r = httpx.post(live.url + "/v1/ask", json={"question": "num_blocks " + "9" * 7000 + " how many concurrent requests"}, timeout=60)
    assert r.status_code in (200, 422), r.text
    assert "answer" in r.json() if r.status_code == 200 else set(r.json()) == {"error", "hint"}


def test_unexpected_errors_are_logged_with_their_traceback_and_never_shown(plain, caplog):
    live, app = plain

    def explode():
        raise RuntimeError("boom: a bug in an endpoint")

    app.add_api_route("/test-only/explode", explode, include_in_schema=False)
    r = httpx.get(live.url + "/test-only/explode", timeout=10)
    assert r.status_code == 500 and r.json() == {"error": "internal error", "hint": "see the server log"}
    assert "boom" not in r.text and "Traceback" not in r.text
    record = next(rec for rec in caplog.records if rec.name.startswith("assistant") and rec.exc_info)
    assert "boom: a bug in an endpoint" in str(record.exc_info[1])


# ---------------------------------------------------------------- 9. auth and exposure

def test_a_token_setting_without_tokens_refuses_to_start(bundled_settings, tmp_path):
    with pytest.raises(ConfigError, match="holds no token"):
        create_app(replace(bundled_settings, api_tokens=", ,", feedback_db=str(tmp_path / "f.db")))


def test_readyz_shows_counts_not_server_paths(plain, bundled_settings):
    live, _ = plain
    ready = wait_ready(live.url)
    text = json.dumps(ready)
    assert ready["index"]["chunks"] > 100 and ready["index"]["documents"] > 10 and ready["index"]["sources"] == 1
    assert str(bundled_settings.cache_dir) not in text and str(bundled_settings.kb_dir) not in text
    assert "index_dir" not in ready["index"]


def test_docs_from_a_cdn_are_off_when_tokens_are_set_and_the_page_sends_security_headers(bundled_settings, bundled_kb, tmp_path):
    settings = replace(bundled_settings, api_tokens="s3cret-token-1", feedback_db=str(tmp_path / "f.db"))
    with LiveServer(create_app(settings)) as live:
        assert httpx.get(live.url + "/docs").status_code == 404
        assert httpx.get(live.url + "/redoc").status_code == 404
        page = httpx.get(live.url + "/")
    assert page.status_code == 200
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "http" not in csp


# ---------------------------------------------------------------- 10. feedback does not store token material

def test_feedback_user_is_a_label_not_part_of_the_token(bundled_settings, bundled_kb, tmp_path):
    db = tmp_path / "f.db"
    token = "tok-abcdefgh-0123456789"
    settings = replace(bundled_settings, api_tokens=token, feedback_db=str(db))
    auth = {"Authorization": f"Bearer {token}"}
    with LiveServer(create_app(settings)) as live:
        answer = httpx.post(live.url + "/v1/ask", json={"question": OOM}, headers=auth, timeout=30).json()
        assert httpx.post(live.url + "/v1/feedback", json={"answer_id": answer["id"], "rating": -1}, headers=auth).status_code == 200
    (user,) = sqlite3.connect(db).execute("SELECT user FROM feedback").fetchone()
    assert user == client_label(token) and token[:4] not in user


# ---------------------------------------------------------------- 11. metric labels stay bounded

def test_invented_tool_names_are_counted_as_unknown(bundled_settings, bundled_kb, tmp_path):
    invented = [{"name": f"made_up_tool_{i}", "arguments": {}} for i in range(3)]
    with ScriptedLLM(_tool_script(invented)) as llm:
        settings = replace(bundled_settings, llm_base_url=llm.url, llm_model="m", feedback_db=str(tmp_path / "f.db"))
        with LiveServer(create_app(settings)) as live:
            data = httpx.post(live.url + "/v1/ask", json={"question": OOM}, timeout=60).json()
            metrics = httpx.get(live.url + "/metrics").text
    assert len(data["tool_calls"]) == 3
    assert "made_up_tool" not in metrics and 'assistant_tool_calls_total{ok="false",tool="unknown"} 3.0' in metrics


# ---------------------------------------------------------------- 13. edited or deleted runbooks

RUNBOOK = """\
---
id: gizmo-restart
lang: en
title: "Gizmo: the daemon loses its lease"
---

# Gizmo: the daemon loses its lease

## Causes
The gizmo lease expires after {minutes} minutes without a heartbeat.

## Fixes
Run `gizmoctl lease --renew --minutes {minutes}`.
"""


def test_an_edited_runbook_is_reloaded_and_a_deleted_one_is_reported(tiny_settings, tmp_path):
    from assistant.knowledge import open_kb, set_extra_sources

    runbook = tmp_path / "runbooks" / "gizmo.md"
    runbook.parent.mkdir()
    runbook.write_text(RUNBOOK.format(minutes=15), encoding="utf-8")
    settings = replace(tiny_settings, kb_check_interval=0.0, feedback_db=str(tmp_path / "f.db"))
    set_extra_sources(settings, [runbook.parent])
    open_kb(settings, progress=lambda _m: None)
    question = {"question": "gizmo daemon loses its lease", "llm": False}
    with LiveServer(create_app(settings)) as live:
        assert "--minutes 15" in httpx.post(live.url + "/v1/ask", json=question, timeout=30).json()["answer"]
        runbook.write_text(RUNBOOK.format(minutes=45), encoding="utf-8")
        deadline = time.monotonic() + 90
        answer = ""
        while "--minutes 45" not in answer and time.monotonic() < deadline:
            answer = httpx.post(live.url + "/v1/ask", json=question, timeout=30).json()["answer"]
            time.sleep(0.2)
        assert "--minutes 45" in answer and "--minutes 15" not in answer
        runbook.unlink()
        runbook.parent.rmdir()
        warnings: list = []
        while not warnings and time.monotonic() < deadline:
            warnings = wait_ready(live.url)["index"]["warnings"]
            time.sleep(0.2)
    assert warnings and "'runbooks' no longer exists" in warnings[0]


# ---------------------------------------------------------------- 17. one error shape

@pytest.mark.parametrize("content,headers", [
    (b"[" * 5000 + b"]" * 5000, {"content-type": "application/json"}),
    (b'{"question": "\xff\xfe not utf-8"}', {"content-type": "application/json"}),
], ids=["deep-nesting", "invalid-utf8"])
def test_unparsable_bodies_get_the_error_hint_shape(plain, content, headers):
    live, _ = plain
    r = httpx.post(live.url + "/v1/ask", content=content, headers=headers, timeout=30)
    assert r.status_code == 422 and set(r.json()) == {"error", "hint"}, r.text


def test_chunked_bodies_and_unknown_routes_get_the_error_hint_shape(plain):
    live, _ = plain

    def chunks():
        yield b'{"question": '
        yield b'"vLLM CUDA out of memory"}'

    r = httpx.post(live.url + "/v1/ask", content=chunks(), headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 200 and r.json()["grounded"]

    def bad_chunks():
        yield b'{"question": '
        yield b'"vLLM \xff"}'

    r = httpx.post(live.url + "/v1/ask", content=bad_chunks(), headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 422 and set(r.json()) == {"error", "hint"}

    def huge_chunks():  # no Content-Length to check first: it was "not valid JSON", 422
        yield b'{"question": "'
        for _ in range(40):
            yield b"x" * 8192
        yield b'"}'

    r = httpx.post(live.url + "/v1/ask", content=huge_chunks(), headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 413 and "request body over" in r.json()["error"], r.text
    for method, path in (("GET", "/nope"), ("GET", "/v1/ask")):
        r = httpx.request(method, live.url + path, timeout=10)
        assert r.status_code in (404, 405) and set(r.json()) == {"error", "hint"}


# ---------------------------------------------------------------- 18. feedback retention

def test_old_unrated_answers_are_pruned_and_rated_ones_kept(tmp_path):
    from assistant.answer import Answer

    db = tmp_path / "f.db"
    store = FeedbackStore(db, retention_days=30)
    old_rated, old_unrated, fresh = (store.record_answer(Answer(q, "a", "en", True, []), "http") for q in ("q1", "q2", "q3"))
    store.add_feedback(old_rated, -1, "wrong")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE answers SET created = ? WHERE id IN (?, ?)", (time.time() - 40 * 86400, old_rated, old_unrated))
    again = FeedbackStore(db, retention_days=30)  # pruning runs at start-up (and every few hundred answers)
    ids = {row[0] for row in sqlite3.connect(db).execute("SELECT id FROM answers")}
    assert ids == {old_rated, fresh}
    assert [c["id"] for c in again.export_negative()] == [f"feedback-{old_rated}"]


def test_cli_log_reading_refuses_fifos_and_devices_at_once(tmp_path, bundled_env):
    import os
    import time as _time

    from tests.conftest import run_cli

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/zero", str(tmp_path)):
        started = _time.perf_counter()
        proc = run_cli(["ask", "--no-llm", "--log", target, "what happened?"], bundled_env, timeout=60)
        assert proc.returncode != 0 and _time.perf_counter() - started < 30
        err = proc.stderr.decode()
        assert "Traceback" not in err and "log file" in err
    log = tmp_path / "server.log"
    log.write_text("x\n" * 10 + "RuntimeError: NCCL error in: ../nccl.cpp:1\n", encoding="utf-8")
    from assistant.tools.logs import read_tail

    assert read_tail(str(log), limit=20).endswith("nccl.cpp:1\n")
