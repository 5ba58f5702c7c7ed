"""The Slack bot (slack-bolt): answers mentions in channels and direct messages, in the thread.

- HTTP mode is mounted on the API server at /slack/events (Bolt verifies the signing
  secret and rejects timestamps older than five minutes); Socket Mode runs with
  `assistant slack` (app token + bot token).
- Acknowledges at once with a 👀 reaction, answers in the thread, and reads the thread's
  earlier messages so a follow-up ("and with MTP?") keeps its context.
- Slack retries an event it thinks was not handled; event ids already seen are ignored,
  here and, through the state store's unique insert, by every replica sharing it: the
  first to claim an event answers it.
- Markdown becomes Slack mrkdwn, long answers are split under Slack's limits, and the
  last message carries 👍/👎 buttons that land in the feedback store.
- Requests are checked before Bolt sees them: a bad timestamp or signature gets 401, a
  signed body that is not JSON 422, and a well-signed but malformed event is ignored with a
  200 (Slack would only retry it) and a log line.
- Answers are made on behalf of a remote caller: the LLM gets the tools safe for Slack only.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from typing import Callable

from starlette.requests import Request  # at module level: FastAPI resolves the annotation here

from assistant.config import Settings

SECTION_LIMIT = 2900  # a section block holds 3000 characters
log = logging.getLogger(__name__)
MESSAGE_BLOCKS = 45  # Slack allows 50 blocks per message


# ---------------------------------------------------------------- formatting

def to_mrkdwn(markdown: str) -> str:
    """Markdown (as the answers are written) to Slack mrkdwn."""
    out: list[str] = []
    in_code = False
    for line in markdown.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
            out.append("```")
            continue
        if in_code:
            out.append(_escape(line))
            continue
        if re.match(r"^\s*\|[\s:|-]+\|\s*$", line):
            continue  # a table's separator row
        if re.match(r"^\s*\|.*\|\s*$", line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out.append("• " + " — ".join(_inline(c) for c in cells))
            continue
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            out.append(f"*{_inline(heading.group(1))}*")
            continue
        bullet = re.match(r"^(\s*)[-*+]\s+(.*)$", line)
        if bullet:
            out.append(f"{bullet.group(1)}• {_inline(bullet.group(2))}")
            continue
        out.append(_inline(line))
    return "\n".join(out).strip()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _inline(text: str) -> str:
    text = _escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"*\1*", text)
    # [^\[\]] (not [^\]]): a match attempt stops at the next "[", so "[[[[…" is linear, not quadratic.
    return _LINK.sub(r"<\2|\1>", text)


_LINK = re.compile(r"\[([^\[\]]+)\]\((https?://[^)\s]+)\)")


def split_message(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """Pieces under `limit`, cut between lines; a code block cut in two is closed at the end of
    one piece and reopened at the start of the next, so every piece renders on its own."""
    pieces: list[str] = []
    current = ""
    fence_open = False  # whether `current` ends inside a code block
    budget = limit - 4  # room to close a fence

    def flush() -> None:
        nonlocal current
        if current:
            pieces.append(current + ("\n```" if fence_open else ""))
            current = "```" if fence_open else ""

    for line in text.split("\n"):
        while len(line) > budget - 4:  # one enormous line: cut it
            head, line = line[: budget - 4], line[budget - 4 :]
            flush()
            current = f"{current}\n{head}" if current else head
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > budget:
            flush()
            candidate = f"{current}\n{line}" if current else line
        current = candidate
        if line.strip().startswith("```"):
            fence_open = not fence_open
    if current and current != "```":
        pieces.append(current + ("\n```" if fence_open else ""))
    return pieces


def answer_messages(answer, answer_id: str) -> list[dict]:
    """chat.postMessage payloads (text + blocks) for an answer; buttons on the last one."""
    label = "来源" if answer.lang == "zh" else "Sources"
    sources = "\n".join(f"[{i}] {_escape(c.title)} ({_escape(c.source)})" for i, c in enumerate(answer.citations, 1))
    body = to_mrkdwn(answer.answer)
    if answer.notes:
        body += "\n\n_" + _escape(" · ".join(answer.notes)) + "_"
    sections = split_message(body) + ([f"*{label}*\n{sources}"] if sources else [])
    messages: list[dict] = []
    for start in range(0, len(sections), MESSAGE_BLOCKS):
        group = sections[start : start + MESSAGE_BLOCKS]
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": s}} for s in group]
        messages.append({"text": group[0][:3000], "blocks": blocks})
    messages[-1]["blocks"].append({
        "type": "actions",
        "block_id": "feedback",
        "elements": [
            {"type": "button", "action_id": "feedback_up", "text": {"type": "plain_text", "text": "👍"}, "value": answer_id},
            {"type": "button", "action_id": "feedback_down", "text": {"type": "plain_text", "text": "👎"}, "value": answer_id},
        ],
    })
    return messages


_MENTION = re.compile(r"<@[A-Z0-9]+>")


def thread_question(text: str, history: list[dict], bot_user: str | None) -> str:
    """The question to answer: a follow-up carries the thread's first question with it."""
    current = _MENTION.sub("", text).strip()
    asked = [_MENTION.sub("", m["text"]).strip() for m in history
             if isinstance(m, dict) and isinstance(m.get("text"), str) and not m.get("bot_id") and m.get("user") != bot_user]
    asked = [a for a in asked if a and a != current]
    if not asked:
        return current
    return f"{asked[0]}\n{current}"[:8000]


# ---------------------------------------------------------------- the Bolt app

class SeenEvents:
    """Event ids already taken on; Slack retries (X-Slack-Retry-Num) are dropped."""

    def __init__(self, size: int = 2048) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.size = size

    def first_time(self, event_id: str | None) -> bool:
        if not event_id:
            return True
        with self._lock:
            if event_id in self._seen:
                return False
            self._seen[event_id] = None
            if len(self._seen) > self.size:
                self._seen.popitem(last=False)
            return True


def build_app(settings: Settings, answer: Callable[[str], object], record: Callable[[object], str], feedback: Callable[[str, int, str], None],
              claim: Callable[[str], bool | None] | None = None):
    """The Bolt app. `answer(question) -> Answer`, `record(answer) -> id`, `feedback(id, rating, user)`,
    `claim(event_id) -> True` (first), False (another replica took it) or None (cannot tell)."""
    from slack_bolt import App
    from slack_sdk import WebClient

    client = WebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url or WebClient.BASE_URL)
    app = App(client=client, signing_secret=settings.slack_signing_secret or "socket-mode", token_verification_enabled=False,
              process_before_response=False)
    seen = SeenEvents()
    bot_user: dict[str, str | None] = {"id": None}

    def handle(event: dict, body: dict, client) -> None:
        problem = event_problem({"type": "event_callback", "event": event})
        if problem:  # mount_http checked already; Socket Mode events arrive here directly
            log.warning("ignored a malformed Slack event: %s", problem)
            return
        event_id = body.get("event_id")
        if not seen.first_time(event_id):
            return
        if event_id and claim is not None and claim(event_id) is False:
            log.info("Slack event %s was taken by another replica", event_id[:64])
            return
        channel, ts = event["channel"], event["ts"]
        thread_ts = event.get("thread_ts") or ts
        try:
            client.reactions_add(channel=channel, timestamp=ts, name="eyes")
        except Exception:
            pass  # the acknowledgement is a courtesy; answering matters more
        history: list[dict] = []
        if event.get("thread_ts"):
            try:
                replies = client.conversations_replies(channel=channel, ts=thread_ts, limit=20)
                history = [m for m in replies.get("messages", []) if m.get("ts") != ts]
            except Exception:
                history = []
        question = thread_question(event.get("text", ""), history, bot_user["id"])
        if not question:
            client.chat_postMessage(channel=channel, thread_ts=thread_ts, text="Ask me about a vLLM or FastDeploy problem — in Chinese or English.")
            return
        try:
            result = answer(question)
        except Exception as exc:  # a bad question or a broken index: say so in one line
            message = getattr(exc, "message", None) or "something went wrong; the server log has details"
            client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=f"Sorry, I could not answer: {message}")
            return
        answer_id = record(result)
        for payload in answer_messages(result, answer_id):
            client.chat_postMessage(channel=channel, thread_ts=thread_ts, unfurl_links=False, **payload)

    @app.event("app_mention")
    def on_mention(event, body, client):
        handle(event, body, client)

    @app.event("message")
    def on_message(event, body, client):
        if event.get("channel_type") == "im" and not event.get("bot_id") and not event.get("subtype"):
            handle(event, body, client)

    @app.action(re.compile(r"^feedback_(up|down)$"))
    def on_feedback(ack, body, action, client):
        ack()
        rating = 1 if action["action_id"] == "feedback_up" else -1
        user = _field(body, "user", "id")
        try:
            feedback(str(action.get("value", "")), rating, user)
            text = "Thanks for the feedback!" if rating > 0 else "Thanks — noted for the maintainers."
        except Exception as exc:
            log.warning("Slack feedback not saved: %s", getattr(exc, "message", type(exc).__name__))
            text = "Sorry, that feedback could not be saved."
        channel = _field(body, "channel", "id")
        if channel and user:
            client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=_field(body, "message", "thread_ts") or None)

    return app


def _field(body: dict, outer: str, inner: str) -> str:
    """body[outer][inner] as a string, or "" when either level is missing or not what Slack sends."""
    value = body.get(outer)
    got = value.get(inner) if isinstance(value, dict) else None
    return got if isinstance(got, str) else ""


_TS = re.compile(r"\d{1,12}(?:\.\d{1,9})?")


