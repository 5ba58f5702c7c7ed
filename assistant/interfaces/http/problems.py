"""HTTP errors: one JSON shape, {"error", "hint"}, with the status carried by the exception;
on the OpenAI-compatible paths, OpenAI's own {"error": {"message", "type", ...}}.

Core errors (`AssistantError` and its subclasses) say their own `http_status` and
`retry_after`; `HTTPProblem` is for what only HTTP has (a bad token, a full queue, an
unknown route). No handler reads a message to choose a status, and no traceback reaches a
client: unexpected exceptions are logged here with theirs, and the client gets one line.
"""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from oncall_common.errors import AssistantError

log = logging.getLogger("assistant.interfaces.http")


class HTTPProblem(AssistantError):
    """A failure that exists only over HTTP, with its status and extra headers."""

    def __init__(self, status: int, message: str, hint: str = "", headers: dict[str, str] | None = None) -> None:
        super().__init__(message, hint)
        self.http_status = status
        self.headers = headers or {}


# The hint a client gets when the code that failed had none to give: every error says where
# to look next, never an empty "hint".
# Not /docs: it loads Swagger from a CDN (blank on an isolated network) and is off when API
# tokens are set; the schema itself is always served (newcomer).
SCHEMA_HINT = "see /openapi.json for the request schema"
_DEFAULT_HINTS = {401: "send Authorization: Bearer <token>", 404: "see /openapi.json for the endpoints",
                  405: "see /openapi.json for the endpoints", 413: "send a smaller request",
                  429: "retry later", 499: "the request was dropped; send it again", 503: "retry later; GET /readyz says when"}


# The paths a chat front end or the `openai` client calls: they read errors as OpenAI sends
# them, so a string "error" showed there as "Error code: 422 - {...}" with no message.
OPENAI_PATHS = frozenset({"/v1/chat/completions", "/v1/models"})
_OPENAI_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}


def error_body(message: str, hint: str, status: int, path: str = "") -> dict:
    if path.rstrip("/") in OPENAI_PATHS:
        kind = _OPENAI_TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": status, "hint": hint}}
    return {"error": message, "hint": hint}


def problem(message: str, hint: str = "", status: int = 400, headers: dict[str, str] | None = None, path: str = "") -> JSONResponse:
    if not hint:
        hint = _DEFAULT_HINTS.get(status) or ("see the server log" if status >= 500 else SCHEMA_HINT)
    return JSONResponse(error_body(message, hint, status, path), status_code=status, headers=headers)


def internal_error(path: str = "") -> JSONResponse:
    return problem("internal error", "see the server log", 500, path=path)


async def _assistant_error(request: Request, exc: AssistantError) -> JSONResponse:
    headers = dict(getattr(exc, "headers", {}))
    if exc.retry_after is not None:
        headers.setdefault("Retry-After", str(exc.retry_after))
    return problem(exc.message, exc.hint, exc.http_status, headers or None, request.url.path)


_FIELD = re.compile(r"^[A-Za-z_][\w-]*$")


def _known_fields(request: Request, unknown: str) -> str:
    """" (did you mean `top_k`?; fields: …)" for a field the endpoint does not take."""
    import difflib

    from .schemas import AskRequest, FeedbackRequest

    model = FeedbackRequest if request.url.path.rstrip("/").endswith("/feedback") else AskRequest
    fields = list(model.model_fields)
    close = difflib.get_close_matches(unknown.lower().replace("-", "_"), fields, n=1, cutoff=0.6)
    return f" ({f'did you mean `{close[0]}`? ' if close else ''}fields: {', '.join(fields)})"


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    ctype = request.headers.get("content-type", "")
    if any(tuple(err.get("loc", ())) == ("body",) and err.get("type") == "missing" for err in errors):
        return problem("the request has no body", 'send Content-Type: application/json and a JSON object such as {"question": "…"}', 422,
                       path=request.url.path)
    media = ctype.split(";")[0].strip().lower()
    json_body = media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
    if not json_body and any(tuple(err.get("loc", ())) == ("body",) for err in errors):
        # A form or plain-text body read as JSON failed as "Input should be a valid dictionary
        # or object to extract fields from": what was wrong is the content type.
        return problem(f"the body must be JSON, not {media}" if media else "the body must be JSON, and the request names no Content-Type",
                       'send Content-Type: application/json and a JSON object such as {"question": "…"}', 415, path=request.url.path)
    problems: list[str] = []
    allowed: dict[str, list[str]] = {}  # a field's accepted values, over every member of its union
    for err in errors[:8]:
        if err.get("type") == "json_invalid":
            # FastAPI locates a JSON syntax error by a bare character offset ("13: JSON decode error")
            offset = next((p for p in err.get("loc", []) if isinstance(p, int)), None)
            problems.append("the body is not valid JSON" + (f" (at character {offset})" if offset is not None else ""))
            continue
        # pydantic names the member of a union it tried ("lang.literal['zh','en']"): the field is enough.
        where = ".".join(str(p) for p in err.get("loc", []) if p != "body" and (isinstance(p, int) or _FIELD.match(str(p))))
        if err.get("type") == "literal_error":
            # One line per union member read "lang: Input should be 'zh' or 'en'; lang: Input
            # should be 'auto'" (trial): one line names every accepted value.
            values = allowed.setdefault(where, [])
            msg = str(err.get("msg"))
            # Strings come quoted ('zh'); numbers bare ("Input should be 1 or -1": a rating of 5
            # was told only "one of the documented values", newcomer).
            found = re.findall(r"'[^']*'", msg) or re.findall(r"-?\d+(?:\.\d+)?", msg.partition("should be")[2])
            values += [v for v in found if v not in values]
            continue
        if err.get("type") == "extra_forbidden":
            # Named as sent: `where` keeps identifiers only, and {"问题": …} read "unknown field ``" (review).
            sent = str((err.get("loc") or ("",))[-1])[:40]
            problems.append(f"unknown field `{sent}`" + _known_fields(request, sent))
            continue
        problems.append(f"{where or 'body'}: {err.get('msg')}")
    for where, values in allowed.items():
        problems.append(f"{where or 'body'}: Input should be {', '.join(values[:-1]) + ' or ' if len(values) > 1 else ''}{values[-1]}"
                        if values else f"{where or 'body'}: Input should be one of the documented values")
    return problem("invalid request: " + "; ".join(problems), SCHEMA_HINT, 422, path=request.url.path)


async def _starlette_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Starlette's own errors (unknown route, wrong method, a body FastAPI could not parse:
    invalid UTF-8, nesting too deep) in the same {error, hint} shape as ours."""
    if exc.status_code == 400:
        return problem("the request body is not valid JSON", "send UTF-8 JSON; see /openapi.json for the schema", 422, path=request.url.path)
    if exc.status_code == 404 and request.url.path.rstrip("/") == "/slack/events":
        # Mounted only when Slack is configured: a bare "Not Found" said nothing of why (newcomer).
        return problem("Slack is not configured on this server", "set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET and restart "
                       "`assistant serve`", 404, path=request.url.path)
    return problem(str(exc.detail), "", exc.status_code, getattr(exc, "headers", None), request.url.path)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
    return internal_error(request.url.path)


def install(app: FastAPI) -> None:
    app.add_exception_handler(AssistantError, _assistant_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _starlette_error)
    app.add_exception_handler(Exception, _unexpected)
