"""The Slack bot: the real Bolt app behind /slack/events, signed requests, and a Slack Web
API stand-in on 127.0.0.1 that records what the bot posts."""

import hashlib
import hmac
import json
import threading
import time
import urllib.parse
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from assistant.interfaces.http import create_app
from assistant.interfaces.slack import split_message, thread_question, to_mrkdwn

from .live_server import LiveServer

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


class SlackStandIn:
    """Answers the Web API methods the bot uses and records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.replies: list[dict] = []
        # method → scripted failures, used up one a call: (HTTP status, body, headers)
        self.fail: dict[str, list[tuple[int, dict, dict]]] = {}
        owner = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _handle(self, params: dict) -> None:
                method = self.path.split("/api/", 1)[-1].split("?", 1)[0]
                owner.calls.append((method, params))
                scripted = owner.fail.get(method)
                if scripted:
                    status, body, headers = scripted.pop(0)
                    data = json.dumps(body).encode()
                    self.send_response(status)
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                body = {"ok": True}
                if method == "chat.postMessage":
                    body.update(ts=f"{time.time():.6f}", channel=params.get("channel"))
                elif method == "conversations.replies":
                    body.update(messages=owner.replies)
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._handle(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query)))

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                if "json" in self.headers.get("Content-Type", ""):
                    params = json.loads(raw or "{}")
                else:
                    params = dict(urllib.parse.parse_qsl(raw))
                self._handle(params)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, method: str, count: int = 1, timeout: float = 30) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [p for m, p in self.calls if m == method]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"{method} called {len([1 for m, _ in self.calls if m == method])} times, wanted {count}: {self.calls}")


@pytest.fixture(scope="module")
def slack(bundled_settings, bundled_kb, tmp_path_factory):
    standin = SlackStandIn()
    settings = replace(bundled_settings, slack_bot_token="xoxb-test", slack_signing_secret=SECRET, slack_api_url=standin.url,
                       feedback_db=str(tmp_path_factory.mktemp("fb") / "f.sqlite3"))
    app = create_app(settings)
    with LiveServer(app) as live:
        yield live, standin, app
    standin.server.shutdown()


def _signed(body: str, *, secret: str = SECRET, age: int = 0, retry: int | None = None, content_type: str = "application/json") -> dict:
    ts = str(int(time.time()) - age)
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig, "Content-Type": content_type}
    if retry is not None:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    return headers


def _event(event: dict, event_id: str) -> str:
    return json.dumps({"token": "t", "team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": event_id,
                       "event_time": int(time.time()), "event": event, "authorizations": [{"user_id": "UBOT", "is_bot": True}]})


def test_mention_is_acknowledged_fast_and_answered_in_the_thread(slack):
    live, standin, _ = slack
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> requests hang after I enabled logprobs",
                   "ts": "1700000000.000100", "channel": "C1", "event_ts": "1700000000.000100"}, "Ev001")
    started = time.monotonic()
    r = httpx.post(live.url + "/slack/events", content=body, headers=_signed(body), timeout=10)
    assert r.status_code == 200 and time.monotonic() - started < 3.0
    reaction = standin.wait_for("reactions.add")[0]
    assert reaction["name"] == "eyes" and reaction["timestamp"] == "1700000000.000100"
    post = standin.wait_for("chat.postMessage")[-1]
    assert post["channel"] == "C1" and post["thread_ts"] == "1700000000.000100"
    text = "\n".join(b["text"]["text"] for b in post["blocks"] if b["type"] == "section")
    assert "kernel.msgmax=1048576" in text and "**" not in text and "*Sources*" in text
    actions = post["blocks"][-1]
    assert actions["type"] == "actions" and [e["action_id"] for e in actions["elements"]] == ["feedback_up", "feedback_down"]


def test_bad_signatures_and_stale_timestamps_are_rejected(slack):
    live, standin, _ = slack
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> hi", "ts": "1.2", "channel": "C1"}, "Ev-bad")
    assert httpx.post(live.url + "/slack/events", content=body, headers=_signed(body, secret="wrong")).status_code == 401
    assert httpx.post(live.url + "/slack/events", content=body, headers=_signed(body, age=6 * 60)).status_code == 401
    time.sleep(0.5)
    assert not [p for m, p in standin.calls if m == "chat.postMessage" and p.get("thread_ts") == "1.2"]


def test_slack_retries_of_a_handled_event_are_ignored(slack):
    live, standin, _ = slack
    event = {"type": "app_mention", "user": "U1", "text": "<@UBOT> NCCL error at startup", "ts": "1700000001.000200", "channel": "C2"}
    body = _event(event, "Ev002")
    assert httpx.post(live.url + "/slack/events", content=body, headers=_signed(body)).status_code == 200
    standin.wait_for("chat.postMessage")
    for retry in (1, 2):
        assert httpx.post(live.url + "/slack/events", content=body, headers=_signed(body, retry=retry)).status_code == 200
    time.sleep(1.5)
    posts = [p for m, p in standin.calls if m == "chat.postMessage" and p.get("thread_ts") == "1700000001.000200"]
    assert len(posts) == 1


def test_follow_up_in_a_thread_uses_the_earlier_question(slack):
    live, standin, _ = slack
    standin.replies = [
        {"user": "U1", "text": "<@UBOT> 开了 logprobs 以后请求卡住", "ts": "1700000002.000100"},
        {"bot_id": "B1", "text": "调大 kernel.msgmax …", "ts": "1700000002.000200"},
        {"user": "U1", "text": "<@UBOT> 在 docker 里怎么设置？", "ts": "1700000002.000300"},
    ]
    event = {"type": "app_mention", "user": "U1", "text": "<@UBOT> 在 docker 里怎么设置？", "ts": "1700000002.000300",
             "thread_ts": "1700000002.000100", "channel": "C3"}
    body = _event(event, "Ev003")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    post = [p for p in standin.wait_for("chat.postMessage", count=1) if p.get("channel") == "C3"]
    deadline = time.monotonic() + 20
    while not post and time.monotonic() < deadline:
        time.sleep(0.05)
        post = [p for m, p in standin.calls if m == "chat.postMessage" and p.get("channel") == "C3"]
    assert post[-1]["thread_ts"] == "1700000002.000100"
    text = "\n".join(b["text"]["text"] for b in post[-1]["blocks"] if b["type"] == "section")
    assert "--privileged" in text and "kernel.msgmax" in text


def test_direct_messages_are_answered_and_bot_messages_ignored(slack):
    live, standin, _ = slack
    dm = {"type": "message", "channel_type": "im", "user": "U9", "text": "Torch not compiled with CUDA enabled", "ts": "1700000003.000100", "channel": "D1"}
    body = _event(dm, "Ev004")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    own = dict(dm, bot_id="B1", ts="1700000003.000200", text="my own answer")
    body2 = _event(own, "Ev005")
    httpx.post(live.url + "/slack/events", content=body2, headers=_signed(body2))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not [p for m, p in standin.calls if m == "chat.postMessage" and p.get("channel") == "D1"]:
        time.sleep(0.05)
    time.sleep(0.5)
    posts = [p for m, p in standin.calls if m == "chat.postMessage" and p.get("channel") == "D1"]
    assert len(posts) == 1 and "pip uninstall torch" in json.dumps(posts[0]["blocks"])


def test_feedback_buttons_land_in_the_store(slack):
    live, standin, app = slack
    store = app.state.assistant.feedback
    answer_id = next(iter(json.loads(json.dumps(p["blocks"][-1]["elements"][1]["value"])) for m, p in standin.calls
                          if m == "chat.postMessage" and p.get("blocks")) or [None])
    payload = {"type": "block_actions", "user": {"id": "U1"}, "channel": {"id": "C1"}, "team": {"id": "T1"},
               "message": {"ts": "1700000000.000200", "thread_ts": "1700000000.000100"}, "trigger_id": "1.2",
               "actions": [{"action_id": "feedback_down", "block_id": "feedback", "value": answer_id, "type": "button", "action_ts": "1"}]}
    body = "payload=" + urllib.parse.quote(json.dumps(payload))
    r = httpx.post(live.url + "/slack/events", content=body, headers=_signed(body, content_type="application/x-www-form-urlencoded"))
    assert r.status_code == 200
    ephemeral = standin.wait_for("chat.postEphemeral")[-1]
    assert ephemeral["user"] == "U1" and "noted" in ephemeral["text"]
    assert any(d["id"] == f"feedback-{answer_id}" for d in store.export_negative())


def test_markdown_to_mrkdwn_and_message_splitting():
    md = "### Title\n\n**Likely cause** [1]\n\n| Cause | Why |\n|---|---|\n| a <b> | c |\n\n- item\n\n```\nsysctl -w kernel.msgmax=1048576\n```"
    out = to_mrkdwn(md)
    assert out.startswith("*Title*") and "*Likely cause* [1]" in out and "• a &lt;b&gt; — c" in out and "*Cause — Why*" in out and "• Cause" not in out
    assert "• item" in out and "```\nsysctl -w kernel.msgmax=1048576\n```" in out
    long = "\n".join(f"paragraph {i} " + "x" * 200 for i in range(60))
    pieces = split_message(long, 2900)
    assert len(pieces) > 3 and all(len(p) <= 2900 for p in pieces) and "".join(pieces).count("paragraph") == 60
    code = "```\n" + "\n".join("echo " + "y" * 100 for _ in range(80)) + "\n```"
    assert all(p.count("```") % 2 == 0 for p in split_message(code, 2900))
    assert thread_question("<@UBOT> and with MTP?", [{"user": "U1", "text": "<@UBOT> logprobs hang"}], "UBOT") == "logprobs hang\nand with MTP?"


# ---------------------------------------------------------------- malformed requests (issue 11, items 8 and 12)

def test_a_non_numeric_timestamp_is_refused_not_a_500(slack, caplog):
    live, standin, _ = slack
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> hi", "ts": "1.3", "channel": "C1"}, "Ev-ts")
    headers = dict(_signed(body), **{"X-Slack-Request-Timestamp": "soon"})
    r = httpx.post(live.url + "/slack/events", content=body, headers=headers, timeout=10)
    assert r.status_code == 401 and set(r.json()) == {"error", "hint"}
    assert "Traceback" not in caplog.text


def test_a_signed_body_that_is_not_json_gets_422(slack):
    live, _, _ = slack
    for body in ("{this is not json", "payload=%7Bbroken"):
        ctype = "application/json" if body.startswith("{") else "application/x-www-form-urlencoded"
        r = httpx.post(live.url + "/slack/events", content=body, headers=_signed(body, content_type=ctype), timeout=10)
        assert r.status_code == 422 and set(r.json()) == {"error", "hint"}, body
    raw = b'{"type": "event_callback", "x": "\xff"}'
    ts = str(int(time.time()))
    sig = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:".encode() + raw, hashlib.sha256).hexdigest()
    r = httpx.post(live.url + "/slack/events", content=raw, headers={"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig,
                                                                      "Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 422


@pytest.mark.parametrize("event", [
    {"type": "app_mention", "user": "U1", "text": "<@UBOT> NCCL error", "ts": "1700000009.000100"},  # no channel
    {"type": "app_mention", "user": "U1", "text": "<@UBOT> NCCL error", "ts": "yesterday", "channel": "C9"},
    {"type": "app_mention", "user": "U1", "text": ["not", "text"], "ts": "1700000009.000300", "channel": "C9"},
], ids=["no-channel", "bad-ts", "text-not-string"])
def test_malformed_events_are_ignored_with_200_and_a_log_line(slack, caplog, event):
    live, standin, _ = slack
    body = _event(event, f"Ev-bad-{event['ts']}")
    r = httpx.post(live.url + "/slack/events", content=body, headers=_signed(body), timeout=10)
    assert r.status_code == 200
    time.sleep(0.5)
    assert not [p for m, p in standin.calls if p.get("channel") == "C9" or p.get("timestamp") == event["ts"]]
    assert "ignored a malformed Slack event" in caplog.text and "Traceback" not in caplog.text


def test_links_in_long_bracket_runs_format_in_linear_time():
    started = time.perf_counter()
    out = to_mrkdwn("[" * 8000 + "x](http://e.x)")
    assert time.perf_counter() - started < 0.05 and out.endswith("<http://e.x|x>")


def test_slack_answers_wait_in_the_servers_answer_queue(slack):
    """A Slack question takes an answer slot like an HTTP request does, so a burst on Slack
    cannot run more answers at once than the server allows."""
    live, standin, app = slack
    registry = app.state.assistant.metrics.registry
    before = registry.get_sample_value("assistant_queue_wait_seconds_count") or 0.0
    dm = {"type": "message", "channel_type": "im", "user": "U7", "text": "NCCL error when starting on 4 GPUs",
          "ts": "1700000009.000100", "channel": "D7"}
    body = _event(dm, "Ev009")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not [p for m, p in standin.calls if m == "chat.postMessage" and p.get("channel") == "D7"]:
        time.sleep(0.05)
    assert [p for m, p in standin.calls if m == "chat.postMessage" and p.get("channel") == "D7"]
    assert registry.get_sample_value("assistant_queue_wait_seconds_count") == before + 1


def test_building_the_bot_does_not_warn_about_its_own_token(monkeypatch, caplog):
    """Bolt reads SLACK_BOT_TOKEN too and warned on every start that the client's token (the
    same one) wins over it."""
    import logging
    from dataclasses import replace as _replace

    from assistant.config import Settings
    from assistant.interfaces import chat
    from assistant.interfaces.slack import build_app

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    never = lambda *_a: None  # noqa: E731
    settings = _replace(Settings(), slack_bot_token="xoxb-test", slack_signing_secret="s", slack_api_url="http://127.0.0.1:9/api/")
    with caplog.at_level(logging.WARNING):
        build_app(settings, chat.Hooks("slack", never, never, never, None))
    assert "will be unused" not in caplog.text


def _posts(standin: SlackStandIn, channel: str, count: int = 1, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for m, p in standin.calls if m == "chat.postMessage" and p.get("channel") == channel]
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} posts in {channel}: {standin.calls[-5:]}")


def _text_of(post: dict) -> str:
    return "\n".join(b["text"]["text"] for b in post.get("blocks", []) if b["type"] == "section") or post.get("text", "")


def test_a_rate_limited_post_is_retried_and_a_refused_one_is_said(slack):
    """One 429 on chat.postMessage lost the answer, 👀 left on the question (trial): the
    client now waits out Retry-After, and an answer Slack still refuses is said in one line."""
    live, standin, _ = slack
    standin.fail["chat.postMessage"] = [(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"})]
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> NCCL error at startup on 4 GPUs",
                   "ts": "1700000010.000100", "channel": "C10"}, "Ev010")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    posts = _posts(standin, "C10", count=2)
    assert "NCCL" in _text_of(posts[-1]) and posts[-1]["blocks"][-1]["type"] == "actions"

    standin.fail["chat.postMessage"] = [(200, {"ok": False, "error": "invalid_blocks"}, {})]
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> NCCL error at startup on 4 GPUs",
                   "ts": "1700000011.000100", "channel": "C11"}, "Ev011")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    posts = _posts(standin, "C11", count=2)
    assert "could not be posted (Slack said invalid_blocks)" in posts[-1]["text"] and posts[-1]["thread_ts"] == "1700000011.000100"


def test_a_pasted_log_over_the_limit_is_answered_from_its_tail(slack):
    """A 10 kB log pasted into Slack got "the question is 10283 bytes; the limit is 8192" and
    no answer, while `ask -` answered it (trial)."""
    live, standin, _ = slack
    lines = [f"INFO 12-07 10:00:{i % 60:02d} engine.py:300] Avg prompt throughput: {i}.0 tokens/s, Running: 4 reqs" for i in range(150)]
    log = "\n".join(lines + ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"])
    text = "<@UBOT> 线上 vLLM 挂了，日志如下：\n```\n" + log + "\n```\n怎么办？"
    assert len(text.encode()) > 10_000
    body = _event({"type": "app_mention", "user": "U1", "text": text, "ts": "1700000012.000100", "channel": "C12"}, "Ev012")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    answer = _text_of(_posts(standin, "C12")[-1])
    assert "could not answer" not in answer and "out of memory" in answer.lower()
    assert "只按开头 1 行和最后" in answer and "字节的上限" in answer  # the note, in the asker's language


def test_tried_that_in_a_slack_thread_is_told_the_fix_it_tried(slack):
    """"试过了，还是不行" in a thread got the first answer word for word; only the OpenAI-style
    endpoint noted what was tried (trial). The bot's earlier answer is read from its blocks."""
    live, standin, _ = slack
    first = "<@UBOT> vllm 日志里一直刷 PreemptionMode.RECOMPUTE"
    body = _event({"type": "app_mention", "user": "U1", "text": first, "ts": "1700000013.000100", "channel": "C13"}, "Ev013")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    answer = _posts(standin, "C13")[-1]
    standin.replies = [{"user": "U1", "text": first, "ts": "1700000013.000100"},
                       {"bot_id": "B1", "text": answer["text"], "blocks": answer["blocks"], "ts": "1700000013.000200"},
                       {"user": "U1", "text": "<@UBOT> 试过了，还是不行", "ts": "1700000013.000300"}]
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> 试过了，还是不行", "ts": "1700000013.000300",
                   "thread_ts": "1700000013.000100", "channel": "C13"}, "Ev014")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    second = _text_of(_posts(standin, "C13", count=2)[-1])
    head = second.split("*可能原因*")[0]
    assert second != _text_of(answer) and "已经试过" in head and "`gpu_memory_utilization`" in head, head
    standin.replies = []


