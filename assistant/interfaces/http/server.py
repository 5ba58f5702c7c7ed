"""What one server process holds: the loaded KB (loaded in the background, refreshed when
its files change), the admission queue and answer executor, the answer store, metrics.

Routers reach it through `dependencies.get_state`; the Slack mount gets it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Iterator

from fastapi import Request

from assistant.answer import Answer
from assistant.config import Settings
from assistant.interfaces.admission import Admission, ClientGone, Shed
from assistant.ops.store import open_state
from oncall_common.errors import AssistantError, Unavailable

from .auth import api_tokens, record_label, trusted_networks
from .problems import HTTPProblem

log = logging.getLogger(__name__)


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
        if answer.fallback_reason == "llm_failed":
            self.llm_errors.inc()
        for call in answer.tool_calls:
            self.tool_call(call["name"], call.get("error") is None)

    def tool_call(self, name: str, ok: bool) -> None:
        """Count a call under its tool's name, or "unknown": a model that invents tool names
        must not create a new time series per invention."""
        from assistant.tools import registry

        self.tool_calls.labels(name if name in registry() else "unknown", str(ok).lower()).inc()


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
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's event loop, set at start-up

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
            raise HTTPProblem(503, f"the knowledge base is still loading ({self.progress})",
                              "retry in a few seconds; GET /readyz shows the progress", {"Retry-After": "2"})
        if self.kb is None:
            raise Unavailable("the knowledge base is not available", "the server log says why")
        self.check_fresh()
        return self.kb

    async def admit(self, client: str, cost: int, request: Request | None):
        """Wait for an answer slot (see assistant/interfaces/admission.py); returns the grant that
        `submit` hands back when the work ends."""
        try:
            return await self.admission.acquire(client, cost, request.is_disconnected if request is not None else None)
        except Shed as exc:
            hint = "retry after the time in Retry-After" + ("; a full queue sheds the client with the most waiting" if exc.status == 429 else "")
            raise HTTPProblem(exc.status, exc.message, hint, {"Retry-After": str(exc.retry_after)}) from None
        except ClientGone:
            raise HTTPProblem(499, "the client went away while waiting") from None

    @contextlib.contextmanager
    def slot(self, client: str, cost: int) -> Iterator[None]:
        """Hold an answer slot from a thread outside the event loop (a chat adapter's
        handler), so chat answers wait in the same fair queue as HTTP requests and count
        against the same slots. A full queue raises HTTPProblem, whose message the adapter
        shows the asker."""
        loop = self.loop
        if loop is None or not loop.is_running():
            yield  # no server loop (a test, or before start-up): nothing to queue behind
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise RuntimeError("ServerState.slot blocks: call it from a worker thread, or await admit() on the loop")
        waiting = asyncio.run_coroutine_threadsafe(self.admit(client, cost, None), loop)
        try:
            grant = waiting.result(timeout=self.settings.queue_timeout + 5)  # admission sheds at queue_timeout
        except TimeoutError:
            waiting.cancel()
            raise
        try:
            yield
        finally:
            try:
                loop.call_soon_threadsafe(self.admission.release, grant)
            except RuntimeError:  # the loop closed while the answer was made: nothing left to release
                pass

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

    def answer(self, req, kb, channel: str, client: str = "", on_token=None, on_tool=None) -> dict:
        """Answer an AskRequest (on an executor thread), record it and count it; the dict is
        the response body, with the answer id for feedback."""
        from assistant.answer import answer_question
        from assistant.tools import acting_for

        with acting_for(self.caller):  # the LLM gets the tools a remote caller may use, no more
            answer = answer_question(req.question, self.settings, kb=kb, lang=req.lang, top_k=req.top_k, use_llm=req.llm,
                                     log_text=req.log, on_token=on_token, on_tool=on_tool)
        answer_id = self.store.record_answer(answer, channel, record_label(client) if client else "")  # best-effort
        self.metrics.record(answer)
        return {"id": answer_id, **answer.to_dict()}
