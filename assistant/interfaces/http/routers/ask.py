"""POST /v1/ask and POST /v1/ask/stream: the same answers as `ask`, with citations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from assistant.questions import validate_question
from oncall_common.errors import AssistantError

from .. import sse
from ..dependencies import Client, State, cost_of
from ..schemas import ERRORS, AskRequest, AskResponse

router = APIRouter(tags=["answers"])


@router.post("/v1/ask", response_model=AskResponse, responses=ERRORS)
async def ask(req: AskRequest, request: Request, state: State, client: Client):
    """Answer a question from the knowledge base (and the LLM, when configured), with citations."""
    kb = await state.get_kb()
    return await state.run(client, cost_of(req), request, state.answer, req, kb, "http", client)


@router.post("/v1/ask/stream", responses=ERRORS)
async def ask_stream(req: AskRequest, request: Request, state: State, client: Client):
    """Like /v1/ask, as server-sent events: `tool` and `token` while the answer is made, then `answer` (the full object)."""
    # A question that cannot be answered is refused before the stream starts, with the status
    # /v1/ask gives it (422, 413): once the events flow the status is 200, and clients and
    # /metrics read a rejected question as a success.
    validate_question(req.question, state.settings.max_question_bytes)
    kb = await state.get_kb()

    def work(push: sse.Push) -> None:
        try:
            push("answer", state.answer(req, kb, "page", client, on_token=lambda t: push("token", t),
                                        on_tool=lambda line: push("tool", line)))
        except AssistantError as exc:
            push("error", {"error": exc.message, "hint": exc.hint})

    def render(kind: str, data: Any):
        yield sse.event(kind, data)

    return await sse.stream(state, request, client, cost_of(req), work, render)
