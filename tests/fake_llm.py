"""A scripted OpenAI-compatible chat server on 127.0.0.1 for testing the LLM path end to
end over real HTTP with the real `openai` client.

Each POST /v1/chat/completions takes the next step of the script:
  {"content": "text"}                                  a plain answer
  {"tool_calls": [{"name": ..., "arguments": "..."}]}  a tool call (arguments: raw string)
  {"status": 500}                                      an HTTP error
  {"hang": 5.0}                                        no answer for that many seconds
  {"content": "text", "chunk_delay": 0.3}              a slow stream: that long before every chunk
  {"stall": 5.0}                                       a stream's headers, then silence that long
  {"raw": "not json"}                                  a malformed body
  {"content": "text", "finish_reason": "length"}       a stream that ends with that reason (None: with none)
A step can also be a function of the request body returning one of these. When the
script runs out, the last step repeats. Requests are recorded for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedLLM:
    def models_response(self) -> bytes:
        if self.models_body is not None:
            return self.models_body
        return json.dumps({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "test"}]}).encode()

    def __init__(self, script: list, model: str = "scripted-model", models_body: bytes | None = None) -> None:
        self.script = list(script)
        self.model = model
        self.models_body = models_body  # what /models answers instead of the model list (garbage, say)
        self.requests: list[dict] = []
        self.models_requests = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    owner.models_requests += 1
                    self._send(200, owner.models_response())
                else:
                    self._send(404, b"{}")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    step = owner.script.pop(0) if len(owner.script) > 1 else owner.script[0]
                if callable(step):
                    step = step(body)
                if "hang" in step:
                    time.sleep(step["hang"])
                    return
                if "status" in step:
                    self._send(step["status"], json.dumps({"error": {"message": "scripted failure"}}).encode())
                    return
                if "raw" in step:
                    self._send(200, step["raw"].encode())
                    return
                if body.get("stream"):
                    self._stream(step)
                else:
                    self._send(200, json.dumps(owner.completion(step)).encode())

            def _stream(self, step: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                if "stall" in step:
                    time.sleep(step["stall"])
                    return
                self.close_connection = True
                try:
                    for chunk in owner.chunks(step):
                        time.sleep(step.get("chunk_delay", 0))
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a deadline under test): nothing to report

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "ScriptedLLM":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def chat_requests(self) -> list[dict]:
        return self.requests

    def _tool_calls(self, step: dict) -> list[dict]:
        return [{"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": c.get("arguments", "{}")}}
                for i, c in enumerate(step.get("tool_calls", []))]

    def completion(self, step: dict) -> dict:
        calls = self._tool_calls(step)
        message = {"role": "assistant", "content": step.get("content", "" if calls else None)}
        if calls:
            message["tool_calls"] = calls
        return {"id": "cmpl-1", "object": "chat.completion", "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    def chunks(self, step: dict):
        base = {"id": "cmpl-1", "object": "chat.completion.chunk", "created": int(time.time()), "model": self.model}
        text = step.get("content") or ""
        for i in range(0, len(text), 7):
            yield {**base, "choices": [{"index": 0, "delta": {"content": text[i:i + 7]}, "finish_reason": None}]}
        for i, call in enumerate(self._tool_calls(step)):
            args = call["function"]["arguments"]
            yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                                                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}, "finish_reason": None}]}
            for j in range(0, len(args), 5):
                yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": args[j:j + 5]}}]}, "finish_reason": None}]}
        reason = step.get("finish_reason", "tool_calls" if step.get("tool_calls") else "stop")
        yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}