def test_asking_for_english_in_a_thread_answers_the_question_before_it_in_english(slack):
    """"英文怎么说" in a thread got the same Chinese answer; only the OpenAI-style route passed the
    language (review)."""
    live, standin, _ = slack
    first = "<@UBOT> vllm 跑 Qwen2.5-14B，A100 40G，启动报 CUDA out of memory"
    standin.replies = [{"user": "U1", "text": first, "ts": "1700000021.000100"},
                       {"bot_id": "B1", "text": "…", "ts": "1700000021.000200"},
                       {"user": "U1", "text": "<@UBOT> 英文怎么说", "ts": "1700000021.000300"}]
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> 英文怎么说", "ts": "1700000021.000300",
                   "thread_ts": "1700000021.000100", "channel": "C21"}, "Ev021")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    text = _text_of(_posts(standin, "C21")[-1])
    assert "vLLM: CUDA out of memory" in text and "显存" not in text, text[:300]
    standin.replies = []


def test_an_unreadable_thread_is_said_and_slack_markup_is_not_searched(slack):
    """A 429 on conversations.replies answered a follow-up without its context, silently; and
    Slack's link, channel and escape markup went into the question (trial)."""
    from assistant.interfaces.slack import plain_text

    live, standin, _ = slack
    standin.fail["conversations.replies"] = [(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "0"})] * 5
    body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> and with MTP?", "ts": "1700000015.000300",
                   "thread_ts": "1700000015.000100", "channel": "C15"}, "Ev015")
    httpx.post(live.url + "/slack/events", content=body, headers=_signed(body))
    assert "could not read the thread's earlier messages" in _text_of(_posts(standin, "C15")[-1])
    standin.fail.pop("conversations.replies", None)
    said = "following <https://docs.vllm.ai/en/latest/|the docs> in <#C0123|oncall-vllm>, OOM &amp; crash &lt;- why? <!here> <@U1|bob>"
    assert plain_text(said) == "following the docs in #oncall-vllm, OOM & crash <- why?"
    assert plain_text("see <https://wiki.example.com/gpu>") == "see https://wiki.example.com/gpu"
    assert plain_text("<#C1|chan>") == "#chan" and plain_text("x\ud800y") == "x?y"


def test_runbook_commands_links_and_long_lines_survive_mrkdwn():
    """A team's runbook table row `kubectl logs … \\| grep -i error` became two cells, a link
    whose URL ends in "(metrics)" lost its ")", an autolink showed as "&lt;https://…&gt;",
    *italic* became bold, and a long line was cut inside "&amp;" (trial)."""
    md = ("| Check | Command |\n|---|---|\n| grep errors | `kubectl logs ds/nvidia-dcgm-exporter \\| grep -i error` |\n\n"
          "See [DCGM](https://docs.nvidia.com/dcgm/feature-overview.html#profiling_(metrics)) and <https://wiki.example.com/gpu>. "
          "This is *important*; **set `--max-model-len`**; `a*b*c` and 2 * 3 stay.")
    out = to_mrkdwn(md)
    assert "• grep errors — `kubectl logs ds/nvidia-dcgm-exporter | grep -i error`" in out
    assert "<https://docs.nvidia.com/dcgm/feature-overview.html#profiling_(metrics)|DCGM>" in out
    assert "<https://wiki.example.com/gpu|https://wiki.example.com/gpu>" in out and "&lt;https" not in out
    assert "_important_" in out and "*set `--max-model-len`*" in out and "`a*b*c` and 2 * 3 stay" in out
    pieces = split_message("word &amp; " * 400, 300)
    assert all(len(p) <= 300 for p in pieces) and not any(p.endswith(("&", "&a", "&am", "&amp")) for p in pieces)
    assert "".join(pieces).count("&amp;") == 400


def test_the_bot_token_is_checked_at_start_and_a_refused_one_is_said(slack, bundled_settings, caplog):
    """Bolt checked the token on the first event: that event's ack waited on auth.test (6 s),
    and a refused token dropped every mention with no line in the log; /readyz said ready
    (trial). A wrong app token in Socket Mode was "internal error … (please report this)"."""
    from dataclasses import replace as _replace

    from assistant.interfaces import chat
    from assistant.interfaces.slack import build_app, check_token, run_socket_mode
    from oncall_common.errors import ConfigError

    live, standin, _ = slack
    deadline = time.monotonic() + 10
    while httpx.get(live.url + "/readyz").json().get("slack", {}).get("token") == "checking" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert httpx.get(live.url + "/readyz").json()["slack"] == {"token": "ok"}
    never = lambda *_a: None  # noqa: E731
    settings = _replace(bundled_settings, slack_bot_token="xoxb-wrong", slack_signing_secret="s", slack_api_url=standin.url,
                        slack_app_token="xapp-wrong", feedback_db=bundled_settings.feedback_db)
    standin.fail["auth.test"] = [(200, {"ok": False, "error": "invalid_auth"}, {})]
    status: dict = {}
    assert check_token(build_app(settings, chat.Hooks("slack", never, never, never, None)), status) == "invalid_auth"
    assert status == {"token": "refused (invalid_auth)"} and "Slack refused SLACK_BOT_TOKEN (invalid_auth)" in caplog.text
    standin.fail["apps.connections.open"] = [(200, {"ok": False, "error": "invalid_auth"}, {})]
    with pytest.raises(ConfigError, match=r"Slack refused SLACK_APP_TOKEN \(invalid_auth\)"):
        run_socket_mode(settings)


def test_review_of_the_slack_changes():
    """A long paste kept the log's closing fence, not its opening one, so the question after it
    was read as code; a private-use character crashed rendering; globs became italics; the
    autolink pattern was quadratic; a bold bullet ended the Fix section."""
    from assistant.cleaning import split_question
    from assistant.interfaces.chat import tried_first_fix
    from assistant.questions import head_and_tail

    log = "\n".join(f"INFO line {i} " + "x" * 60 for i in range(200))
    msg = f"vLLM 挂了，日志如下：\n```\n{log}\ntorch.OutOfMemoryError: CUDA out of memory\n```\nonly since I enabled speculative decoding, why?"
    kept = head_and_tail(msg, 8192)
    assert len(kept.text.encode()) <= 8192 and kept.head_lines == 1
    parts = split_question(kept.text)
    assert parts.prose == ["vLLM 挂了，日志如下：", "only since I enabled speculative decoding, why?"]
    assert parts.errors == ["torch.OutOfMemoryError: CUDA out of memory"]
    assert to_mrkdwn("set `--x`\ue0019\ue001 now") == "set `--x`9 now"
    assert to_mrkdwn("Check /sys/class/*/device/*/numa_node") == "Check /sys/class/*/device/*/numa_node"
    started = time.perf_counter()
    to_mrkdwn("<https://" * 12000)
    assert time.perf_counter() - started < 0.5
    assert to_mrkdwn("<https://evil|https://good>") == "&lt;https://evil|https://good&gt;"  # no link shown as another
    assert tried_first_fix("**Fix** [1]\n\n* **Lower** `--max-num-seqs` to 64 [1]") == "--max-num-seqs"
    assert to_mrkdwn("This is *important*. And *x*, in /sys/class/*/device/*") == "This is _important_. And _x_, in /sys/class/*/device/*"
    # an unfenced log: its first INFO lines are no head; the traceback stays (second review)
    lines = [f"2024-05-01 12:00:{i % 60:02d} INFO engine.py:0 step {i} " + "y" * 80 for i in range(300)]
    unfenced = "\n".join(lines + ["torch.OutOfMemoryError: CUDA out of memory"] + lines[:60] + ["why does this happen?"])
    kept = head_and_tail(unfenced, 8192)
    assert kept.head_lines == 0 and "OutOfMemoryError" in kept.text and kept.text.endswith("why does this happen?")
    # a few bytes over with an indented rest: still cut, never passed on whole (second review)
    over = "why?\n" + "\n".join("        File x.py, line 1" for _ in range(315))
    over += "x" * (8195 - len(over.encode()))  # 3 bytes over, its rest "fitting" once stripped of its indent
    cut = head_and_tail(over, 8192)
    assert len(over.encode()) == 8195 and cut is not None and len(cut.text.encode()) <= 8192


def test_a_slack_outage_at_start_is_no_refused_token(slack, bundled_settings):
    """A 503 (or a proxy's page) on auth.test stopped Socket Mode as "Slack refused the token"
    and showed the page's HTML on /readyz (review)."""
    from dataclasses import replace as _replace

    from assistant.interfaces import chat
    from assistant.interfaces.slack import build_app, check_token

    _, standin, _ = slack
    never = lambda *_a: None  # noqa: E731
    settings = _replace(bundled_settings, slack_bot_token="xoxb-x", slack_signing_secret="s", slack_api_url=standin.url)
    standin.fail["auth.test"] = [(503, {"html": "<html>503</html>"}, {})] * 4
    status: dict = {}
    assert check_token(build_app(settings, chat.Hooks("slack", never, never, never, None)), status) is None
    assert status["token"].startswith("unchecked (") and "<" not in status["token"]
    standin.fail.pop("auth.test", None)
