"""What every chat adapter shares (assistant/interfaces/chat.py), tested without Slack: the
markdown walk with a dialect of the test's own, splitting, dedupe, follow-ups, answering
and feedback through the hooks, the sources footer, and the registry mounting a stand-in
adapter on a real FastAPI app."""

from __future__ import annotations

import logging
import sys
import types
from dataclasses import replace

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from assistant.answer import Answer, Citation
from assistant.config import Settings
from assistant.interfaces import chat
from oncall_common.errors import AssistantError, ConfigError

# A dialect no platform uses, so a test passes only if the walk really defers to it.
ANGLE = chat.Dialect(bold="<b>{}</b>", italic="<i>{}</i>", heading="<h>{}</h>", link="<a href={url}>{label}</a>",
                     bullet="+ ", cell_separator=" / ", escape=lambda s: s.replace("<", "‹").replace(">", "›"))

CITE = Citation("c1", "Widget <hang>", "kb/widget.md", "Fixes", "en", 1.0, "text")


# ---------------------------------------------------------------- rendering

def test_the_markdown_walk_uses_the_dialect_for_every_construct():
    md = ("## Why **now**\n| Cause | Fix |\n|---|:-:|\n| queue <full> | raise it |\n  - see [docs](https://e.x/q)\n"
          "plain **bold** line\n```\nwidgetd --queue-len <n>  **not bold**\n```")
    assert chat.render_markdown(md, ANGLE).split("\n") == [
        "<h>Why <b>now</b></h>",
        "<b>Cause / Fix</b>",  # the header row names the columns: no bullet that reads like one more cause
        "+ queue ‹full› / raise it",
        "  + see <a href=https://e.x/q>docs</a>",
        "plain <b>bold</b> line",
        "```",
        "widgetd --queue-len ‹n›  **not bold**",  # code: escaped, never restyled
        "```",
    ]


def test_the_default_dialect_is_plain_markdown():
    assert chat.render_markdown("# T\n**b** [l](http://u)", chat.Dialect()) == "**T**\n**b** [l](http://u)"


def test_split_message_keeps_every_piece_under_the_limit_and_code_fences_balanced():
    long = "\n".join(f"paragraph {i} " + "x" * 200 for i in range(60))
    pieces = chat.split_message(long, 1000)
    assert len(pieces) > 10 and all(len(p) <= 1000 for p in pieces)
    assert "\n".join(pieces) == long  # cut between lines, nothing lost
    code = "```\n" + "\n".join("echo " + "y" * 100 for _ in range(80)) + "\n```"
    pieces = chat.split_message(code, 1000)
    assert len(pieces) > 5 and all(p.startswith("```") and p.endswith("```") and p.count("```") == 2 for p in pieces)
    enormous = chat.split_message("z" * 5000, 1000)
    assert len(enormous) > 5 and all(len(p) <= 1000 for p in enormous) and "".join(enormous) == "z" * 5000
    assert chat.split_message("", 1000) == [] and chat.split_message("short", 1000) == ["short"]


def test_sources_footer_is_labelled_in_the_answers_language_and_absent_without_sources():
    zh = Answer("q", "a", "zh", True, [CITE])
    en = replace(zh, lang="en")
    assert chat.sources_footer(zh, ANGLE) == "<b>来源</b>\n[1] Widget ‹hang› (kb/widget.md)"
    assert chat.sources_footer(en, ANGLE).startswith("<b>Sources</b>\n[1] ")
    assert chat.sources_footer(replace(en, citations=[]), ANGLE) == ""


def test_answer_sections_split_the_body_then_add_notes_and_footer():
    answer = Answer("q", "\n".join("line " + "w" * 90 for _ in range(30)), "en", True, [CITE], notes=["no LLM", "cached"])
    sections = chat.answer_sections(answer, ANGLE, 500)
    assert len(sections) > 4 and all(len(s) <= 500 for s in sections[:-1])
    assert sections[-2].endswith("<i>no LLM · cached</i>") and sections[-1].startswith("<b>Sources</b>")


# ---------------------------------------------------------------- events and follow-ups

def test_seen_events_drop_repeats_and_forget_the_oldest():
    seen = chat.SeenEvents(size=2)
    assert seen.first_time("a") and not seen.first_time("a")
    assert seen.first_time("b") and seen.first_time("c")  # "a" falls out
    assert seen.first_time("a") and not seen.first_time("c")
    assert seen.first_time(None) and seen.first_time(None) and seen.first_time("")  # no id: cannot be a repeat


def _hooks(**overrides) -> chat.Hooks:
    def refuse(*_a):
        raise AssertionError("not expected to be called")

    return replace(chat.Hooks("test", refuse, refuse, refuse, None), **overrides)


def test_first_to_take_asks_the_shared_store_only_for_new_events(caplog):
    claims: list[str] = []

    def claim(event_id: str) -> bool | None:
        claims.append(event_id)
        return {"mine": True, "theirs": False}.get(event_id)  # anything else: the store cannot say

    hooks, seen = _hooks(claim=claim), chat.SeenEvents()
    with caplog.at_level(logging.INFO, logger="assistant.interfaces.chat"):
        assert chat.first_to_take("mine", seen, hooks) and not chat.first_to_take("mine", seen, hooks)
        assert not chat.first_to_take("theirs", seen, hooks)
        assert chat.first_to_take("unknown", seen, hooks)
    assert claims == ["mine", "theirs", "unknown"]  # the repeat never reached the store
    assert "test event theirs was taken by another replica" in caplog.text
    assert chat.first_to_take("x", chat.SeenEvents(), _hooks())  # no store: the local check decides


def test_a_message_asking_for_the_other_language_asks_the_one_before_it_again():
    assert chat.thread_question("英文怎么说", ["vllm 启动报 OOM"]) == "vllm 启动报 OOM"
    assert chat.thread_question("in English please", ["q", "and with 0.95?"]) == "q\nand with 0.95?"
    assert [chat.language_request(m) for m in ("英文怎么说", "what about in English?", "中文呢", "English")] == ["en", "en", "zh", "en"]
    assert chat.language_request("how do I set the english tokenizer") is None and chat.language_request("英文文档在哪里") is None
    assert chat.thread_question("英文怎么说", []) == "英文怎么说"  # nothing before it: the message itself


def test_a_follow_up_carries_the_threads_first_question():
    assert chat.thread_question("and with MTP?", ["logprobs hang", "still hangs"]) == "logprobs hang\nand with MTP?"
    assert chat.thread_question("only", ["", "only"]) == "only"  # blanks and the question itself are not earlier questions
    assert chat.thread_question("q", []) == "q"
    # A chain of what-ifs keeps its middle change: "and with 32768?" after "and with 0.95?" was
    # computed at the first question's 0.9. A follow-up with no value ("still hangs") adds nothing.
    sizing = "H100 80GB, Llama-3-8B bf16, max-model-len 8192, how many concurrent requests fit?"
    chained = chat.thread_question("and with 32768?", [sizing, "and with 0.95?", "thanks"])
    assert chained == f"{sizing}\nand with 0.95?\nand with 32768?"
    assert chat.thread_question("and 9?", ["q", "and 1?", "and 2?", "and 3?", "and 4?"]) == "q\nand 2?\nand 3?\nand 4?\nand 9?"
    assert chat.thread_question("and 9?", ["q" * 8000, "and 1?"]).endswith("\nand 1?\nand 9?")
    # Only what-ifs: an observation in between made 16384 ambiguous (review).
    assert chat.thread_question("and with 16384?", [sizing, "and with 0.95?", "we see 30 requests waiting"]) == \
        f"{sizing}\nand with 0.95?\nand with 16384?"
    # After the asker switched subject, a follow-up leans on the switch, not on the first question (trial).
    switched = "换个问题：num_blocks_global 17131，平均 20k token，能并发多少"
    assert chat.thread_question("那如果平均 8k 呢", ["vllm CUDA OOM", switched, "谢谢"]) == f"{switched}\n那如果平均 8k 呢"
    # A long message is a question of its own (a chat UI keeps one conversation for hours),
    # and so is one naming its product; a short follow-up fits under the byte limit whole.
    assert chat.thread_question("b" * 5000, ["a" * 5000]) == "b" * 5000
    assert chat.thread_question("how do I set up prefix caching in FastDeploy?", ["vllm OOM"]) == \
        "how do I set up prefix caching in FastDeploy?"
    # Said to be a new subject: "separate thing: …" was answered with the thread's first question.
    for switch in ("ok thanks. separate thing: how do I get emergency GPU quota?", "换个问题，GPU 配额怎么申请",
                   "another question: how do I get emergency GPU quota?", "新问题：怎么申请紧急 GPU 配额？"):
        assert chat.thread_question(switch, ["why do answers stop at 512 tokens?"]) == switch
    for more in ("btw it still OOMs", "顺便问下，改成 0.95 会不会更好", "by the way, same error with --enforce-eager",
                 "could it be unrelated to the KV cache?"):  # review
        assert chat.thread_question(more, ["vLLM OOM at startup"]) == f"vLLM OOM at startup\n{more}"
    folded = chat.thread_question("接下来呢？", ["显" * 2720])
    assert folded.endswith("\n接下来呢？") and len(folded.encode("utf-8")) <= chat.MAX_QUESTION_BYTES


