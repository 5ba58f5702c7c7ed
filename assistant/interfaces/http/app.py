"""The FastAPI application: one router per area, assembled here.

- POST /v1/ask, POST /v1/ask/stream (server-sent events) — routers/ask.py
- POST /v1/chat/completions, GET /v1/models (OpenAI-compatible) — routers/openai.py
- GET /v1/tools, POST /v1/tools/{name} — routers/tools.py
- POST /v1/feedback — routers/feedback.py
- GET /healthz, /readyz, /metrics — routers/health.py
- GET / (the chat page) — routers/page.py; chat adapters (Slack) mount themselves.

The port is bound at once and the index loaded in the background (server.py): /healthz
answers immediately, /readyz says {"loading": true, "progress": …} and answer endpoints 503
with Retry-After until it is loaded. Answers run on one bounded executor behind a fair
queue per worker (assistant/interfaces/admission.py). Auth and limits are dependencies
(dependencies.py), errors carry their status (problems.py), and the LLM answering an HTTP
or Slack request may only use what a remote caller may (see assistant.tools.Caller).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from contextlib import asynccontextmanager

from fastapi import FastAPI

from assistant import __version__
from assistant.config import Settings, load_settings

from . import middleware, problems
from .routers import ask, feedback, health, openai, page, tools
from .server import ServerState

log = logging.getLogger(__name__)
ROUTERS = (ask.router, openai.router, tools.router, feedback.router, health.router, page.router)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or load_settings()
    state = ServerState(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        state.loop = asyncio.get_running_loop()
        threading.Thread(target=state.load, name="kb-load", daemon=True).start()
        yield
        state.executor.shutdown(wait=False, cancel_futures=True)
        state.store.close()

    app = FastAPI(
        title="On-call assistant for LLM serving",
        version=__version__,
        description="Grounded, cited answers about vLLM and FastDeploy incidents, in Chinese or English.",
        lifespan=lifespan,
        # Swagger UI comes from a CDN: never on the origin where the page keeps a token.
        docs_url=None if state.tokens else "/docs",
        redoc_url=None,
    )
    app.state.assistant = state
    middleware.install(app, state)
    problems.install(app)
    for router in ROUTERS:
        app.include_router(router)
    from assistant.interfaces.chat import mount_enabled

    mount_enabled(app, settings, state)  # chat adapters (Slack) that are configured mount their routes
    return app


def check_port(host: str, port: int) -> None:
    """Fail in one line, before any worker starts, when the address is taken: uvicorn would
    log its own error and exit with status 3."""
    import socket

    from oncall_common.errors import ConfigError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot serve on {host}: {exc.strerror}", "pass --host with an address of this machine") from exc
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"cannot serve on {host}:{port}: {exc.strerror}",
                              "stop whatever is listening there, or pass another --port") from exc


def run_server(host: str, port: int, workers: int) -> None:
    """Serve app_factory with uvicorn (what `assistant serve` runs). Proxy headers are the
    app's business (trusted_proxies), so uvicorn's own handling, which trusts 127.0.0.1, is
    off. With several workers uvicorn binds a socket whose protocol number is 0, so asyncio
    leaves Nagle's algorithm on for every connection and each keep-alive response waits for
    a delayed ACK (44 ms instead of 0.2 ms for /healthz): the socket is handed over as TCP."""
    import socket

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config("assistant.interfaces.http.app:app_factory", factory=True, host=host, port=port, workers=workers,
                            log_level="warning", proxy_headers=False)
    if workers <= 1:
        uvicorn.Server(config).run()
        return
    bound = config.bind_socket()
    sock = socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, fileno=bound.detach())
    sock.set_inheritable(True)
    try:
        Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass


def app_factory() -> FastAPI:
    """For `uvicorn --factory assistant.interfaces.http.app:app_factory` and multi-worker serving."""
    configure_logging()
    return create_app()


def configure_logging() -> None:
    """Server logs on stderr with time and level (tracebacks of unexpected errors included),
    once per process: every uvicorn worker calls app_factory."""
    logger = logging.getLogger("assistant")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
