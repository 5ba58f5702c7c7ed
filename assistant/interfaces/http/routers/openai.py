"""The OpenAI-compatible endpoints, for chat front ends that speak that protocol:
POST /v1/chat/completions (the last user message is the question, a follow-up carrying the
conversation's first one, as in a Slack thread) and GET /v1/models."""

from __future__ import annotations

import time
import uuid
from typing import Any

from fastapi import APIRouter, Request

from assistant.i18n import t
from assistant.questions import validate_question
from oncall_common.errors import AssistantError, BadQuestion, QuestionTooLarge

from .. import sse
from ..dependencies import Client, State, cost_of
from ..schemas import MODEL_NAME, OPENAI_ERRORS, OpenAIErrorOut, AskRequest, ChatMessage, ChatRequest

router = APIRouter(tags=["openai-compatible"])
CHUNK_CHARS = 64  # the answer's tail, after any streamed tokens, goes out in pieces this long


@router.post("/v1/chat/completions", responses=OPENAI_ERRORS)
async def chat_completions(req: ChatRequest, request: Request, state: State, client: Client):
    """OpenAI-compatible chat: the last user message is the question, with the conversation's first user message
    before it when there is one ("still failing, what next?" means nothing alone); the answer text ends with its
    sources and the response carries an extra `citations` list. With `stream: true`, chat.completion.chunk events."""
    # "英文怎么说": the question before it again, in the language asked for (chat.language_request)
    from assistant.interfaces.chat import language_request

    said = [_text(msg) for msg in req.messages if msg.role == "user"]
    ask_req = AskRequest(question=conversation_question(req.messages),
                         lang=language_request(said[-1]) if len(said) > 1 else None)
    # Refused before any work, with the status a plain call gets (422, 413): once stream events
    # flow it is 200, and an empty question came back as a 200 "error: …" message.
    try:
        validate_question(ask_req.question, state.settings.max_question_bytes)
    except QuestionTooLarge as exc:  # its hint named /v1/ask's `log` field, which chat requests do not have
        raise QuestionTooLarge(exc.message, "paste only the relevant log lines; a whole log goes to POST /v1/ask in its `log` "
                                            "field, or to `ask --log FILE`") from None
    kb = await state.get_kb()
    reply = _Reply(f"chatcmpl-{uuid.uuid4().hex[:20]}", int(time.time()))
    if not req.stream:
        data = await state.run(client, cost_of(ask_req), request, state.answer, ask_req, kb, "openai", client)
        return reply.completion(data)

    def work(push: sse.Push) -> None:
        streamed: list[str] = []

        def on_token(token: str) -> None:
            streamed.append(token)
            push("token", token)

        push("start", None)
        try:
            push("done", (state.answer(ask_req, kb, "openai", client, on_token=on_token), "".join(streamed)))
        except AssistantError as exc:
            push("done", ({"error": exc.message}, ""))

    return await sse.stream(state, request, client, cost_of(ask_req), work, reply.render)


@router.get("/v1/models", responses={401: {"model": OpenAIErrorOut}})
async def models(client: Client):
    """The one model this server offers, for OpenAI-compatible front ends."""
    return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "oncall-assistant"}]}