# ---------------------------------------------------------------- answering and feedback

def test_respond_answers_and_records_or_says_why_not():
    answer = Answer("q", "a", "en", True, [CITE])
    recorded: list[Answer] = []
    hooks = _hooks(answer=lambda q: replace(answer, question=q), record=lambda a: recorded.append(a) or "id-1")
    reply = chat.respond(hooks, "widget hangs")
    assert reply.answer is not None and reply.answer.question == "widget hangs" and reply.answer_id == "id-1" and recorded
    assert chat.respond(hooks, "").text.startswith("Ask me about")

    def broken(_q: str) -> Answer:
        raise AssistantError("the knowledge base is not available", "see the log")

    assert chat.respond(_hooks(answer=broken), "q").text == "Sorry, I could not answer: the knowledge base is not available"
    assert chat.respond(_hooks(answer=lambda q: 1 / 0), "q").text.endswith("something went wrong; the server log has details")


def test_feedback_reply_thanks_or_admits_the_store_is_down(caplog):
    got: list[tuple] = []
    hooks = _hooks(feedback=lambda *a: got.append(a))
    assert chat.feedback_reply(hooks, "id-1", 1, "U1") == "Thanks for the feedback!"
    assert "noted" in chat.feedback_reply(hooks, "id-1", -1, "U1")
    assert got == [("id-1", 1, "U1"), ("id-1", -1, "U1")]

    def down(*_a) -> None:
        raise AssistantError("feedback cannot be stored right now")

    assert chat.feedback_reply(_hooks(feedback=down), "id-1", 1, "U1") == "Sorry, that feedback could not be saved."
    assert "test feedback not saved: feedback cannot be stored right now" in caplog.text


class FakeStore:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def record_answer(self, answer, channel: str) -> str:
        self.calls.append(("record", answer.question, channel))
        return "id-9"

    def add_feedback(self, answer_id: str, rating: int, comment: str = "", user: str = "") -> None:
        self.calls.append(("feedback", answer_id, rating, comment, user))

    def claim_event(self, event_id: str) -> bool | None:
        self.calls.append(("claim", event_id))
        return True


def test_bind_answers_from_the_kb_as_a_remote_caller_and_stores_under_the_adapters_name(bundled_settings, bundled_kb, monkeypatch):
    import assistant.answer
    from assistant.tools import current_caller

    remote: list[bool] = []
    loading: list[bool] = []
    real_answer = assistant.answer.answer_question

    def observed(*args, **kwargs):
        remote.append(current_caller().remote)
        return real_answer(*args, **kwargs)

    monkeypatch.setattr(assistant.answer, "answer_question", observed)

    def kb():
        loading.append(current_caller().remote)
        return bundled_kb

    store = FakeStore()
    hooks = chat.bind(bundled_settings, kb, store, "discord")
    reply = chat.respond(hooks, "requests hang after I enabled logprobs")
    assert reply.answer is not None and reply.answer.citations and reply.answer_id == "id-9"
    assert remote == [True] and not current_caller().remote  # remote while answering, and only then
    assert loading == [False]  # the index is awaited before the answer (and its queue slot) begins
    assert hooks.claim("Ev1") is True and chat.feedback_reply(hooks, "id-9", -1, "U7")
    assert store.calls == [("record", "requests hang after I enabled logprobs", "discord"), ("claim", "Ev1"),
                           ("feedback", "id-9", -1, "", "U7")]


