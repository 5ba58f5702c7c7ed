"""GET /healthz, /readyz and /metrics, for load balancers and Prometheus.

These are unauthenticated, so they give counts and names, never server paths.
"""

from __future__ import annotations

import os
import time

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse

from assistant.llm import llm_reachable

from ..dependencies import State
from ..server import ServerState

router = APIRouter(tags=["operations"])
LLM_CHECK_INTERVAL_S = 10  # load balancers poll /readyz; the LLM is asked at most this often


@router.get("/healthz")
async def healthz():
    """The process is up (and which worker process answered)."""
    return {"status": "ok", "pid": os.getpid()}


@router.get("/readyz")
async def readyz(state: State, request: Request):
    """Ready when the index is loaded; reports whether it is current, and whether the LLM is configured
    and reachable. Counts and names only: this is unauthenticated, so no server paths."""
    if state.loading:
        return JSONResponse({"ready": False, "loading": True, "progress": state.progress,
                             "loading_s": round(time.monotonic() - state.load_started, 1)},
                            status_code=503, headers={"Retry-After": "2"})
    ready = state.kb is not None
    if ready:
        state.check_fresh()
    body = {"ready": ready, "loading": False, "index": index_facts(state) if ready else None,
            "error": None if ready or state.kb_error is None else "the knowledge base could not be loaded; the server log says why",
            "llm": await _llm_status(state), "feedback": "ok" if state.store.available else "unavailable (answers are not recorded)",
            "state": state.store.kind,
            "queue": {"depth": state.admission.depth, "running": state.admission.running,
                      "slots": state.admission.slots, "size": state.admission.queue_size}}
    slack = getattr(request.app.state, "slack_status", None)
    if slack is not None:  # mounted: whether Slack accepted the bot token ("refused (invalid_auth)")
        body["slack"] = dict(slack)
    return JSONResponse(body, status_code=200 if ready else 503)


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(state: State):
    """Prometheus metrics: requests, latency, grounded ratio, LLM fallbacks, tool calls."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return PlainTextResponse(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)


async def _llm_status(state: ServerState) -> dict:
    settings = state.settings
    llm = {"configured": bool(settings.llm_base_url), "reachable": None}
    if settings.llm_base_url:
        checked_at, reachable = state.llm_check
        if time.monotonic() - checked_at > LLM_CHECK_INTERVAL_S:
            reachable = await run_in_threadpool(llm_reachable, settings)
            state.llm_check = (time.monotonic(), reachable)
        llm["reachable"] = reachable
    return llm


def index_facts(state: ServerState) -> dict:
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
