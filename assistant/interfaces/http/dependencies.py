"""FastAPI dependencies every router shares: the server state, and who the caller is
(bearer token when tokens are configured, else the client's address).

Limits live beside them: a request's cost for the fair queue (`cost_of`); the body-size
limit is the `BodyLimit` middleware (middleware.py), since it must act before parsing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from assistant.interfaces.admission import request_cost

from .auth import client_address, client_label, token_ok
from .problems import HTTPProblem
from .schemas import AskRequest
from .server import ServerState


def get_state(request: Request) -> ServerState:
    return request.app.state.assistant


def authorize(request: Request) -> str:
    """Bearer token check (when tokens are configured); returns the client's key: its
    token's label, or "ip-" and its address (see client_address: proxies are trusted
    only when configured)."""
    state = get_state(request)
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else ""
    if state.tokens:
        if not token_ok(token, state.tokens):
            raise HTTPProblem(401, "missing or invalid bearer token", "send Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"})
        return client_label(token)
    peer = request.client.host if request.client else "unknown"
    return "ip-" + client_address(peer, request.headers.get("x-forwarded-for", ""), state.trusted)


def cost_of(req: AskRequest) -> int:
    """A request's weight in the fair queue: longer questions and logs take longer to answer."""
    return request_cost(req.question + (req.log or ""))


State = Annotated[ServerState, Depends(get_state)]
Client = Annotated[str, Depends(authorize)]