class _Reply:
    """One chat completion's id and time, and its bodies: whole, or as stream chunks."""

    def __init__(self, cid: str, created: int) -> None:
        self.cid, self.created = cid, created

    def completion(self, data: dict) -> dict:
        return {"id": self.cid, "object": "chat.completion", "created": self.created, "model": MODEL_NAME,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": with_sources(data)}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                "citations": data["citations"], "answer_id": data["id"]}

    def chunk(self, delta: dict, finish: str | None = None, **extra: Any) -> str:
        return sse.data_line({"id": self.cid, "object": "chat.completion.chunk", "created": self.created, "model": MODEL_NAME,
                              "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})

    def render(self, kind: str, data: Any):
        if kind == "start":
            yield self.chunk({"role": "assistant", "content": ""})
        elif kind == "token":
            yield self.chunk({"content": data})
        elif kind == "error":
            yield self.chunk({"content": f"error: {data['error']}"}, "stop")
            yield "data: [DONE]\n\n"
        else:
            yield from self._finish(*data)
            yield "data: [DONE]\n\n"

    def _finish(self, result: dict, streamed: str):
        """The rest of the answer after what was streamed (sources included), then the stop chunk."""
        if "error" in result:
            yield self.chunk({"content": f"error: {result['error']}"}, "stop")
            return
        full = with_sources(result)
        if not streamed:
            rest = full
        elif _same_text(streamed, result["answer"]) or result.get("backend", "extractive") != "extractive":
            # The answer is on screen; only its sources are new. So too when the LLM's final text
            # left out a streamed sentence that cited no passage: a stream cannot take it back,
            # and the note under the answer says so.
            rest = full[len(result["answer"]):]
        else:
            # A fallback after a partial stream: the whole KB answer follows, after the line the
            # CLI prints there, so the unfinished text above is not read as its opening (trial).
            from assistant.i18n import t

            rest = f"\n\n{t('llm.stream_abandoned', result.get('lang', 'en'))}\n\n" + full
        for i in range(0, len(rest), CHUNK_CHARS):
            yield self.chunk({"content": rest[i:i + CHUNK_CHARS]})
        yield self.chunk({}, "stop", citations=result["citations"], answer_id=result["id"])


def _same_text(streamed: str, final: str) -> bool:
    """Whether the final answer is what was streamed, but for citation numbers dropped or
    renumbered and spacing (the LLM's [9] that matched no passage)."""
    from assistant.llm import CITATION_REF

    def bare(text: str) -> str:
        return "".join(CITATION_REF.sub("", text).split())

    return bool(bare(streamed)) and bare(final).startswith(bare(streamed))


def conversation_question(messages: list[ChatMessage]) -> str:
    """The question a chat front end asks: its last user message, folded with the earlier ones
    the way a Slack thread is (`chat.thread_question`). Only users' messages count: the
    assistant's own earlier answers are not the asker's words."""
    from assistant.interfaces.chat import language_request, thread_question

    said = [_text(msg) for msg in messages if msg.role == "user"]
    if not said:
        raise BadQuestion("no user message in `messages`", 'add {"role": "user", "content": "…"} to messages')
    last = [msg for msg in messages if msg.role == "user"][-1]
    if not said[-1].strip() and isinstance(last.content, list) and last.content:
        # An image or a file alone was answered "the question is empty".
        raise BadQuestion("the last message has no text: this assistant reads text only, not images or files",
                          "write the question, or paste the error text, as a text part")
    question = thread_question(said[-1], said[:-1])
    if question != said[-1] and not language_request(said[-1]):  # a follow-up: "tried that, still failing"
        question += _tried_note(messages, said[-1])
    return question


def _tried_note(messages: list[ChatMessage], current: str) -> str:
    """`chat.tried_note` over the conversation's user and assistant turns."""
    from assistant.interfaces.chat import tried_note

    return tried_note([(msg.role, _text(msg)) for msg in messages if msg.role in ("user", "assistant")], current)


def _text(msg: ChatMessage) -> str:
    if isinstance(msg.content, list):
        return " ".join(str(p.get("text", "")) for p in msg.content if isinstance(p, dict))
    return msg.content or ""


def with_sources(data: dict) -> str:
    """The answer text with its notes and numbered sources, for clients that show only text.
    The notes are what warns a chat user ("1 statement above cites only passages it does
    not match: do not act on it", "the LLM did not answer in time"): a front end that shows
    `content` alone dropped them, and a made-up fix read as the answer."""
    notes = "".join(f"\n\n_{note}_" for note in data.get("notes") or ())
    lines = [f"[{i}] {c['title']} ({c['source']})" for i, c in enumerate(data["citations"], 1)]
    return data["answer"] + notes + (f"\n\n{t('answer.sources', data['lang'])}:\n" + "\n".join(lines) if lines else "")
