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

What is not Slack's own (dedupe, follow-ups, answering, splitting, the sources footer, the
markdown walk) is in `assistant.interfaces.chat`; this module is transport and mrkdwn.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from starlette.requests import Request  # at module level: FastAPI resolves the annotation here
from starlette.responses import JSONResponse, Response

from assistant.config import Settings
from assistant.i18n import t
from assistant.interfaces import chat
from assistant.interfaces.chat import SeenEvents

if TYPE_CHECKING:  # slack-bolt is imported only once a Slack mode starts
    from fastapi import FastAPI
    from slack_bolt import Ack, App
    from slack_sdk import WebClient

    from assistant.answer import Answer

__all__ = ["ADAPTER", "SeenEvents", "answer_messages", "build_app", "event_problem", "mount_http", "run_socket_mode",
           "plain_text", "signature_ok", "split_message", "thread_question", "to_mrkdwn"]

SECTION_LIMIT = 2900  # a section block holds 3000 characters
log = logging.getLogger(__name__)
MESSAGE_BLOCKS = 45  # Slack allows 50 blocks per message


# ---------------------------------------------------------------- formatting

def _escape(text: str) -> str:
    """mrkdwn's three control characters; everything else is literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


MRKDWN = chat.Dialect(bold="*{}*", italic="_{}_", heading="*{}*", link="<{url}|{label}>", escape=_escape)


def to_mrkdwn(markdown: str) -> str:
    """Markdown (as the answers are written) to Slack mrkdwn."""
    return chat.render_markdown(markdown, MRKDWN)


def split_message(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """`chat.split_message` at a section block's limit unless told otherwise."""
    return chat.split_message(text, limit)


def answer_messages(answer: Answer, answer_id: str) -> list[dict]:
    """chat.postMessage payloads (text + blocks) for an answer; buttons on the last one."""
    sections = chat.answer_sections(answer, MRKDWN, SECTION_LIMIT)
    messages: list[dict] = []
    for start in range(0, len(sections), MESSAGE_BLOCKS):
        group = sections[start : start + MESSAGE_BLOCKS]
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": s}} for s in group]
        messages.append({"text": group[0][:3000], "blocks": blocks})
    messages[-1]["blocks"].append(_feedback_buttons(answer_id))
    return messages


def _feedback_buttons(answer_id: str) -> dict:
    """The 👍/👎 actions block; the answer id rides in each button's value to the action handler."""
    def button(action_id: str, label: str) -> dict:
        return {"type": "button", "action_id": action_id, "text": {"type": "plain_text", "text": label}, "value": answer_id}

    return {"type": "actions", "block_id": "feedback", "elements": [button("feedback_up", "👍"), button("feedback_down", "👎")]}


_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^<>]*)?>")
# Slack's markup in what people write: <https://x|label>, <https://x>, <#C123|channel>,
# <!here>, <mailto:a@b|a@b>, and its three escapes. Left in, "<https://docs.vllm.ai|the docs>
# in <#C0123|oncall-vllm>, OOM &amp; crash" searched on the URL and the entities, and a
# mention holding only a channel link was answered as a question (trial).
_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^<>|\s]*)(?:\|([^<>]*))?>")
_SLACK_CHANNEL = re.compile(r"<#[A-Z0-9]+(?:\|([^<>]*))?>")
_SLACK_SPECIAL = re.compile(r"<!(?:here|channel|everyone|subteam\^[A-Z0-9]+)(?:\|[^<>]*)?>")


def plain_text(text: str) -> str:
    """A Slack message as its author wrote it: mentions gone, links as their label (or URL),
    channels as #name, the three escapes undone, and lone surrogates (which JSON can carry
    and UTF-8 cannot) replaced, so a question never fails to encode deep in answering."""
    text = _MENTION.sub("", text)
    text = _SLACK_LINK.sub(lambda m: m.group(2) or m.group(1).removeprefix("mailto:"), text)
    text = _SLACK_CHANNEL.sub(lambda m: f"#{m.group(1)}" if m.group(1) else "", text)
    text = _SLACK_SPECIAL.sub("", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text.encode("utf-8", "replace").decode("utf-8").strip()


def _message_text(message: dict) -> str:
    """A message's whole text: a bot's answer keeps all its sections in its blocks (its
    `text` is the first section only, the fallback for notifications)."""
    blocks = message.get("blocks")
    if isinstance(blocks, list):
        parts = [b["text"]["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "section"
                 and isinstance(b.get("text"), dict) and isinstance(b["text"].get("text"), str)]
        if parts:
            return "\n".join(parts)
    return message["text"] if isinstance(message.get("text"), str) else ""


def thread_question(text: str, history: list[dict], bot_user: str | None) -> str:
    """`chat.thread_question` from Slack's shapes: markup removed, and only what people wrote
    (no bot_id, not `bot_user`) counts as an earlier question. A follow-up that says the last
    answer's fix failed ("试过了，还是不行") carries which setting that was (`chat.tried_note`),
    as the OpenAI-compatible endpoint's does: it got the first answer word for word (trial)."""
    turns: list[tuple[str, str]] = []
    for m in history:
        if not isinstance(m, dict):
            continue
        by_bot = bool(m.get("bot_id")) or (bot_user is not None and m.get("user") == bot_user)
        turns.append(("assistant", _message_text(m)) if by_bot else ("user", plain_text(_message_text(m))))
    current = plain_text(text)
    question = chat.thread_question(current, (said for role, said in turns if role == "user"))
    if question != current and not chat.language_request(current):
        question += chat.tried_note([*turns, ("user", current)], current)
    return question


# ---------------------------------------------------------------- the Bolt app

class _Bot:
    """The handlers of one Bolt app and what they share: the hooks and the ids seen."""

    def __init__(self, hooks: chat.Hooks) -> None:
        self.hooks = hooks
        self.seen = SeenEvents()
        # Not looked up (no auth.test call): the bot's own messages are still skipped by bot_id.
        self.bot_user: str | None = None

    def on_event(self, event: dict, body: dict, client: WebClient) -> None:
        """Answer a mention (or a DM) in its thread: once across Slack's retries and the
        replicas, after a 👀 so the asker knows it is coming."""
        problem = event_problem({"type": "event_callback", "event": event})
        if problem:  # mount_http checked already; Socket Mode events arrive here directly
            log.warning("ignored a malformed Slack event: %s", problem)
            return
        if not chat.first_to_take(body.get("event_id"), self.seen, self.hooks):
            return
        channel, ts = event["channel"], event["ts"]
        thread_ts = event.get("thread_ts") or ts
        _acknowledge(client, channel, ts)
        history = _thread_history(client, event)
        question = thread_question(event.get("text", ""), history or [], self.bot_user)
        # "英文怎么说": the question before it again, in that language (the OpenAI-style route does the same)
        said = plain_text(event.get("text", ""))
        asked = chat.language_request(said) if question != said else None
        reply = chat.respond(self.hooks, question, () if history is not None else ("chat.thread_unread",), lang=asked)
        lang = reply.answer.lang if reply.answer is not None else chat.NOTICE_LANG
        try:
            payloads = ([{"text": reply.text}] if reply.answer is None
                        else [{"unfurl_links": False, **p} for p in answer_messages(reply.answer, reply.answer_id)])
        except Exception:  # a rendering bug: said in the thread, its traceback in the log
            log.exception("slack: rendering an answer failed")
            payloads = [{"text": t("chat.cannot_answer", lang, message=t("chat.answer_failed", lang))}]
        _post_all(client, channel, ts, thread_ts, payloads, lang)

    def on_direct_message(self, event: dict, body: dict, client: WebClient) -> None:
        """Only people's own messages in a DM: not the bot's answers, not edits or joins (subtypes)."""
        if event.get("channel_type") == "im" and not event.get("bot_id") and not event.get("subtype"):
            self.on_event(event, body, client)

    def on_feedback(self, ack: Ack, body: dict, action: dict, client: WebClient) -> None:
        """A 👍/👎 press: acknowledged first (Slack shows an error after three seconds), then
        stored, and the outcome told to the presser alone (ephemeral), in the thread."""
        ack()
        rating = 1 if action["action_id"] == "feedback_up" else -1
        user = _field(body, "user", "id")
        text = chat.feedback_reply(self.hooks, str(action.get("value", "")), rating, user)
        channel = _field(body, "channel", "id")
        if channel and user:
            client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=_field(body, "message", "thread_ts") or None)


def _acknowledge(client: WebClient, channel: str, ts: str) -> None:
    """👀 on the question, so the asker knows it was seen while the answer is made. A courtesy:
    failing it must not stop the answer."""
    try:
        client.reactions_add(channel=channel, timestamp=ts, name="eyes")
    except Exception:
        pass


def _post_all(client: WebClient, channel: str, ts: str, thread_ts: str, payloads: list[dict], lang: str) -> None:
    """Post the answer's messages in the thread. The client already waits out a 429's
    Retry-After and retries a 5xx or a dropped connection (`_with_retries`); when Slack still
    refuses, the asker is told in one line, or, if even that fails, the 👀 becomes ⚠️. An
    answer lost in silence, with 👀 left on the question, read as "still working" (trial)."""
    from slack_sdk.errors import SlackApiError

    for n, payload in enumerate(payloads):
        try:
            client.chat_postMessage(channel=channel, thread_ts=thread_ts, **payload)
        except (SlackApiError, OSError) as exc:
            error = _slack_error(exc)
            log.warning("slack: posting answer part %d of %d in %s failed: %s", n + 1, len(payloads), channel, error)
            try:
                client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=t("chat.post_failed", lang, error=error))
            except (SlackApiError, OSError):
                _react(client, channel, ts, remove="eyes", add="warning")
            return


