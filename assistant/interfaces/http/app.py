"""The HTTP API (FastAPI): the same answers as `ask`, for portals, chat front ends and the page.

- POST /v1/ask, POST /v1/ask/stream (server-sent events), POST /v1/chat/completions
  (OpenAI-compatible, model "kb-assistant"), GET /v1/tools, POST /v1/tools/{name},
  POST /v1/feedback, GET /healthz, GET /readyz, GET /metrics, GET / (the chat page).
- The port is bound at once and the index loaded in the background: /healthz answers
  immediately, /readyz says {"loading": true, "progress": …} and answer endpoints 503 with
  Retry-After until it is loaded.
- Answers run on one bounded executor behind a fair queue per worker (assistant/interfaces/admission.py):
  a burst waits its turn instead of being refused; 429/503 with Retry-After only when the
  queue is full or the wait would pass its deadline. A stream that loses its client stops.
- The client is its bearer token, or its address; X-Forwarded-For counts only from the
  proxies in `trusted_proxies` (none by default), so a local process cannot pose as others.
- Optional bearer tokens, body and question size limits, CORS only when configured, and no
  stack trace in any response: unexpected exceptions are logged here, with their traceback,
  and the client gets one line.
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

from assistant import __version__
from assistant.answer import Answer, answer_question
from assistant.interfaces.admission import Admission, ClientGone, Shed, request_cost
from assistant.config import Settings, load_settings
from oncall_common.errors import AssistantError, BadQuestion, ConfigError
from assistant.ops.store import FeedbackUnavailable, open_state

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
    coverage: Literal["full", "partial", "none"] = Field("full", description="partial: the symptom is covered, the question's platform, product or subject is not")
    confidence: float | None = Field(None, description="The refusal model's P(the KB answers this question)")


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
        self.queue_depth = Gauge("assistant_queue_depth", "Requests waiting for an answer slot in this worker", registry=self.registry)
        self.running = Gauge("assistant_answers_running", "Answers running in this worker", registry=self.registry)
        self.queue_wait = Histogram("assistant_queue_wait_seconds", "Time a request waited for its answer slot", registry=self.registry,
                                    buckets=(0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.shed = Counter("assistant_shed_total", "Requests refused by admission", ["reason"], registry=self.registry)
        for reason in ("full", "deadline", "disconnected", "loading"):
            self.shed.labels(reason)  # present at 0 from the start, so rates can be taken
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
        from assistant.tools import registry

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
    """A stable name for a token's client (fair queueing, feedback `user`) that does not
    reveal the token: a salted hash, the same in every worker and after restarts."""
    return "token-" + hashlib.sha256(b"oncall-assistant client\0" + token.encode()).hexdigest()[:12]


def address_label(address: str) -> str:
    """What the answer records keep of an address-keyed client: a salted hash, not the address."""
    return "ip-" + hashlib.sha256(b"oncall-assistant address\0" + address.encode()).hexdigest()[:12]


def trusted_networks(setting: str) -> list | None:
    """The trusted_proxies setting as networks; None means every peer ("*")."""
    import ipaddress

    items = [item.strip() for item in setting.split(",") if item.strip()]
    if "*" in items:
        return None
    try:
        return [ipaddress.ip_network(item, strict=False) for item in items]
    except ValueError as exc:
        raise ConfigError(f"ASSISTANT_TRUSTED_PROXIES has an invalid entry: {exc}",
                          "list proxy addresses or networks, e.g. 10.0.0.5,10.1.0.0/16, or * for any") from exc


def client_address(peer: str, forwarded_for: str, trusted: list | None) -> str:
    """The client's address: the peer's, unless the peer is a trusted proxy; then the nearest
    address in X-Forwarded-For that is not a trusted proxy (entries left of it could be
    anything the client wrote)."""
    import ipaddress

    def is_trusted(address: str) -> bool:
        if trusted is None:
            return True
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in net for net in trusted)

    if trusted == [] or not forwarded_for or not is_trusted(peer):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not is_trusted(hop):
            return hop[:64]
    return hops[0][:64] if hops else peer


class ServerState:
    def __init__(self, settings: Settings) -> None:
        from assistant.tools import remote_caller

        from concurrent.futures import ThreadPoolExecutor

        self.settings = settings
        self.tokens = api_tokens(settings)
        self.trusted = trusted_networks(settings.trusted_proxies)
        self.metrics = Metrics()
        self.store = open_state(settings)
        self.feedback = self.store  # the name tests and older code use
        self.caller = remote_caller(settings.serving_hosts_allow)
        self.kb = None
        self.kb_error: str | None = None
        self.progress = "starting"
        self.load_started = time.monotonic()
        self._loaded = threading.Event()
        # One bounded executor for every answer, streamed or not; admission hands out its threads.
        self.executor = ThreadPoolExecutor(max_workers=max(1, settings.answer_threads), thread_name_prefix="answer")
        self.admission = Admission(settings.answer_threads, settings.queue_size, settings.queue_timeout,
                                   observe_wait=self.metrics.queue_wait.observe,
                                   on_shed=lambda reason: self.metrics.shed.labels(reason).inc())
        self.metrics.queue_depth.set_function(lambda: self.admission.depth)
        self.metrics.running.set_function(lambda: self.admission.running)
        self.llm_check: tuple[float, bool | None] = (-1e9, None)  # (when, reachable)
        self._lock = threading.Lock()
        # Freshness of the loaded KB (see check_fresh): why it is stale, and sources that vanished.
        self.stale: str | None = None
        self.missing_sources: list[str] = []
        self._checked_at = time.monotonic()
        self._refreshing = False

    def load(self) -> None:
        from assistant.knowledge import open_kb

        try:
            if self.settings.llm_base_url:
                import openai  # noqa: F401  (340 ms to import: pay it at start-up, not in the first answers)
            self.kb = open_kb(self.settings, progress=self._progress)
            self.progress = "loaded"
        except AssistantError as exc:
            self.kb_error = exc.message
            log.error("the knowledge base could not be loaded: %s", exc)
        except Exception:
            self.kb_error = "internal error"
            log.exception("the knowledge base could not be loaded")
        finally:
            self._checked_at = time.monotonic()
            self._loaded.set()

    def _progress(self, message: str) -> None:
        """Log the indexing progress and keep its last line for /readyz, without paths (it is
        unauthenticated)."""
        import re

        log.info("%s", message)
        self.progress = re.sub(r"(?<![\w.])/[^\s,;)]+", "…", message.strip())[:200]

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

        from assistant.knowledge import index_dir, open_kb, sources

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

    @property
    def loading(self) -> bool:
        return not self._loaded.is_set()

    async def get_kb(self):
        """The loaded KB; while it loads, a 503 that says so and when to come back."""
        if self.loading:
            self.metrics.shed.labels("loading").inc()
            raise HTTPError(503, f"the knowledge base is still loading ({self.progress})",
                            "retry in a few seconds; GET /readyz shows the progress", {"Retry-After": "2"})
        if self.kb is None:
            raise AssistantError("the knowledge base is not available", "the server log says why")
        self.check_fresh()
        return self.kb

    async def admit(self, client: str, cost: int, request: Request | None):
        """Wait for an answer slot (see assistant/interfaces/admission.py); returns the grant that
        `submit` hands back when the work ends."""
        try:
            return await self.admission.acquire(client, cost, request.is_disconnected if request is not None else None)
        except Shed as exc:
            hint = "retry after the time in Retry-After" + ("; a full queue sheds the client with the most waiting" if exc.status == 429 else "")
            raise HTTPError(exc.status, exc.message, hint, {"Retry-After": str(exc.retry_after)}) from None
        except ClientGone:
            raise HTTPError(499, "the client went away while waiting") from None

    def submit(self, grant, fn, *args, **kwargs):
        """Run fn on the answer executor; its slot is released when fn returns, whenever
        that is (a stream's client may have left long before)."""
        loop = asyncio.get_running_loop()
        try:
            future = self.executor.submit(fn, *args, **kwargs)
        except BaseException:
            self.admission.release(grant)
            raise
        future.add_done_callback(lambda _f: loop.call_soon_threadsafe(self.admission.release, grant))
        return future

    async def run(self, client: str, cost: int, request: Request | None, fn, *args, **kwargs):
        """Queue, then run fn on the answer executor and return its result."""
        grant = await self.admit(client, cost, request)
        return await asyncio.wrap_future(self.submit(grant, fn, *args, **kwargs))


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
        """Bearer token check (when tokens are configured); returns the client's key: its
        token's label, or "ip-" and its address (see client_address: proxies are trusted
        only when configured)."""
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else ""
        if state.tokens:
            if not _token_ok(token, state.tokens):
                raise HTTPError(401, "missing or invalid bearer token", "send Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"})
            return client_label(token)
        peer = request.client.host if request.client else "unknown"
        return "ip-" + client_address(peer, request.headers.get("x-forwarded-for", ""), state.trusted)

    def record_label(client: str) -> str:
        return client if client.startswith("token-") else address_label(client[3:])

    errors = {401: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}, 429: {"model": ErrorOut},
              503: {"model": ErrorOut}}

    def _answer(req: AskRequest, kb, channel: str, client: str = "", on_token=None, on_tool=None) -> dict:
        from assistant.tools import acting_for

        with acting_for(state.caller):  # the LLM gets the tools a remote caller may use, no more
            answer = answer_question(req.question, settings, kb=kb, lang=req.lang, top_k=req.top_k, use_llm=req.llm,
                                     log_text=req.log, on_token=on_token, on_tool=on_tool)
        answer_id = state.store.record_answer(answer, channel, record_label(client) if client else "")  # best-effort
        state.metrics.record(answer)
        return {"id": answer_id, **answer.to_dict()}

    def cost_of(req: AskRequest) -> int:
        return request_cost(req.question + (req.log or ""))

    async def stream_answer(request: Request, client: str, cost: int, work, render) -> StreamingResponse:
        """Queue, then stream: `work(push, gone)` runs on the answer executor and pushes
        (kind, data) events; `render(kind, data)` turns each into text for the client. When the
        client disconnects, `gone` is set, the work stops at its next token or tool line
        (ClientGone) and its slot comes free as soon as it has."""
        grant = await state.admit(client, cost, request)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        gone = threading.Event()

        def push(kind: str, data: Any) -> None:
            if gone.is_set():
                raise _StreamClosed()
            loop.call_soon_threadsafe(queue.put_nowait, (kind, data))

        def run() -> None:
            try:
                work(push)
            except _StreamClosed:
                log.info("a streaming client went away; its answer was stopped")
            except Exception:
                log.exception("unhandled error while streaming an answer")
                loop.call_soon_threadsafe(queue.put_nowait, ("error", {"error": "internal error", "hint": "see the server log"}))
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, ("end", None))

        state.submit(grant, run)

        async def events():
            try:
                while True:
                    kind, data = await queue.get()
                    if kind == "end":
                        return
                    for text in render(kind, data):
                        yield text
            finally:
                gone.set()  # the client left (or the stream ended): stop the work

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    @app.post("/v1/ask", response_model=AskResponse, responses=errors, tags=["answers"])
    async def ask(req: AskRequest, request: Request, client: str = Depends(authorize)):
        """Answer a question from the knowledge base (and the LLM, when configured), with citations."""
        kb = await state.get_kb()
        return await state.run(client, cost_of(req), request, _answer, req, kb, "http", client)

    @app.post("/v1/ask/stream", responses=errors, tags=["answers"])
    async def ask_stream(req: AskRequest, request: Request, client: str = Depends(authorize)):
        """Like /v1/ask, as server-sent events: `tool` and `token` while the answer is made, then `answer` (the full object)."""
        kb = await state.get_kb()

        def work(push) -> None:
            try:
                push("answer", _answer(req, kb, "page", client, on_token=lambda t: push("token", t),
                                       on_tool=lambda line: push("tool", line)))
            except AssistantError as exc:
                push("error", {"error": exc.message, "hint": exc.hint})

        def render(kind: str, data: Any):
            yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

        return await stream_answer(request, client, cost_of(req), work, render)

    @app.post("/v1/chat/completions", responses=errors, tags=["openai-compatible"])
    async def chat_completions(req: ChatRequest, request: Request, client: str = Depends(authorize)):
        """OpenAI-compatible chat: the last user message is the question; the answer text ends with its sources and the
        response carries an extra `citations` list. With `stream: true`, chat.completion.chunk events."""
        question = _last_user_text(req.messages)
        kb = await state.get_kb()
        created = int(time.time())
        cid = f"chatcmpl-{uuid.uuid4().hex[:20]}"
        ask_req = AskRequest(question=question)
        if not req.stream:
            data = await state.run(client, cost_of(ask_req), request, _answer, ask_req, kb, "openai", client)
            text = _with_sources(data)
            return {"id": cid, "object": "chat.completion", "created": created, "model": MODEL_NAME,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                    "citations": data["citations"], "answer_id": data["id"]}

        def chunk(delta: dict, finish: str | None = None, **extra) -> str:
            body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": MODEL_NAME,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

        def work(push) -> None:
            streamed: list[str] = []

            def on_token(t: str) -> None:
                streamed.append(t)
                push("token", t)

            push("start", None)
            try:
                data = _answer(ask_req, kb, "openai", client, on_token=on_token)
                push("done", (data, "".join(streamed)))
            except AssistantError as exc:
                push("done", ({"error": exc.message}, ""))

        def render(kind: str, data: Any):
            if kind == "start":
                yield chunk({"role": "assistant", "content": ""})
            elif kind == "token":
                yield chunk({"content": data})
            elif kind == "error":
                yield chunk({"content": f"error: {data['error']}"}, "stop")
                yield "data: [DONE]\n\n"
            else:
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

        return await stream_answer(request, client, cost_of(ask_req), work, render)

    @app.get("/v1/models", tags=["openai-compatible"])
    async def models(client: str = Depends(authorize)):
        """The one model this server offers, for OpenAI-compatible front ends."""
        return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "oncall-assistant"}]}

    @app.get("/v1/tools", tags=["tools"])
    async def list_tools(client: str = Depends(authorize)):
        """The tools an HTTP client (and the LLM answering it) may use, with the schemas they see."""
        from assistant.tools import available

        return [{"name": t.name, "description": t.description, "parameters": state.caller.parameters(t)}
                for t in available(state.caller).values()]

    @app.post("/v1/tools/{name}", responses={**errors, 404: {"model": ErrorOut}}, tags=["tools"])
    async def run_tool(name: str, request: Request, arguments: dict[str, Any] | None = None, client: str = Depends(authorize)):
        """Run one tool with the arguments in the body (a JSON object). Tools only read and compute; over HTTP
        no argument may name a server file (a log goes in as `text`) and URLs may only point at the allowed hosts."""
        from assistant.tools import available, call_tool

        tools = available(state.caller)
        if name not in tools:
            raise HTTPError(404, f"unknown tool {name[:64]!r}", "GET /v1/tools lists them")
        args = arguments or {}
        if _has_surrogates(args):
            raise HTTPError(422, "invalid request: the arguments contain invalid Unicode (a lone surrogate)")
        refusal = state.caller.refusal(tools[name], args)
        if refusal:
            raise HTTPError(422, refusal, "GET /v1/tools shows what may be sent over HTTP")
        call = await state.run(client, 1, request, call_tool, name, args, timeout=settings.tool_timeout, caller=state.caller)
        state.metrics.tool_call(name, call.error is None)
        if call.error:
            raise HTTPError(422, call.error)
        return {"name": name, "result": call.result, "ms": round(call.ms, 2)}

    @app.post("/v1/feedback", responses={**errors, 503: {"model": ErrorOut}}, tags=["answers"])
    async def feedback(req: FeedbackRequest, client: str = Depends(authorize)):
        """👍 (1) or 👎 (-1), with an optional comment, for an answer id."""
        user = client if client.startswith("token-") else "anonymous"
        await run_in_threadpool(state.store.add_feedback, req.answer_id, req.rating, req.comment, user)
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
        if state.loading:
            return JSONResponse({"ready": False, "loading": True, "progress": state.progress,
                                 "loading_s": round(time.monotonic() - state.load_started, 1)},
                                status_code=503, headers={"Retry-After": "2"})
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
        body = {"ready": ready, "loading": False, "index": _index_facts(state) if ready else None,
                "error": None if ready or state.kb_error is None else "the knowledge base could not be loaded; the server log says why",
                "llm": llm, "feedback": "ok" if state.store.available else "unavailable (answers are not recorded)",
                "state": state.store.kind,
                "queue": {"depth": state.admission.depth, "running": state.admission.running,
                          "slots": state.admission.slots, "size": state.admission.queue_size}}
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
        from assistant.interfaces.slack import mount_http

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


class _StreamClosed(BaseException):
    """Raised from a stream's token callback once its client has gone. A BaseException, so
    that the answer path's `except Exception` fallbacks let it through and the work stops."""


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
