"""Load and fault benchmark for `assistant serve`; prints figures, asserts nothing.

    python bench/http_load.py            # ~3 minutes on 2 cores

1. Start-up on an empty cache: seconds until /healthz answers 200 (target ≤ 2 s) and
   until /readyz does.
2. Retrieval-only POST /v1/ask (llm: false) at 1, 8, 50 and 200 concurrent clients, all
   from one address and without tokens (a portal proxying its users), with 1 and with 2
   worker processes: p50/p95, errors (target: 0 at 50 clients), throughput per worker;
   HTTP p50 against in-process answer p50 (target ≤ 1.5×).
3. An LLM that never answers: requests still finish with the KB answer within the
   configured timeout, and other clients keep being served meanwhile.
Traffic goes to 127.0.0.1 only, in bounded loops.
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
    def __init__(self, workers: int = 1, tokens: bool = False, **env: str) -> None:
        self.port = free_port()
        self.env = dict(os.environ, **env)
        if tokens:
            self.env["ASSISTANT_API_TOKENS"] = ",".join(TOKENS)
        self.workers = workers
        self.healthz_s = self.ready_s = float("nan")

    def __enter__(self) -> "Server":
        cmd = [sys.executable, "-c", "from assistant.interfaces.commands import main; main()", "serve", "--port", str(self.port), "--workers", str(self.workers)]
        started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if self.healthz_s != self.healthz_s and request(self.port, "GET", "/healthz", timeout=2)[0] == 200:
                    self.healthz_s = time.perf_counter() - started
                status, _ = request(self.port, "GET", "/readyz", timeout=2)
                if status == 200:
                    self.ready_s = time.perf_counter() - started
                    return self
            except OSError:
                pass
            time.sleep(0.02)
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


def load(port: int, clients: int, per_client: int, body_extra: dict | None = None, tokens: bool = False) -> dict:
    """`clients` threads each sending `per_client` questions one after another, from one
    address; with tokens=False all are the same client as far as the server can tell."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for n in range(per_client):
            q = QUESTIONS[(i + n) % len(QUESTIONS)]
            started = time.perf_counter()
            try:
                status, _ = request(port, "POST", "/v1/ask", {"question": q, "llm": False, **(body_extra or {})},
                                    TOKENS[i % len(TOKENS)] if tokens else None, conn=conn)
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


LOADS = ((1, 60), (8, 20), (50, 6), (200, 3))  # (concurrent clients, questions each)


def main() -> None:
    import tempfile

    out: dict = {"cores": os.cpu_count()}
    out["in_process_p50_ms"] = in_process_p50()
    with tempfile.TemporaryDirectory(prefix="bench-empty-cache-") as empty:
        with Server(ASSISTANT_CACHE_DIR=empty) as server:
            out["start_empty_cache"] = {"healthz_s": server.healthz_s, "readyz_s": server.ready_s}

    for workers in (1, 2):
        with Server(workers=workers) as server:
            pids = set()
            for _ in range(20):
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)  # new connections spread over workers
                pids.add(request(server.port, "GET", "/healthz", conn=conn)[1].get("pid"))
                conn.close()
            runs = {"distinct_pids": len(pids)}
            for clients, per in LOADS:
                load(server.port, min(clients, 4), 2)  # warm connections
                result = load(server.port, clients, per)
                result["rps_per_worker"] = result["rps"] / workers
                runs[f"c{clients}"] = result
            out[f"workers{workers}"] = runs
    out["http_over_in_process"] = out["workers1"]["c1"]["p50_ms"] / out["in_process_p50_ms"]

    with HangingLLM() as llm, Server(tokens=True, ASSISTANT_LLM_BASE_URL=llm.url, ASSISTANT_LLM_TIMEOUT="2",
                                     ASSISTANT_LLM_CONNECT_TIMEOUT="1") as server:
        hung: list[tuple[float, dict]] = []

        def hung_client(i: int) -> None:
            started = time.perf_counter()
            status, data = request(server.port, "POST", "/v1/ask", {"question": QUESTIONS[i % len(QUESTIONS)]}, TOKENS[i])
            hung.append((time.perf_counter() - started, {"status": status, "backend": data.get("backend"), "notes": data.get("notes")}))

        threads = [threading.Thread(target=hung_client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        others = load(server.port, 4, 10, tokens=True)  # other clients, KB-only, while the LLM hangs
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

    print(json.dumps(out, indent=1, ensure_ascii=False))
    start = out["start_empty_cache"]
    print(f"\nempty cache: /healthz 200 after {start['healthz_s']:.2f} s (target ≤ 2 s), /readyz 200 after {start['readyz_s']:.2f} s")
    print(f"in-process answer p50 {out['in_process_p50_ms']:.1f} ms; HTTP p50 at 1 client {out['workers1']['c1']['p50_ms']:.1f} ms "
          f"→ {out['http_over_in_process']:.2f}× (target ≤ 1.5×)")
    for workers in (1, 2):
        runs = out[f"workers{workers}"]
        print(f"{workers} worker(s) ({runs['distinct_pids']} pids answered), all clients from one address:")
        for clients, _ in LOADS:
            c = runs[f"c{clients}"]
            print(f"  {clients:>3} clients: p50 {c['p50_ms']:.0f} ms, p95 {c['p95_ms']:.0f} ms, errors {c['errors']}/{c['requests']}, "
                  f"{c['rps']:.0f} req/s ({c['rps_per_worker']:.0f} per worker)")
    h = out["llm_hang"]
    print(f"LLM hanging: 8 requests all answered from the KB: {h['all_extractive']}, slowest {h['max_request_s']:.2f} s "
          f"(timeout {h['llm_timeout_s']} s); meanwhile 4 other clients p50 {h['others_during_hang']['p50_ms']:.0f} ms, "
          f"errors {h['others_during_hang']['errors']}; /healthz {h['healthz_ms_during_hang']:.0f} ms")


if __name__ == "__main__":
    import argparse

    # No options: parsed so that `--help` says what the run does instead of starting it (newcomer).
    argparse.ArgumentParser(prog="python bench/http_load.py", description=__doc__.split("\n\n")[0],
                            epilog="Runs about 3 minutes on 2 cores; prints its figures as JSON, then a summary.").parse_args()
    main()