def _slack_error(exc: Exception) -> str:
    """Slack's error code (ratelimited, msg_too_long, invalid_auth), else the HTTP status or the
    transport's error, in a word or two: never a response body (a proxy's HTML page)."""
    response = getattr(exc, "response", None)
    try:
        code = response.get("error") if response is not None else None
    except Exception:
        code = None
    if isinstance(code, str) and re.fullmatch(r"[a-z_]{2,60}", code):
        return code
    status = getattr(response, "status_code", None)
    return f"HTTP {status}" if isinstance(status, int) else type(exc).__name__


def _react(client: WebClient, channel: str, ts: str, remove: str, add: str) -> None:
    for call, name in ((client.reactions_remove, remove), (client.reactions_add, add)):
        try:
            call(channel=channel, timestamp=ts, name=name)
        except Exception:
            pass


def _thread_history(client: WebClient, event: dict) -> list[dict] | None:
    """The thread's other messages (up to 20) when the event is a reply in one; [] when it
    starts a thread, None when the lookup failed: the follow-up loses its context, and the
    answer says so (a 429 there answered "试过了" in a CUDA OOM thread with a wrong article,
    and nothing told the asker why; trial)."""
    if not event.get("thread_ts"):
        return []
    try:
        replies = client.conversations_replies(channel=event["channel"], ts=event["thread_ts"], limit=20)
        return [m for m in replies.get("messages", []) if m.get("ts") != event["ts"]]
    except Exception as exc:
        log.warning("slack: could not read thread %s in %s: %s", event["thread_ts"], event["channel"], _slack_error(exc))
        return None


def build_app(settings: Settings, hooks: chat.Hooks) -> App:
    """The Bolt app, answering through `hooks` (see `chat.bind`)."""
    from slack_bolt import App
    from slack_sdk import WebClient

    client = _with_retries(WebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url or WebClient.BASE_URL))
    # Bolt also reads SLACK_BOT_TOKEN itself and warns on every start that the client's token
    # wins over it: the same token, read from the same setting.
    logging.getLogger("slack_bolt.App").addFilter(_SAME_TOKEN)  # one filter, however many apps
    app = App(client=client, signing_secret=settings.slack_signing_secret or "socket-mode", token_verification_enabled=False,
              process_before_response=False)
    bot = _Bot(hooks)
    # Bolt passes handler arguments by parameter name, so each handler names exactly what it reads.
    app.event("app_mention")(lambda event, body, client: bot.on_event(event, body, client))
    app.event("message")(lambda event, body, client: bot.on_direct_message(event, body, client))
    app.action(re.compile(r"^feedback_(up|down)$"))(lambda ack, body, action, client: bot.on_feedback(ack, body, action, client))
    return app


RATE_LIMIT_RETRIES = 3  # Slack allows about one message a second per channel: an incident's burst meets 429s