# ---------------------------------------------------------------- registration

class StandInState:
    """The slice of ServerState an adapter may use (chat.ServerSide)."""

    def __init__(self) -> None:
        self.store = FakeStore()

    def wait_loaded(self, timeout: float = 600):
        return None

    def slot(self, client: str, cost: int):
        from contextlib import nullcontext

        return nullcontext()


def _module(name: str, adapter: chat.ChatAdapter) -> types.ModuleType:
    module = types.ModuleType(name)
    module.ADAPTER = adapter
    return module


@pytest.fixture()
def registered(monkeypatch):
    """Two stand-in adapter modules added to the registry the way a real one is: by module
    name, imported by chat.adapters()."""
    ran: list[str] = []

    def mount_echo(app: FastAPI, settings: Settings, state: chat.ServerSide) -> None:
        @app.post("/echo/events")
        async def echo(body: dict) -> dict:
            return {"echo": body["text"], "stored": state.store.record_answer(Answer(body["text"], "", "en", True, []), "echo")}

    def mount_mute(app: FastAPI, settings: Settings, state: chat.ServerSide) -> None:
        @app.post("/mute/events")
        async def mute() -> dict:
            return {}

    echo = chat.ChatAdapter("echo", enabled=lambda s: s.slack_api_url == "echo-on", mount_http=mount_echo,
                            run=lambda s: ran.append(s.slack_api_url))
    mute = chat.ChatAdapter("mute", enabled=lambda s: False, mount_http=mount_mute)
    monkeypatch.setitem(sys.modules, "tests_chat_echo", _module("tests_chat_echo", echo))
    monkeypatch.setitem(sys.modules, "tests_chat_mute", _module("tests_chat_mute", mute))
    monkeypatch.setattr(chat, "ADAPTER_MODULES", chat.ADAPTER_MODULES + ("tests_chat_echo", "tests_chat_mute"))
    return ran


def test_an_enabled_adapter_is_mounted_and_answers_and_a_disabled_one_is_not(registered):
    app, state = FastAPI(), StandInState()
    assert chat.mount_enabled(app, replace(Settings(), slack_api_url="echo-on"), state) == ["echo"]
    with TestClient(app) as client:
        r = client.post("/echo/events", json={"text": "widget hangs"})
        assert r.status_code == 200 and r.json() == {"echo": "widget hangs", "stored": "id-9"}
        assert client.post("/mute/events").status_code == 404
        assert client.post("/slack/events").status_code == 404  # slack has no credentials here
    assert state.store.calls == [("record", "widget hangs", "echo")]

    off = FastAPI()
    assert chat.mount_enabled(off, Settings(), StandInState()) == []
    with TestClient(off) as client:
        assert client.post("/echo/events", json={"text": "x"}).status_code == 404


def test_run_adapter_runs_the_named_adapters_own_mode(registered):
    chat.run_adapter("echo", replace(Settings(), slack_api_url="ran"))
    assert registered == ["ran"]
    with pytest.raises(ConfigError, match="no mode of its own"):
        chat.run_adapter("mute", Settings())
    with pytest.raises(ConfigError, match="no chat adapter called 'nope'") as err:
        chat.run_adapter("nope", Settings())
    assert "slack" in err.value.hint and "echo" in err.value.hint


def test_slack_is_registered_and_mounted_only_with_its_token_and_secret():
    from assistant.interfaces import slack

    assert [a.name for a in chat.adapters()] == ["slack"] and chat.adapter("slack") is slack.ADAPTER
    assert slack.ADAPTER.run is slack.run_socket_mode and slack.ADAPTER.mount_http is slack.mount_http
    settings = Settings()
    assert not slack.ADAPTER.enabled(settings)
    assert not slack.ADAPTER.enabled(replace(settings, slack_bot_token="xoxb-1"))
    assert not slack.ADAPTER.enabled(replace(settings, slack_signing_secret="s"))
    assert slack.ADAPTER.enabled(replace(settings, slack_bot_token="xoxb-1", slack_signing_secret="s"))
