"""POST /v1/feedback: 👍 or 👎 on an answer, kept in the answer store."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from ..dependencies import Client, State
from ..schemas import ERRORS, ErrorOut, FeedbackRequest

router = APIRouter(tags=["answers"])


@router.post("/v1/feedback", responses={**ERRORS, 404: {"model": ErrorOut, "description": "no answer with that id"}, 503: {"model": ErrorOut}})
async def feedback(req: FeedbackRequest, state: State, client: Client):
    """👍 (1) or 👎 (-1), with an optional comment, for an answer id."""
    user = client if client.startswith("token-") else "anonymous"
    await run_in_threadpool(state.store.add_feedback, req.answer_id, req.rating, req.comment, user)
    return {"ok": True}
