"""GET /v1/tools and POST /v1/tools/{name}: the read-only tools, as a remote caller may use them.

What a remote caller may do is decided by each tool's declared access (see
assistant/tools: `Caller`), never by its name here.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from ..dependencies import Client, State
from ..problems import HTTPProblem
from ..schemas import ERRORS, ErrorOut, has_surrogates

router = APIRouter(tags=["tools"])


@router.get("/v1/tools")
async def list_tools(state: State, client: Client):
    """The tools an HTTP client (and the LLM answering it) may use, with the schemas they see."""
    from assistant.tools import available

    return [{"name": t.name, "description": t.description, "parameters": state.caller.parameters(t)}
            for t in available(state.caller).values()]


@router.post("/v1/tools/{name}", responses={**ERRORS, 404: {"model": ErrorOut}})
async def run_tool(name: str, request: Request, state: State, client: Client, arguments: dict[str, Any] | None = None):
    """Run one tool with the arguments in the body (a JSON object). Tools only read and compute; over HTTP
    no argument may name a server file (a log goes in as `text`) and URLs may only point at the allowed hosts."""
    from assistant.tools import available, call_tool

    tools = available(state.caller)
    if name not in tools:
        raise HTTPProblem(404, f"unknown tool {name[:64]!r}", "GET /v1/tools lists them")
    args = arguments or {}
    if has_surrogates(args):
        raise HTTPProblem(422, "invalid request: the arguments contain invalid Unicode (a lone surrogate)", "send the arguments as UTF-8 JSON")
    refusal = state.caller.refusal(tools[name], args)
    if refusal:
        raise HTTPProblem(422, refusal, "GET /v1/tools shows what may be sent over HTTP")
    call = await state.run(client, 1, request, call_tool, name, args, timeout=state.settings.tool_timeout, caller=state.caller)
    state.metrics.tool_call(name, call.error is None)
    if call.error:
        raise HTTPProblem(422, call.error, "GET /v1/tools lists each tool's parameters")
    return {"name": name, "result": call.result, "ms": round(call.ms, 2)}
