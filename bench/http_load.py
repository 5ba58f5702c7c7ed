"""Load and fault benchmark for `assistant serve`; prints figures, asserts nothing.

    python bench/http_load.py            # ~1 minute on 2 cores

1. Retrieval-only POST /v1/ask (llm: false) at 1, 8 and 50 concurrent clients on
   127.0.0.1: p50/p95 and errors; HTTP p50 against in-process answer p50 (target ≤ 1.5×).
2. An LLM that never answers: requests still finish with the KB answer within the
   configured timeout, and other clients keep being served meanwhile.
3. Two workers (--workers 2) serving from the same on-disk index.
Every client has its own bearer token, so the per-client concurrency limit applies as it
would for separate users. Traffic goes to 127.0.0.1 only, in bounded loops.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUESTIONS = ["为什么推理卡住", "requests hang after I enabled logprobs", "vLLM CUDA out of memory", "多卡启动报 NCCL error",
             "how many concurrent requests can FastDeploy handle", "加载模型卡住不动", "Torch not compiled with CUDA enabled",
             "need_block_len: 1， free_list_len: 0"]
TOKENS = [f"bench-{i}" for i in range(64)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


class Server:
    def __init__(self, workers: int = 1, **env: str) -> None:
        self.port = free_port()
        self.env = dict(os.environ, ASSISTANT_API_TOKENS=",".join(TOKENS), **env)
        self.workers = workers

    def __enter__(self) -> "Server":
        cmd = [sys.executable, "-c", "from assistant.commands import main; main()", "serve", "--port", str(self.port), "--workers", str(self.workers)]
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                status, _ = request(self.port, "GET", "/readyz")
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not become ready: " + (self.proc.stderr.read() if self.proc.poll() is not None else ""))

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def request(port: int, method: str, path: str, body: dict | None = None, token: str | None = None, conn=None, timeout: float = 60) -> tuple[int, dict]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    if own:
        conn.close()
    try:
        return resp.status, json.loads(data or b"{}")
    except ValueError:
        return resp.status, {}


def load(port: int, clients: int, per_client: int, body_extra: dict | None = None) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for n in range(per_client):
            q = QUESTIONS[(i + n) % len(QUESTIONS)]
            started = time.perf_counter()
            try:
                status, _ = request(port, "POST", "/v1/ask", {"question": q, "llm": False, **(body_extra or {})}, TOKENS[i], conn=conn)
                ok = status == 200
            except OSError as exc:
                ok, status = False, str(exc)
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                latencies.append(elapsed)
                if not ok:
                    errors.append(str(status))
        conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {"clients": clients, "requests": len(latencies), "errors": len(errors), "p50_ms": pct(latencies, 0.5),
            "p95_ms": pct(latencies, 0.95), "rps": len(latencies) / wall}


class HangingLLM:
    """/v1/models answers; chat completions never do."""

    def __enter__(self):
        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                body = b'{"data": [{"id": "hung"}]}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                time.sleep(60)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()


def in_process_p50(n: int = 40) -> float:
    from assistant.answer import answer_question
    from assistant.config import load_settings
    from assistant.knowledge import open_kb

    settings = load_settings()
    kb = open_kb(settings)
    for q in QUESTIONS:
        answer_question(q, settings, kb=kb)
    times = []
    for i in range(n):
        started = time.perf_counter()
        answer_question(QUESTIONS[i % len(QUESTIONS)], settings, kb=kb)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    out: dict = {"cores": os.cpu_count()}
    out["in_process_p50_ms"] = in_process_p50()
    with Server() as server:
        for clients, per in ((1, 60), (8, 20), (50, 6)):
            load(server.port, min(clients, 4), 2)  # warm connections
            out[f"c{clients}"] = load(server.port, clients, per)
    out["http_over_in_process"] = out["c1"]["p50_ms"] / out["in_process_p50_ms"]

    with HangingLLM() as llm, Server(ASSISTANT_LLM_BASE_URL=llm.url, ASSISTANT_LLM_TIMEOUT="2", ASSISTANT_LLM_CONNECT_TIMEOUT="1") as server:
        hung: list[tuple[float, dict]] = []

        def hung_client(i: int) -> None:
            started = time.perf_counter()
            status, data = request(server.port, "POST", "/v1/ask", {"question": QUESTIONS[i % len(QUESTIONS)]}, TOKENS[i])
            hung.append((time.perf_counter() - started, {"status": status, "backend": data.get("backend"), "notes": data.get("notes")}))

        threads = [threading.Thread(target=hung_client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        others = load(server.port, 4, 10)  # other clients, KB-only, while the LLM hangs
        health_started = time.perf_counter()
        request(server.port, "GET", "/healthz")
        health_ms = (time.perf_counter() - health_started) * 1000
        for t in threads:
            t.join()
        out["llm_hang"] = {
            "llm_timeout_s": 2,
            "max_request_s": max(t for t, _ in hung),
            "all_extractive": all(d["backend"] == "extractive" and d["status"] == 200 for _, d in hung),
            "note": hung[0][1]["notes"][0] if hung and hung[0][1]["notes"] else None,
            "others_during_hang": others,
            "healthz_ms_during_hang": health_ms,
        }

    with Server(workers=2) as server:
        pids = set()
        for _ in range(40):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)  # new connections spread over workers
            pids.add(request(server.port, "GET", "/healthz", conn=conn)[1].get("pid"))
            conn.close()
        out["two_workers"] = {"distinct_pids": len(pids), **load(server.port, 50, 6)}

    print(json.dumps(out, indent=1, ensure_ascii=False))
    c1, c8, c50 = out["c1"], out["c8"], out["c50"]
    print(f"\nin-process answer p50 {out['in_process_p50_ms']:.1f} ms; HTTP p50 at 1 client {c1['p50_ms']:.1f} ms "
          f"→ {out['http_over_in_process']:.2f}× (target ≤ 1.5×)")
    for c in (c1, c8, c50):
        print(f"{c['clients']:>3} clients: p50 {c['p50_ms']:.1f} ms, p95 {c['p95_ms']:.1f} ms, {c['rps']:.0f} req/s, errors {c['errors']}/{c['requests']}")
    h = out["llm_hang"]
    print(f"LLM hanging: 8 requests all answered from the KB: {h['all_extractive']}, slowest {h['max_request_s']:.2f} s "
          f"(timeout {h['llm_timeout_s']} s); meanwhile 4 other clients p50 {h['others_during_hang']['p50_ms']:.0f} ms, "
          f"errors {h['others_during_hang']['errors']}; /healthz {h['healthz_ms_during_hang']:.0f} ms")
    w = out["two_workers"]
    print(f"two workers: {w['distinct_pids']} distinct worker pids answered; 50 clients p50 {w['p50_ms']:.1f} ms, "
          f"p95 {w['p95_ms']:.1f} ms, errors {w['errors']}/{w['requests']}")


if __name__ == "__main__":
    main()