def _with_retries(client: WebClient) -> WebClient:
    """A client that waits out 429s (their Retry-After) and retries 5xx answers, beside the
    connection retry slack_sdk has on by default: one 429 lost an answer (trial)."""
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler, ServerErrorRetryHandler

    client.retry_handlers.extend([RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
                                  ServerErrorRetryHandler(max_retry_count=2)])
    return client


class _SameTokenWarning(logging.Filter):
    """Drops Bolt's "`token` will be unused" warning: our client is built from the same
    setting Bolt read SLACK_BOT_TOKEN for, so the warning says nothing on every start."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


_SAME_TOKEN = _SameTokenWarning()


def _field(body: dict, outer: str, inner: str) -> str:
    """body[outer][inner] as a string, or "" when either level is missing or not what Slack sends."""
    value = body.get(outer)
    got = value.get(inner) if isinstance(value, dict) else None
    return got if isinstance(got, str) else ""


# ---------------------------------------------------------------- checking payloads

_TS = re.compile(r"\d{1,12}(?:\.\d{1,9})?")


def event_problem(payload: object) -> str | None:
    """What is wrong with a (signature-checked) Slack payload, or None. The handlers may then
    rely on the fields they read; anything else would be a KeyError or a 500."""
    if not isinstance(payload, dict):
        return "the payload is not a JSON object"
    kind = payload.get("type")
    if kind == "event_callback":
        return _event_callback_problem(payload)
    if kind == "block_actions":
        return _block_actions_problem(payload)
    return None


def _event_callback_problem(payload: dict) -> str | None:
    event = payload.get("event")
    if not isinstance(event, dict):
        return "event_callback without an event object"
    if event.get("type") in ("app_mention", "message"):
        problem = _message_problem(event)
        if problem:
            return problem
    if "event_id" in payload and not isinstance(payload["event_id"], str):
        return "event_id is not a string"
    return None


def _message_problem(event: dict) -> str | None:
    """The fields the handlers read from a mention or message: where to answer (channel, ts),
    thread timestamps Slack will accept back, and strings where strings are expected."""
    for name in ("channel", "ts"):
        if not isinstance(event.get(name), str) or not event[name]:
            return f"{event.get('type')} event without {name}"
    for name in ("ts", "thread_ts"):
        if name in event and not (isinstance(event[name], str) and _TS.fullmatch(event[name])):
            return f"{name} is not a Slack timestamp"
    for name in ("text", "user", "bot_id", "subtype", "channel_type"):
        if name in event and event[name] is not None and not isinstance(event[name], str):
            return f"{name} is not a string"
    return None


def _block_actions_problem(payload: dict) -> str | None:
    actions = payload.get("actions")
    if not isinstance(actions, list) or not all(isinstance(a, dict) and isinstance(a.get("action_id", ""), str) for a in actions):
        return "block_actions without a list of actions"
    for name in ("user", "channel", "message"):
        if name in payload and not isinstance(payload[name], dict):
            return f"{name} is not an object"
    return None


# ---------------------------------------------------------------- HTTP mode, Socket Mode, registration

def mount_http(fastapi_app: FastAPI, settings: Settings, state: chat.ServerSide) -> None:
    """POST /slack/events on the API server (HTTP mode)."""
    from fastapi.concurrency import run_in_threadpool
    from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response

    from assistant.interfaces.admission import request_cost

    def gate(question: str):  # the server's fair queue: Slack waits its turn like HTTP clients
        return state.slot("slack", request_cost(question))

    bolt = build_app(settings, chat.bind(settings, state.wait_loaded, state.store, "slack", gate))
    fastapi_app.state.slack = bolt
    fastapi_app.state.slack_status = status = {"token": "checking"}
    import threading

    threading.Thread(target=check_token, args=(bolt, status), name="slack-auth-test", daemon=True).start()

    @fastapi_app.post("/slack/events", include_in_schema=False)
    async def slack_events(request: Request):
        body = await request.body()
        refusal = _refusal(request, body, settings.slack_signing_secret)
        if refusal is not None:
            return refusal
        response = await run_in_threadpool(bolt.dispatch, to_bolt_request(request, body))
        return to_starlette_response(response)


def _refusal(request: Request, body: bytes, secret: str) -> Response | None:
    """The response for a request Bolt must not see (401 bad signature, 422 not JSON, 200 for
    a malformed event Slack would only retry), or None to pass it on."""
    stamp = request.headers.get("x-slack-request-timestamp", "")
    signature = request.headers.get("x-slack-signature", "")
    if not signature_ok(secret, stamp, signature, body):
        log.warning("refused a Slack request: bad or stale signature")
        return JSONResponse({"error": "invalid Slack signature or timestamp", "hint": "check SLACK_SIGNING_SECRET"}, status_code=401)
    try:
        payload = _parse(body, request.headers.get("content-type", ""))
    except ValueError:
        log.warning("refused a signed Slack request whose body is not JSON")
        return JSONResponse({"error": "the Slack request body is not valid JSON",
                             "hint": "point the Slack app's Request URL at /slack/events"}, status_code=422)
    problem = event_problem(payload)
    if problem:
        log.warning("ignored a malformed Slack event: %s", problem)
        return Response(status_code=200)
    return None


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
    from slack_sdk.errors import SlackApiError

    kb = open_kb(settings)
    hooks = chat.bind(settings, lambda: kb, open_state(settings), "slack")
    app = build_app(settings, hooks)
    refused = check_token(app)
    if refused:
        raise ConfigError(f"Slack refused SLACK_BOT_TOKEN ({refused})", "use the bot token (xoxb-…) of the app installed in this workspace")
    try:
        SocketModeHandler(app, settings.slack_app_token).start()
    except SlackApiError as exc:
        # "internal error: SlackApiError … (please report this)", exit 70, for a wrong app token (trial)
        raise ConfigError(f"Slack refused SLACK_APP_TOKEN ({_slack_error(exc)})",
                          "use the app-level token (xapp-…) with the connections:write scope, from the app's Basic Information page") from exc


# What Slack says of a token it will not take; anything else (429, 5xx, a proxy's page) is
# Slack or the network, not the token (review: a 503 stopped Socket Mode as "refused").
_AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "no_permission",
                          "missing_scope", "not_allowed_token_type"})


def check_token(app: App, status: dict | None = None) -> str | None:
    """Ask Slack once, at start, whose the bot token is (auth.test), instead of on the first
    event: there Bolt's own call held that event's ack (6 s against Slack's 3; trial), and a
    refused token dropped every mention behind a 200 with no line in our log saying why. The
    result is handed to Bolt's authorization, so events need no call of their own; `status`
    (shown by /readyz: a code, never Slack's response body) says how it went. Returns Slack's
    error code when it refused the token itself."""
    from slack_bolt.middleware.authorization.single_team_authorization import SingleTeamAuthorization
    from slack_sdk.errors import SlackApiError

    status = status if status is not None else {}
    try:
        result = app.client.auth_test()
    except SlackApiError as exc:
        error = _slack_error(exc)
        if error not in _AUTH_ERRORS:
            status["token"] = f"unchecked ({error})"
            log.warning("slack: could not check the bot token (%s); it is checked again on the first event", error)
            return None
        status["token"] = f"refused ({error})"
        log.error("slack: Slack refused SLACK_BOT_TOKEN (%s): mentions cannot be answered; use the bot token (xoxb-…) "
                  "of the app installed in this workspace", error)
        return error
    except Exception as exc:  # unreachable, a malformed slack_api_url: the thread must not die silently
        status["token"] = "unchecked (Slack unreachable)"
        log.warning("slack: could not reach Slack to check the bot token (%s); it is checked again on the first event",
                    type(exc).__name__)
        return None
    for middleware in getattr(app, "_middleware_list", ()):  # Bolt's own, or none if its layout changes
        if isinstance(middleware, SingleTeamAuthorization) and middleware.auth_test_result is None:
            middleware.auth_test_result = result
    status["token"] = "ok"
    log.info("slack: bot token accepted (bot user %s)", result.get("user_id"))
    return None


def _http_enabled(settings: Settings) -> bool:
    """HTTP mode needs the bot token (to answer) and the signing secret (to trust requests)."""
    return bool(settings.slack_bot_token and settings.slack_signing_secret)


ADAPTER = chat.ChatAdapter(name="slack", enabled=_http_enabled, mount_http=mount_http, run=run_socket_mode)
