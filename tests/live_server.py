"""Run an ASGI app with uvicorn on 127.0.0.1 in a background thread, for real HTTP tests."""

from __future__ import annotations

import socket
import threading
import time


def wait_ready(url: str, timeout: float = 60) -> dict:
    """GET /readyz until it says 200 (the index is loaded); its body."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = httpx.get(url + "/readyz", timeout=10)
        if r.status_code == 200:
            return r.json()
        time.sleep(0.05)
    raise AssertionError("never ready")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    def __init__(self, app, wait_loaded: bool = True) -> None:
        import uvicorn

        self.app = app
        self.wait_loaded = wait_loaded
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on",
                                                   proxy_headers=False))  # as `assistant serve` runs it
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        state = getattr(self.app.state, "assistant", None)
        if state is not None and self.wait_loaded:  # our API app loads its index in the background: wait for it
            state.wait_loaded(120)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)
