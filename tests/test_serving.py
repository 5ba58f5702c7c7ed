"""Operations (issue 12): a server that is up at once, queues instead of refusing, stops work
for clients that left, bounds what one long question costs, and cannot be fooled about who
the client is. Real uvicorn on 127.0.0.1, the real index and embedder; `assistant serve`
itself as a subprocess where start-up is what is tested."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from assistant.interfaces.http import create_app
from assistant.interfaces.http.auth import client_address, trusted_networks

from .conftest import ROOT, run_cli, write_tiny_kb
from .fake_llm import ScriptedLLM
from .live_server import LiveServer, free_port, wait_ready

OOM = "vLLM CUDA out of memory"


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


# ---------------------------------------------------------------- 2. serve binds first

def test_while_the_index_loads_health_is_up_ready_says_loading_and_answers_get_503(tiny_settings, monkeypatch, tmp_path):
    import assistant.knowledge as knowledge

    release = threading.Event()
    real_open_kb = knowledge.open_kb

    def slow_open_kb(settings, progress):
        progress("indexing the knowledge base (no index yet)…")
        progress(f"  16/428 from {tmp_path}/secret/runbooks")
        release.wait(30)
        return real_open_kb(settings, progress=progress)

    monkeypatch.setattr(knowledge, "open_kb", slow_open_kb)
    settings = replace(tiny_settings, feedback_db=str(tmp_path / "f.db"))
    with LiveServer(create_app(settings), wait_loaded=False) as live:
        health = httpx.get(live.url + "/healthz", timeout=5)
        ready = httpx.get(live.url + "/readyz", timeout=5)
        asks = [httpx.post(live.url + path, json=body, timeout=5) for path, body in
                (("/v1/ask", {"question": "widget requests hang"}), ("/v1/ask/stream", {"question": "widget requests hang"}),
                 ("/v1/chat/completions", {"messages": [{"role": "user", "content": "widget requests hang"}]}))]
        page = httpx.get(live.url + "/static/app.js", timeout=5).text
        release.set()
        loaded = wait_ready(live.url)
        answer = httpx.post(live.url + "/v1/ask", json={"question": "widget requests hang"}, timeout=30)
        metrics = httpx.get(live.url + "/metrics").text
    assert health.status_code == 200
    assert ready.status_code == 503 and ready.json()["loading"] is True and ready.headers["retry-after"]
    assert "16/428" in ready.json()["progress"] and str(tmp_path) not in ready.text
    for r in asks:
        assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1, r.text
        error = r.json()["error"]
        if isinstance(error, dict):  # the OpenAI-compatible path: OpenAI's shape, the hint inside it
            assert r.url.path == "/v1/chat/completions" and error["hint"] and error["type"] == "server_error", r.text
            error = error["message"]
        else:
            assert set(r.json()) == {"error", "hint"}, r.text
        assert "still loading" in error and "Traceback" not in r.text
    assert "loading the knowledge base" in page
    assert loaded["ready"] and loaded["loading"] is False
    assert answer.status_code == 200 and "queue-len" in answer.json()["answer"]
    assert _metric(metrics, 'assistant_shed_total{reason="loading"}') == 3


def _slow_kb(root: Path, extra: int = 24) -> Path:
    """The tiny KB plus enough articles that indexing takes a few seconds."""
    write_tiny_kb(root)
    for i in range(extra):
        body = "\n\n".join(f"## Part {j}\nThe gizmo number {i} misbehaves in way {j}: check the flux capacitor, "
                           f"restart daemon {i}-{j} and read its log for error code E{i:03d}{j}." for j in range(4))
        (root / "en" / f"gizmo-{i}.md").write_text(f"# Gizmo {i}\n\n{body}\n", encoding="utf-8")
    return root


def _serve(args: list[str], env: dict, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-c", "import sys; sys.argv[0]='assistant'; from assistant.interfaces.commands import main; main()",
           "serve", "--port", str(port), *args]
    return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _clean_env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSISTANT_", "SLACK_", "OPENAI_"))}
    env.update(ASSISTANT_CACHE_DIR=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"), **extra)
    return env


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


def test_assistant_serve_on_an_empty_cache_answers_healthz_at_once_and_readyz_when_indexed(tmp_path):
    kb = _slow_kb(tmp_path / "kb")
    port = free_port()
    started = time.monotonic()
    proc = _serve(["--kb", str(kb)], _clean_env(tmp_path), port)
    try:
        health_s = None
        seen_loading = []
        while time.monotonic() - started < 120:
            try:
                if health_s is None and httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    health_s = time.monotonic() - started
                r = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                if r.status_code == 200:
                    break
                seen_loading.append(r.json())
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        ready_s = time.monotonic() - started
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/ask", json={"question": "widget requests hang"}, timeout=30)
    finally:
        err = _stop(proc)
    print(f"\n/healthz after {health_s:.2f} s, /readyz 200 after {ready_s:.2f} s")
    assert health_s is not None and health_s < 10, err  # target 2 s; generous for a loaded CI machine
    assert health_s < ready_s
    assert seen_loading and all(s["loading"] is True and s["progress"] for s in seen_loading)
    assert answer.status_code == 200 and answer.json()["grounded"]
    assert "Traceback" not in err


def test_assistant_serve_with_a_missing_kb_directory_fails_at_once_as_ask_does(tmp_path):
    """It bound the port and stayed up: /healthz 200, everything else 503, the reason only in
    the log, while `ask --kb` with the same directory failed at once with one line."""
    missing = tmp_path / "no-such-kb"
    port = free_port()
    proc = _serve(["--kb", str(missing)], _clean_env(tmp_path), port)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise AssertionError("serve kept running with a KB directory that does not exist")
    err = proc.stderr.read()
    ask = run_cli(["ask", "--kb", str(missing), "widget requests hang"], _clean_env(tmp_path))
    assert proc.returncode == 1 and err == ask.stderr.decode(), err
    assert err.count("\n") == 1 and f"KB directory {missing} does not exist" in err
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


# ---------------------------------------------------------------- 3. queue, then shed

def test_fifty_concurrent_clients_from_one_address_all_get_answers(bundled_settings, bundled_kb, tmp_path):
    settings = replace(bundled_settings, feedback_db=str(tmp_path / "f.db"))
    results: list[int] = []
    with LiveServer(create_app(settings)) as live:
        def client(i: int) -> None:
            with httpx.Client(timeout=60) as c:
                for n in range(2):
                    results.append(c.post(live.url + "/v1/ask", json={"question": f"{OOM} {i} {n}", "llm": False}).status_code)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        metrics = httpx.get(live.url + "/metrics").text
    assert results.count(200) == 100, sorted(set(results))
    assert _metric(metrics, "assistant_queue_wait_seconds_count") >= 100
    assert _metric(metrics, 'assistant_shed_total{reason="full"}') == 0
    assert _metric(metrics, "assistant_queue_depth") == 0


def test_streams_dropped_after_their_headers_stop_their_work_and_free_their_slots(bundled_settings, bundled_kb, tmp_path):
    """The attack from the issue: 30 streams, each dropped after the headers, against an LLM
    that streams slowly. Before: 30 unpooled threads ran to the end and the next ask waited
    38-73 s. Now each stops at its next token and the slots come free."""
    long_answer = "Lower --gpu-memory-utilization [1]. " * 60  # ~300 chunks, 0.1 s apart: 30 s if never stopped
    with ScriptedLLM([{"content": long_answer, "chunk_delay": 0.1}]) as llm:
        settings = replace(bundled_settings, llm_base_url=llm.url, llm_model="m", answer_threads=4,
                           feedback_db=str(tmp_path / "f.db"))
        with LiveServer(create_app(settings)) as live:
            state = live.app.state.assistant
            statuses: list[int] = []

            def abuse() -> None:
                with socket.create_connection(("127.0.0.1", live.port), timeout=60) as s:
                    body = json.dumps({"question": OOM}).encode()
                    s.sendall(b"POST /v1/ask/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                    head = s.recv(200)
                    statuses.append(int(head.split(b" ", 2)[1]))
                # closed right after the headers

            started = time.monotonic()
            threads = [threading.Thread(target=abuse) for _ in range(30)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            dropped_s = time.monotonic() - started
            deadline = time.monotonic() + 15
            while (state.admission.running or state.admission.depth) and time.monotonic() < deadline:
                time.sleep(0.05)
            freed_s = time.monotonic() - started
            asked = time.monotonic()
            normal = httpx.post(live.url + "/v1/ask", json={"question": "NCCL error", "llm": False}, timeout=60)
            normal_s = time.monotonic() - asked
    print(f"\n30 dropped streams: all headers in {dropped_s:.1f} s, slots free after {freed_s:.1f} s, next ask {normal_s:.2f} s")
    assert statuses == [200] * 30
    assert state.admission.running == 0 and freed_s < 30  # never-stopped streams would need 30 × 30 s / 4 slots
    assert normal.status_code == 200 and normal_s < 3.0
    assert len(llm.requests) <= 30  # every stream reached the LLM at most once, no retries


def test_a_long_question_costs_one_window_and_does_not_make_others_wait_behind_several(bundled_settings, bundled_kb, tmp_path):
    """8 kB questions: the embedder reads only its 512-token window, and long questions run
    one at a time, so a short question from another client waits behind one at most."""
    long_q = ("vLLM CUDA out of memory while loading the model, " * 200)[:8000]
    settings = replace(bundled_settings, api_tokens="heavy-user,other-user", feedback_db=str(tmp_path / "f.db"))
    heavy_auth, other_auth = ({"Authorization": f"Bearer {t}"} for t in ("heavy-user", "other-user"))
    with LiveServer(create_app(settings)) as live:
        started = time.monotonic()
        one = httpx.post(live.url + "/v1/ask", json={"question": long_q, "llm": False}, headers=heavy_auth, timeout=60)
        one_s = time.monotonic() - started
        results: dict = {}

        def heavy(i: int) -> None:
            results[i] = httpx.post(live.url + "/v1/ask", json={"question": long_q, "llm": False}, headers=heavy_auth, timeout=120)

        threads = [threading.Thread(target=heavy, args=(i,)) for i in range(4)]
        burst = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(0.2)
        asked = time.monotonic()
        short = httpx.post(live.url + "/v1/ask", json={"question": "NCCL error", "llm": False}, headers=other_auth, timeout=60)
        short_s = time.monotonic() - asked
        for t in threads:
            t.join()
        burst_s = time.monotonic() - burst
    print(f"\none 8 kB question {one_s:.2f} s; four at once {burst_s:.2f} s; a short one meanwhile {short_s:.2f} s")
    assert one.status_code == 200 and one.json()["grounded"] and one_s < 3.0  # was 3.75 s of embedding alone
    assert all(r.status_code == 200 for r in results.values())
    assert short.status_code == 200 and short_s < 2 * one_s + 0.5


def test_x_forwarded_for_counts_only_from_trusted_proxies(bundled_settings, bundled_kb, tmp_path):
    assert client_address("127.0.0.1", "10.0.0.1", trusted_networks("")) == "127.0.0.1"
    assert client_address("127.0.0.1", "10.0.0.1", trusted_networks("127.0.0.1")) == "10.0.0.1"
    assert client_address("127.0.0.1", "6.6.6.6, 10.0.0.1", trusted_networks("127.0.0.0/8")) == "10.0.0.1"  # the left is the client's word
    assert client_address("127.0.0.1", "6.6.6.6, 10.0.0.1", trusted_networks("127.0.0.1,10.0.0.0/8")) == "6.6.6.6"
    assert client_address("192.0.2.7", "10.0.0.1", trusted_networks("127.0.0.1")) == "192.0.2.7"

    def clients_recorded(trusted: str) -> set[str]:
        db = tmp_path / f"f-{len(trusted)}.db"
        settings = replace(bundled_settings, trusted_proxies=trusted, feedback_db=str(db))
        with LiveServer(create_app(settings)) as live:
            for spoofed in ("10.0.0.1", "10.0.0.2"):
                r = httpx.post(live.url + "/v1/ask", json={"question": OOM, "llm": False}, headers={"X-Forwarded-For": spoofed}, timeout=30)
                assert r.status_code == 200
            store = live.app.state.assistant.store
            return {row[0] for row in store._run("SELECT client FROM answers", fetch="all")}

    untrusted = clients_recorded("")
    trusted = clients_recorded("127.0.0.1")
    assert len(untrusted) == 1 and len(trusted) == 2  # by default both requests are the same client: 127.0.0.1
    assert all(c.startswith("ip-") and "10.0.0" not in c and "127.0" not in c for c in untrusted | trusted)


def test_keep_alive_responses_are_not_held_back_by_nagle_with_several_workers(tmp_path):
    """uvicorn's multi-worker socket left Nagle's algorithm on: every keep-alive response
    waited ~40 ms for a delayed ACK (a 2-worker server answered one client 3.5x slower)."""
    import http.client

    kb = write_tiny_kb(tmp_path / "kb")
    port = free_port()
    proc = _serve(["--kb", str(kb), "--workers", "2"], _clean_env(tmp_path), port)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "serve did not start"
                time.sleep(0.1)
        times = []
        for _ in range(21):
            started = time.perf_counter()
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            times.append(time.perf_counter() - started)
        conn.close()
    finally:
        _stop(proc)
    assert sorted(times)[10] < 0.02, f"median keep-alive /healthz {sorted(times)[10] * 1000:.0f} ms"


def test_assistant_serve_on_a_taken_port_says_so_in_one_line(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _serve([], _clean_env(tmp_path), port)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"error: cannot serve on 127.0.0.1:{port}: Address already in use "
                     "(stop whatever is listening there, or pass another --port)"]


def test_assistant_serve_with_a_port_out_of_range_is_a_usage_error_not_a_traceback(tmp_path):
    proc = _serve([], _clean_env(tmp_path), 99999)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in err and "99999 is not in the range 1<=x<=65535" in err
