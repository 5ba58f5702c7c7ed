"""The HTTP API (FastAPI): the same answers as `ask`, for portals, chat front ends and the page.

- POST /v1/ask, POST /v1/ask/stream (server-sent events), POST /v1/chat/completions
  (OpenAI-compatible, model "kb-assistant"), GET /v1/tools, POST /v1/tools/{name},
  POST /v1/feedback, GET /healthz, GET /readyz, GET /metrics, GET / (the chat page).
- The index and embedder are loaded once per process; answering runs in the thread pool
  so embedding never blocks the event loop.
- Optional bearer tokens, body and question size limits, a per-client concurrency limit,
  CORS only when configured, and no stack trace in any response: unexpected exceptions are
  logged here, with their traceback, and the client gets one line.
- The LLM answering an HTTP or Slack request may only use the tools, arguments and hosts a
  remote caller may (see tools.Caller); the CLI keeps every tool.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import threading
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import AfterValidator, BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import __version__
from .answer import Answer, answer_question
from .config import Settings, feedback_path, load_settings
from .errors import AssistantError, BadQuestion, ConfigError
from .feedback import FeedbackStore, FeedbackUnavailable

WEB_DIR = Path(__file__).parent / "web"
MODEL_NAME = "kb-assistant"
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


def _no_surrogates(value: str) -> str:
    """Lone surrogates ("\\ud800" in JSON) are valid JSON but not text: refuse them here
    rather than fail later while encoding the answer (a 500)."""
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        raise ValueError("contains invalid Unicode (a lone surrogate)")
    return value


Text = Annotated[str, AfterValidator(_no_surrogates)]


def _has_surrogates(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_surrogates(k) or _has_surrogates(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogates(v) for v in value)
    return False


# ---------------------------------------------------------------- request / response models

class AskRequest(BaseModel):
    question: Text = Field(..., description="The question, in Chinese or English (≤ 8 kB). A pasted log works.")
    top_k: int | None = Field(None, ge=1, le=10, description="Articles to consider (default 3).")
    lang: Literal["zh", "en"] | None = Field(None, description="Answer language; default: the question's.")
    llm: bool | None = Field(None, description="false: answer from the KB only; default: use the LLM when configured.")
    log: Text | None = Field(None, description="Log text to diagnose alongside the question (≤ the body limit).")


class CitationOut(BaseModel):
    id: str
    title: str
    source: str
    section: str
    lang: str
    score: float
    text: str


class AskResponse(BaseModel):
    id: str = Field(..., description="Answer id, for POST /v1/feedback.")
    question: str
    answer: str
    lang: str
    grounded: bool
    citations: list[CitationOut]
    tool_calls: list[dict]
    backend: str
    timings_ms: dict[str, float]
    notes: list[str]


class FeedbackRequest(BaseModel):
    answer_id: Text = Field(..., max_length=64)
    rating: Literal[1, -1] = Field(..., description="1 for 👍, -1 for 👎")
    comment: Text = Field("", max_length=2000)


def _no_surrogates_in(value: Any) -> Any:
    if _has_surrogates(value):
        raise ValueError("contains invalid Unicode (a lone surrogate)")
    return value


class ChatMessage(BaseModel):
    role: Text
    content: Annotated[str | list[dict] | None, AfterValidator(_no_surrogates_in)] = None


class ChatRequest(BaseModel):
    model: Text = MODEL_NAME
    messages: list[ChatMessage] = Field(..., min_length=1)
    stream: bool = False
    temperature: float | None = None
    max_tokens: int | None = None


class ErrorOut(BaseModel):
    error: str
    hint: str = ""


# ---------------------------------------------------------------- process state

class Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("assistant_http_requests_total", "HTTP requests", ["endpoint", "status"], registry=self.registry)
        self.latency = Histogram("assistant_http_request_seconds", "HTTP request latency", ["endpoint"], registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.answers = Counter("assistant_answers_total", "Answers given", ["grounded", "backend"], registry=self.registry)
        self.grounded_ratio = Gauge("assistant_grounded_ratio", "Share of answers grounded in the KB", registry=self.registry)
        self.llm_errors = Counter("assistant_llm_fallbacks_total", "LLM failures answered from the KB instead", registry=self.registry)
        self.tool_calls = Counter("assistant_tool_calls_total", "Tool calls", ["tool", "ok"], registry=self.registry)
        self._answered = [0, 0]

    def record(self, answer: Answer) -> None:
        kind = "extractive" if answer.backend == "extractive" else "llm"
        self.answers.labels(str(answer.grounded).lower(), kind).inc()
        self._answered[0] += 1
        self._answered[1] += int(answer.grounded)
        self.grounded_ratio.set(self._answered[1] / self._answered[0])
        if any("answered from the KB instead" in n for n in answer.notes):
            self.llm_errors.inc()
        for call in answer.tool_calls:
            self.tool_call(call["name"], call.get("error") is None)

    def tool_call(self, name: str, ok: bool) -> None:
        """Count a call under its tool's name, or "unknown": a model that invents tool names
        must not create a new time series per invention."""
        from .tools import registry

        self.tool_calls.labels(name if name in registry() else "unknown", str(ok).lower()).inc()


def api_tokens(settings: Settings) -> frozenset[str]:
    """The bearer tokens. A setting that is present but holds no token (", ,") would turn
    authentication off without a word, so it stops the server instead."""
    tokens = frozenset(t.strip() for t in settings.api_tokens.split(",") if t.strip())
    if settings.api_tokens.strip() and not tokens:
        raise ConfigError("ASSISTANT_API_TOKENS is set but holds no token, which would leave the API open",
                          "list tokens separated by commas, or unset it to run without authentication")
    return tokens


def _token_ok(given: str, tokens: frozenset[str]) -> bool:
    """Compare in constant time against every token, so timing reveals neither a token nor which one matched."""
    ok = False
    for token in tokens:
        ok |= hmac.compare_digest(given.encode(), token.encode())
    return ok


def client_label(token: str) -> str:
    """A stable name for a token's client (concurrency limit, feedback `user`) that does not
    reveal the token: a salted hash, the same in every worker and after restarts."""
    return "token-" + hashlib.sha256(b"oncall-assistant client\0" + token.encode()).hexdigest()[:12]


class ServerState:
    def __init__(self, settings: Settings) -> None:
        from .tools import remote_caller

        self.settings = settings
        self.tokens = api_tokens(settings)
        self.metrics = Metrics()
        self.feedback = FeedbackStore(feedback_path(settings), timeout=settings.feedback_timeout,
                                      retention_days=settings.feedback_retention_days)
        self.caller = remote_caller(settings.serving_hosts_allow)
        self.kb = None
        self.kb_error: str | None = None
        self._loaded = threading.Event()
        self._active: dict[str, int] = {}
        self.llm_check: tuple[float, bool | None] = (-1e9, None)  # (when, reachable)
        self._lock = threading.Lock()
        # Freshness of the loaded KB (see check_fresh): why it is stale, and sources that vanished.
        self.stale: str | None = None
        self.missing_sources: list[str] = []
        self._checked_at = time.monotonic()
        self._refreshing = False

    def load(self) -> None:
        from .knowledge import open_kb

        try:
            if self.settings.llm_base_url:
                import openai  # noqa: F401  (340 ms to import: pay it at start-up, not in the first answers)
            self.kb = open_kb(self.settings, progress=lambda m: log.info("%s", m))
        except AssistantError as exc:
            self.kb_error = exc.message
            log.error("the knowledge base could not be loaded: %s", exc)
        except Exception:
            self.kb_error = "internal error"
            log.exception("the knowledge base could not be loaded")
        finally:
            self._checked_at = time.monotonic()
            self._loaded.set()

    def check_fresh(self) -> None:
        """At most every kb_check_interval seconds, in the background: re-open the KB when a
        file or runbook changed (a stat per file while nothing did), and note runbook sources
        that vanished. Answers keep coming from the loaded KB meanwhile."""
        with self._lock:
            due = time.monotonic() - self._checked_at >= self.settings.kb_check_interval
            if self.kb is None or self._refreshing or not due:
                return
            self._refreshing = True
            self._checked_at = time.monotonic()
        threading.Thread(target=self._refresh, name="kb-refresh", daemon=True).start()

    def _refresh(self) -> None:
        from ingest.index import staleness

        from .knowledge import index_dir, open_kb, sources

        reason = None
        try:
            srcs = sources(self.settings)
            missing = [s.name for s in srcs[1:] if not s.exists()]
            for name in sorted(set(missing) - set(self.missing_sources)):
                log.warning("runbook source %r no longer exists; its articles leave the index", name)
            self.missing_sources = missing
            reason = staleness(index_dir(self.settings), srcs, self.kb.embedder.name)
            if reason is not None:
                self.stale = reason
                log.warning("the knowledge base changed (%s); re-indexing in the background", reason)
            kb = open_kb(self.settings, progress=lambda m: log.info("%s", m))
            if kb is not self.kb:
                self.kb = kb
                log.warning("reloaded the knowledge base: %d chunks", len(kb.index.chunks))
            self.stale = None
        except AssistantError as exc:
            self.stale = f"{reason or 'the index changed'}; reloading failed: {exc.message}"
            log.error("could not reload the knowledge base: %s", exc)
        except Exception:
            self.stale = f"{reason or 'the index changed'}; reloading failed"
            log.exception("could not reload the knowledge base")
        finally:
            self._refreshing = False

    def wait_loaded(self, timeout: float = 600):
        """Block until the index is loaded (or failed to load); returns the KB or None."""
        self._loaded.wait(timeout)
        return self.kb

    async def get_kb(self):
        if not self._loaded.is_set():
            await run_in_threadpool(self.wait_loaded)
        if self.kb is None:
            raise AssistantError("the knowledge base is not available", "the server log says why")
        self.check_fresh()
        return self.kb

    def enter(self, client: str) -> bool:
        with self._lock:
            if self._active.get(client, 0) >= self.settings.per_client_concurrency:
                return False
            self._active[client] = self._active.get(client, 0) + 1
            return True

    def leave(self, client: str) -> None:
        with self._lock:
            self._active[client] -= 1
            if not self._active[client]:
                del self._active[client]


class HTTPError(Exception):
    def __init__(self, status: int, message: str, hint: str = "", headers: dict | None = None) -> None:
        self.status, self.message, self.hint, self.headers = status, message, hint, headers or {}


# ---------------------------------------------------------------- the app

def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or load_settings()
    state = ServerState(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        threading.Thread(target=state.load, name="kb-load", daemon=True).start()
        yield

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
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST"], allow_headers=["Authorization", "Content-Type"])

    @app.middleware("http")
    async def observe(request: Request, call_next):
        started = time.perf_counter()
        endpoint = _endpoint_label(request)
        try:
            response = await call_next(request)
        except Exception:  # the last line of defence: never a traceback to the client, always one in the log
            log.exception("unhandled error in %s %s", request.method, endpoint)
            response = _internal_error()
        for name, value in SECURITY_HEADERS.items():
            if not (name == "content-security-policy" and endpoint == "/docs"):
                response.headers.setdefault(name, value)
        state.metrics.requests.labels(endpoint, str(response.status_code)).inc()
        state.metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
        return response

    @app.exception_handler(HTTPError)
    async def _http_error(request: Request, exc: HTTPError):
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(BadQuestion)
    async def _bad_question(request: Request, exc: BadQuestion):
        status = 413 if "limit is" in exc.message else 422
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=status)

    @app.exception_handler(FeedbackUnavailable)
    async def _feedback_unavailable(request: Request, exc: FeedbackUnavailable):
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=503, headers={"Retry-After": "30"})

    @app.exception_handler(AssistantError)
    async def _assistant_error(request: Request, exc: AssistantError):
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=503 if "not available" in exc.message else 400)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        problems = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err.get("loc", []) if p != "body")
            problems.append(f"{where or 'body'}: {err.get('msg')}")
        return JSONResponse({"error": "invalid request: " + "; ".join(problems), "hint": "see /docs for the request schema"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _starlette_error(request: Request, exc: StarletteHTTPException):
        """Starlette's own errors (unknown route, wrong method, a body FastAPI could not
        parse: invalid UTF-8, nesting too deep) in the same {error, hint} shape as ours."""
        if exc.status_code == 400:
            return JSONResponse({"error": "the request body is not valid JSON", "hint": "send UTF-8 JSON; see /openapi.json for the schema"},
                                status_code=422)
        hint = "see /openapi.json for the endpoints" if exc.status_code in (404, 405) else ""
        return JSONResponse({"error": str(exc.detail), "hint": hint}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
        return _internal_error()

    def authorize(request: Request) -> str:
        """Bearer token check (when tokens are configured); returns the client's label."""
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else ""
        if state.tokens:
            if not _token_ok(token, state.tokens):
                raise HTTPError(401, "missing or invalid bearer token", "send Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"})
            return client_label(token)
        return "ip-" + (request.client.host if request.client else "unknown")

    async def limited(client: str = Depends(authorize)):
        if not state.enter(client):
            raise HTTPError(429, "too many concurrent requests from this client", f"at most {settings.per_client_concurrency} at once", {"Retry-After": "1"})
        try:
            yield client
        finally:
            state.leave(client)

    errors = {401: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}, 429: {"model": ErrorOut}}

    def _answer(req: AskRequest, kb, channel: str, on_token=None, on_tool=None) -> dict:
        from .tools import acting_for

        with acting_for(state.caller):  # the LLM gets the tools a remote caller may use, no more
            answer = answer_question(req.question, settings, kb=kb, lang=req.lang, top_k=req.top_k, use_llm=req.llm,
                                     log_text=req.log, on_token=on_token, on_tool=on_tool)
        answer_id = state.feedback.record_answer(answer, channel)  # best-effort: never fails the answer
        state.metrics.record(answer)
        return {"id": answer_id, **answer.to_dict()}

    @app.post("/v1/ask", response_model=AskResponse, responses=errors, tags=["answers"])
    async def ask(req: AskRequest, client: str = Depends(limited)):
        """Answer a question from the knowledge base (and the LLM, when configured), with citations."""
        kb = await state.get_kb()
        return await run_in_threadpool(_answer, req, kb, "http")

    @app.post("/v1/ask/stream", responses=errors, tags=["answers"])
    async def ask_stream(req: AskRequest, client: str = Depends(limited)):
        """Like /v1/ask, as server-sent events: `tool` and `token` while the answer is made, then `answer` (the full object)."""
        kb = await state.get_kb()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def push(kind: str, data: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, data))

        def work() -> None:
            try:
                push("answer", _answer(req, kb, "page", on_token=lambda t: push("token", t), on_tool=lambda line: push("tool", line)))
            except AssistantError as exc:
                push("error", {"error": exc.message, "hint": exc.hint})
            except Exception:
                log.exception("unhandled error while streaming an answer")
                push("error", {"error": "internal error", "hint": "see the server log"})
            push("end", None)

        threading.Thread(target=work, daemon=True).start()

        async def events():
            while True:
                kind, data = await queue.get()
                if kind == "end":
                    return
                yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    @app.post("/v1/chat/completions", responses=errors, tags=["openai-compatible"])
    async def chat_completions(req: ChatRequest, client: str = Depends(limited)):
        """OpenAI-compatible chat: the last user message is the question; the answer text ends with its sources and the
        response carries an extra `citations` list. With `stream: true`, chat.completion.chunk events."""
        question = _last_user_text(req.messages)
        kb = await state.get_kb()
        created = int(time.time())
        cid = f"chatcmpl-{uuid.uuid4().hex[:20]}"
        if not req.stream:
            data = await run_in_threadpool(_answer, AskRequest(question=question), kb, "openai")
            text = _with_sources(data)
            return {"id": cid, "object": "chat.completion", "created": created, "model": MODEL_NAME,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                    "citations": data["citations"], "answer_id": data["id"]}
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def chunk(delta: dict, finish: str | None = None, **extra) -> str:
            body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": MODEL_NAME,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

        def work() -> None:
            streamed: list[str] = []

            def on_token(t: str) -> None:
                streamed.append(t)
                loop.call_soon_threadsafe(queue.put_nowait, ("token", t))

            try:
                data = _answer(AskRequest(question=question), kb, "openai", on_token=on_token)
                loop.call_soon_threadsafe(queue.put_nowait, ("done", (data, "".join(streamed))))
            except AssistantError as exc:
                loop.call_soon_threadsafe(queue.put_nowait, ("done", ({"error": exc.message}, "")))
            except Exception:
                log.exception("unhandled error while streaming a chat completion")
                loop.call_soon_threadsafe(queue.put_nowait, ("done", ({"error": "internal error"}, "")))

        threading.Thread(target=work, daemon=True).start()

        async def events():
            yield chunk({"role": "assistant", "content": ""})
            while True:
                kind, data = await queue.get()
                if kind == "token":
                    yield chunk({"content": data})
                    continue
                result, streamed = data
                if "error" in result:
                    yield chunk({"content": f"error: {result['error']}"}, "stop")
                else:
                    full = _with_sources(result)
                    rest = full[len(streamed):] if streamed and full.startswith(streamed) else ("\n\n" + full if streamed else full)
                    for i in range(0, len(rest), 64):
                        yield chunk({"content": rest[i:i + 64]})
                    yield chunk({}, "stop", citations=result["citations"], answer_id=result["id"])
                yield "data: [DONE]\n\n"
                return

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    @app.get("/v1/models", tags=["openai-compatible"])
    async def models(client: str = Depends(authorize)):
        """The one model this server offers, for OpenAI-compatible front ends."""
        return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "oncall-assistant"}]}

    @app.get("/v1/tools", tags=["tools"])
    async def list_tools(client: str = Depends(authorize)):
        """The tools an HTTP client (and the LLM answering it) may use, with the schemas they see."""
        from .tools import available

        return [{"name": t.name, "description": t.description, "parameters": state.caller.parameters(t)}
                for t in available(state.caller).values()]

    @app.post("/v1/tools/{name}", responses={**errors, 404: {"model": ErrorOut}}, tags=["tools"])
    async def run_tool(name: str, arguments: dict[str, Any] | None = None, client: str = Depends(limited)):
        """Run one tool with the arguments in the body (a JSON object). Tools only read and compute; over HTTP
        no argument may name a server file (a log goes in as `text`) and URLs may only point at the allowed hosts."""
        from .tools import available, call_tool

        tools = available(state.caller)
        if name not in tools:
            raise HTTPError(404, f"unknown tool {name[:64]!r}", "GET /v1/tools lists them")
        args = arguments or {}
        if _has_surrogates(args):
            raise HTTPError(422, "invalid request: the arguments contain invalid Unicode (a lone surrogate)")
        refusal = state.caller.refusal(tools[name], args)
        if refusal:
            raise HTTPError(422, refusal, "GET /v1/tools shows what may be sent over HTTP")
        call = await run_in_threadpool(call_tool, name, args, timeout=settings.tool_timeout, caller=state.caller)
        state.metrics.tool_call(name, call.error is None)
        if call.error:
            raise HTTPError(422, call.error)
        return {"name": name, "result": call.result, "ms": round(call.ms, 2)}

    @app.post("/v1/feedback", responses={**errors, 503: {"model": ErrorOut}}, tags=["answers"])
    async def feedback(req: FeedbackRequest, client: str = Depends(limited)):
        """👍 (1) or 👎 (-1), with an optional comment, for an answer id."""
        user = client if client.startswith("token-") else "anonymous"
        await run_in_threadpool(state.feedback.add_feedback, req.answer_id, req.rating, req.comment, user)
        return {"ok": True}

    @app.get("/healthz", tags=["operations"])
    async def healthz():
        """The process is up (and which worker process answered)."""
        import os

        return {"status": "ok", "pid": os.getpid()}

    @app.get("/readyz", tags=["operations"])
    async def readyz():
        """Ready when the index is loaded; reports whether it is current, and whether the LLM is configured
        and reachable. Counts and names only: this is unauthenticated, so no server paths."""
        ready = state.kb is not None
        if ready:
            state.check_fresh()
        llm = {"configured": bool(settings.llm_base_url), "reachable": None}
        if settings.llm_base_url:
            # Load balancers poll this; ask the LLM at most every 10 s.
            checked_at, reachable = state.llm_check
            if time.monotonic() - checked_at > 10:
                reachable = await run_in_threadpool(_llm_reachable, settings)
                state.llm_check = (time.monotonic(), reachable)
            llm["reachable"] = reachable
        body = {"ready": ready, "index": _index_facts(state) if ready else None,
                "error": None if ready or state.kb_error is None else "the knowledge base could not be loaded; the server log says why",
                "llm": llm, "feedback": "ok" if state.feedback.available else "unavailable (answers are not recorded)"}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def metrics():
        """Prometheus metrics: requests, latency, grounded ratio, LLM fallbacks, tool calls."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return PlainTextResponse(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", include_in_schema=False)
    async def page():
        return FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-store"})

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str):
        path = (WEB_DIR / name).resolve()
        if path.parent != WEB_DIR.resolve() or not path.is_file():
            raise HTTPError(404, "not found")
        return FileResponse(path)

    if settings.slack_bot_token and settings.slack_signing_secret:
        from .slack import mount_http

        mount_http(app, settings, state)
    return app


def _endpoint_label(request: Request) -> str:
    path = request.url.path
    if path.startswith("/v1/tools/"):
        return "/v1/tools/{name}"
    if path.startswith("/static/"):
        return "/static"
    return path if path in {"/", "/v1/ask", "/v1/ask/stream", "/v1/chat/completions", "/v1/tools", "/v1/feedback", "/v1/models",
                            "/healthz", "/readyz", "/metrics", "/slack/events", "/docs", "/openapi.json"} else "other"


def _last_user_text(messages: list[ChatMessage]) -> str:
    for msg in reversed(messages):
        if msg.role == "user":
            if isinstance(msg.content, list):
                return " ".join(str(p.get("text", "")) for p in msg.content if isinstance(p, dict))
            return msg.content or ""
    raise BadQuestion("no user message in `messages`")


def _with_sources(data: dict) -> str:
    label = "来源" if data["lang"] == "zh" else "Sources"
    lines = [f"[{i}] {c['title']} ({c['source']})" for i, c in enumerate(data["citations"], 1)]
    return data["answer"] + (f"\n\n{label}:\n" + "\n".join(lines) if lines else "")


def _internal_error() -> JSONResponse:
    return JSONResponse({"error": "internal error", "hint": "see the server log"}, status_code=500)


def _index_facts(state: ServerState) -> dict:
    """What /readyz says about the index: counts, the embedder, the generation, freshness."""
    index = state.kb.index
    manifest = index.manifest
    return {
        "documents": len(manifest.get("documents", {})),
        "articles": len({meta.id for meta in index.docs.values()}),
        "chunks": len(index.chunks),
        "sources": len(manifest.get("sources", [])),
        "embedder": manifest.get("embedder"),
        "generation": index.path.name,
        "built_at": manifest.get("built_at"),
        "stale": state.stale,
        "warnings": [f"runbook source {name!r} no longer exists; its articles were dropped from the index"
                     for name in state.missing_sources],
    }


def _llm_reachable(settings: Settings) -> bool:
    import urllib.request

    req = urllib.request.Request(settings.llm_base_url.rstrip("/") + "/models")
    if settings.llm_api_key:
        req.add_header("Authorization", f"Bearer {settings.llm_api_key}")
    try:
        with urllib.request.urlopen(req, timeout=min(2.0, settings.llm_connect_timeout)) as resp:
            return resp.status == 200
    except Exception:
        return False


class BodyLimit:
    """Reject request bodies over the limit with 413, whether or not Content-Length is sent."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._reject(send)
        received = 0
        started = False

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge()
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send) -> None:
        body = json.dumps({"error": f"request body over {self.limit} bytes", "hint": "send less (a question is ≤ 8 kB)"}).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


def app_factory() -> FastAPI:
    """For `uvicorn --factory assistant.api:app_factory` and multi-worker serving."""
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