def event_problem(payload: object) -> str | None:
    """What is wrong with a (signature-checked) Slack payload, or None. The handlers may then
    rely on the fields they read; anything else would be a KeyError or a 500."""
    if not isinstance(payload, dict):
        return "the payload is not a JSON object"
    kind = payload.get("type")
    if kind == "event_callback":
        event = payload.get("event")
        if not isinstance(event, dict):
            return "event_callback without an event object"
        if event.get("type") in ("app_mention", "message"):
            for name in ("channel", "ts"):
                if not isinstance(event.get(name), str) or not event[name]:
                    return f"{event.get('type')} event without {name}"
            for name in ("ts", "thread_ts"):
                if name in event and not (isinstance(event[name], str) and _TS.fullmatch(event[name])):
                    return f"{name} is not a Slack timestamp"
            for name in ("text", "user", "bot_id", "subtype", "channel_type"):
                if name in event and event[name] is not None and not isinstance(event[name], str):
                    return f"{name} is not a string"
        if "event_id" in payload and not isinstance(payload["event_id"], str):
            return "event_id is not a string"
    elif kind == "block_actions":
        actions = payload.get("actions")
        if not isinstance(actions, list) or not all(isinstance(a, dict) and isinstance(a.get("action_id", ""), str) for a in actions):
            return "block_actions without a list of actions"
        for name in ("user", "channel", "message"):
            if name in payload and not isinstance(payload[name], dict):
                return f"{name} is not an object"
    return None


def _callbacks(settings: Settings, kb_getter, store):
    from assistant.answer import answer_question
    from assistant.tools import acting_for, remote_caller

    caller = remote_caller(settings.serving_hosts_allow)

    def answer(question: str):
        with acting_for(caller):  # a Slack user is a remote caller, and so is the LLM answering them
            return answer_question(question, settings, kb=kb_getter())

    return (answer, (lambda a: store.record_answer(a, "slack")),
            (lambda answer_id, rating, user: store.add_feedback(answer_id, rating, "", user)), store.claim_event)


def mount_http(fastapi_app, settings: Settings, state) -> None:
    """POST /slack/events on the API server (HTTP mode)."""
    from fastapi.concurrency import run_in_threadpool
    from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response

    from starlette.responses import JSONResponse, Response

    answer, record, feedback, claim = _callbacks(settings, state.wait_loaded, state.store)
    bolt = build_app(settings, answer, record, feedback, claim)
    fastapi_app.state.slack = bolt

    @fastapi_app.post("/slack/events", include_in_schema=False)
    async def slack_events(request: Request):
        body = await request.body()
        stamp = request.headers.get("x-slack-request-timestamp", "")
        signature = request.headers.get("x-slack-signature", "")
        if not signature_ok(settings.slack_signing_secret, stamp, signature, body):
            log.warning("refused a Slack request: bad or stale signature")
            return JSONResponse({"error": "invalid Slack signature or timestamp", "hint": "check SLACK_SIGNING_SECRET"}, status_code=401)
        try:
            payload = _parse(body, request.headers.get("content-type", ""))
        except ValueError:
            log.warning("refused a signed Slack request whose body is not JSON")
            return JSONResponse({"error": "the Slack request body is not valid JSON", "hint": ""}, status_code=422)
        problem = event_problem(payload)
        if problem:
            log.warning("ignored a malformed Slack event: %s", problem)
            return Response(status_code=200)
        response = await run_in_threadpool(bolt.dispatch, to_bolt_request(request, body))
        return to_starlette_response(response)


def signature_ok(secret: str, stamp: str, signature: str, body: bytes) -> bool:
    """Slack's v0 signature over the raw bytes, checked before anything reads the body: the
    timestamp must be digits within five minutes (int() of anything else was a 500), and the
    body need not be UTF-8 to be refused cleanly. Constant-time comparison."""
    import hashlib
    import hmac
    import time

    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12) or abs(time.time() - int(stamp)) > 300:
        return False
    expected = "v0=" + hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))


def _parse(body: bytes, content_type: str) -> object:
    """The payload as Bolt will read it (JSON, or a form whose `payload` is JSON); ValueError
    (UnicodeDecodeError and JSONDecodeError are ValueErrors) when it cannot be read."""
    from slack_bolt.request.internals import parse_body

    text = body.decode("utf-8")
    return parse_body(text, content_type.split(";")[0].strip() or None)


def run_socket_mode(settings: Settings) -> None:
    """`assistant slack`: connect out to Slack over a websocket (no public URL needed)."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    from oncall_common.errors import ConfigError
    from assistant.knowledge import open_kb
    from assistant.ops.store import open_state

    if not (settings.slack_app_token and settings.slack_bot_token):
        raise ConfigError("Socket Mode needs SLACK_APP_TOKEN (xapp-…) and SLACK_BOT_TOKEN (xoxb-…)")
    kb = open_kb(settings)
    store = open_state(settings)
    answer, record, feedback, claim = _callbacks(settings, lambda: kb, store)
    SocketModeHandler(build_app(settings, answer, record, feedback, claim), settings.slack_app_token).start()
