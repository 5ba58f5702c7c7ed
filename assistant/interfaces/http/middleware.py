"""Middleware: the body-size limit (before any parsing), security headers on every
response, and per-endpoint request metrics, with a last line of defence that logs an
escaped exception and sends the client one line instead of a traceback."""

from __future__ import annotations

import json
import logging
import time

from fastapi import FastAPI, Request

from .problems import error_body, internal_error

log = logging.getLogger(__name__)

# On every response. The page keeps its token in localStorage, so it loads nothing from
# elsewhere and cannot be framed; /docs (Swagger from a CDN) is off when tokens are set.
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
}


def endpoint_label(request: Request) -> str:
    path = request.url.path
    if path.startswith("/v1/tools/"):
        return "/v1/tools/{name}"
    if path.startswith("/static/"):
        return "/static"
    return path if path in {"/", "/v1/ask", "/v1/ask/stream", "/v1/chat/completions", "/v1/tools", "/v1/feedback", "/v1/models",
                            "/healthz", "/readyz", "/metrics", "/slack/events", "/docs", "/openapi.json"} else "other"


def install(app: FastAPI, state) -> None:
    """Add the middleware, innermost first: the body limit, CORS (only when origins are
    configured), then the observer, which so sees every response, a 413 included."""
    settings = state.settings
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST"], allow_headers=["Authorization", "Content-Type"])

    @app.middleware("http")
    async def observe(request: Request, call_next):
        started = time.perf_counter()
        endpoint = endpoint_label(request)
        try:
            response = await call_next(request)
        except Exception:  # the last line of defence: never a traceback to the client, always one in the log
            log.exception("unhandled error in %s %s", request.method, endpoint)
            response = internal_error(request.url.path)
        for name, value in SECURITY_HEADERS.items():
            if not (name == "content-security-policy" and endpoint == "/docs"):
                response.headers.setdefault(name, value)
        state.metrics.requests.labels(endpoint, str(response.status_code)).inc()
        state.metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
        return response


class BodyLimit:
    """Reject request bodies over the limit with 413, whether or not Content-Length is sent."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._reject(send, scope.get("path", ""))
        received = 0
        started = exceeded = False

        async def limited_receive():
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    exceeded = True
                    raise _TooLarge()
            return message

        async def tracking_send(message):
            nonlocal started
            if exceeded:
                # The body parser caught the overflow and answered "not valid JSON" (a chunked
                # body, with no Content-Length to check first): the answer is 413 all the same.
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await self._reject(send, scope.get("path", ""))
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send, scope.get("path", ""))

    async def _reject(self, send, path: str) -> None:
        body = json.dumps(error_body(f"request body over {self.limit} bytes", "send less (a question is ≤ 8 kB)", 413, path)).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass
