"""The one bridge from an answer running on a worker thread to a streamed response.

The work pushes (kind, data) events from its thread; the event loop hands them to the
client as they come. When the client disconnects, the next push raises `StreamClosed`, so
the answer stops at its next token or tool line and its queue slot comes free.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, Callable, Iterable

from fastapi import Request
from fastapi.responses import StreamingResponse

from .server import ServerState

log = logging.getLogger(__name__)

Push = Callable[[str, Any], None]


class StreamClosed(BaseException):
    """Raised from a stream's push once its client has gone. A BaseException, so that the
    answer path's `except Exception` fallbacks let it through and the work stops."""


def event(kind: str, data: Any) -> str:
    """One server-sent event with a JSON payload."""
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def data_line(body: Any) -> str:
    """One unnamed server-sent event, as OpenAI-compatible streams send them."""
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


async def stream(state: ServerState, request: Request, client: str, cost: int,
                 work: Callable[[Push], None], render: Callable[[str, Any], Iterable[str]]) -> StreamingResponse:
    """Queue, then stream: `work(push)` runs on the answer executor and pushes (kind, data)
    events; `render(kind, data)` turns each into text for the client. An unexpected error
    in the work becomes an "error" event; "end" closes the stream."""
    grant = await state.admit(client, cost, request)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    gone = threading.Event()

    def push(kind: str, data: Any) -> None:
        if gone.is_set():
            raise StreamClosed()
        loop.call_soon_threadsafe(queue.put_nowait, (kind, data))

    def run() -> None:
        try:
            work(push)
        except StreamClosed:
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
