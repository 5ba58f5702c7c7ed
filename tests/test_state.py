"""The state store (assistant/ops/store.py) on SQLite and on a real PostgreSQL: migrations,
answers and feedback, Slack event claims, and two `assistant serve` replicas sharing it.

PostgreSQL comes from ASSISTANT_TEST_POSTGRES_URL, which `.ci/run` sets after starting a
throwaway server with `.ci/postgres start`; without it those tests are skipped."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from assistant.answer import Answer, Citation
from oncall_common.errors import AssistantError
from assistant.ops.store import SCHEMA_VERSION, FeedbackUnavailable, StateStore, dialect_for, open_state, redact

from .test_serving import _serve, _stop
from .live_server import free_port

PG_URL = os.environ.get("ASSISTANT_TEST_POSTGRES_URL", "")
needs_pg = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL: set ASSISTANT_TEST_POSTGRES_URL (.ci/run starts one with .ci/postgres)")
CITE = Citation("vllm-cuda-oom", "vLLM: CUDA out of memory > Fixes", "en/vllm-cuda-oom.md", "Fixes", "en", 0.9, "…")


def _fresh_pg_database() -> str:
    """A new, empty database on the test server, so each test starts from nothing."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return PG_URL.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_pg)])
def url(request, tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'state.sqlite3'}" if request.param == "sqlite" else _fresh_pg_database()


def _store(url: str, **kw) -> StateStore:
    return StateStore(dialect_for(url, Path("/nonexistent"), 2.0), timeout=2.0, **kw)


def test_migrations_are_versioned_and_idempotent(url):
    first = _store(url)
    assert first.available and first.schema_version() == SCHEMA_VERSION
    answer_id = first.record_answer(Answer("q", "a", "en", True, [CITE]), "http", "ip-abc")
    again = _store(url)  # a restart, or a second replica: nothing to apply, nothing lost
    rows = again._run("SELECT version, description FROM schema_version ORDER BY version", fetch="all")
    assert [r[0] for r in rows] == list(range(1, SCHEMA_VERSION + 1)) and all(r[1] for r in rows)
    assert again._run("SELECT client FROM answers WHERE id = ?", (answer_id,), fetch="one")[0] == "ip-abc"


def test_a_database_from_before_versioning_is_migrated_in_place(tmp_path):
    db = tmp_path / "feedback.sqlite3"
    with sqlite3.connect(db) as conn:  # what the store created before schema_version existed
        conn.executescript("""
            CREATE TABLE answers (id TEXT PRIMARY KEY, created REAL NOT NULL, channel TEXT NOT NULL, question TEXT NOT NULL,
                                  lang TEXT, answer TEXT NOT NULL, grounded INTEGER, backend TEXT, citations TEXT NOT NULL);
            CREATE TABLE feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, answer_id TEXT NOT NULL REFERENCES answers(id),
                                   created REAL NOT NULL, rating INTEGER NOT NULL CHECK (rating IN (-1, 1)), comment TEXT, user TEXT);
            INSERT INTO answers VALUES ('old1', 1.0e12, 'http', 'NCCL error', 'en', 'set NCCL_P2P_DISABLE=1', 1, 'extractive', '[]');
            INSERT INTO feedback (answer_id, created, rating, comment, user) VALUES ('old1', 1.0e12, -1, 'too short', 'anonymous');
        """)
    store = _store(f"sqlite:///{db}")
    assert store.schema_version() == SCHEMA_VERSION
    assert [c["id"] for c in store.export_negative()] == ["feedback-old1"]
    assert store.claim_event("Ev1") is True


def test_answers_feedback_and_export(url):
    store = _store(url)
    liked = store.record_answer(Answer("NCCL error", "…", "en", True, [CITE]), "http")
    disliked = store.record_answer(Answer("显存又爆了", "调低 max-model-len", "zh", True, [CITE]), "slack")
    store.add_feedback(liked, 1)
    store.add_feedback(disliked, -1, "没有提到 swap-space", "token-abc")
    store.add_feedback(disliked, -1, "and no example", "U1")
    with pytest.raises(AssistantError, match="no answer with id"):
        store.add_feedback("nope", 1)
    assert store.counts() == {"up": 1, "down": 2}
    (case,) = store.export_negative()
    assert case["question"] == "显存又爆了" and "swap-space" in case["draft"]["comments"] and "no example" in case["draft"]["comments"]
    assert case["draft"]["cited"] == ["vllm-cuda-oom"]


def test_a_slack_event_is_claimed_by_exactly_one_of_several_stores(url):
    stores = [_store(url) for _ in range(3)]  # three replicas' connections
    results: list = []
    barrier = threading.Barrier(9)

    def claim(store: StateStore) -> None:
        barrier.wait()
        results.append(store.claim_event("Ev-shared-1"))

    threads = [threading.Thread(target=claim, args=(s,)) for s in stores for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 8 + [True]
    assert stores[0].claim_event("Ev-other") is True and stores[1].claim_event("Ev-other") is False


def test_old_event_ids_are_pruned(url):
    store = _store(url)
    store.claim_event("Ev-old")
    store._run("UPDATE events SET created = ? WHERE id = ?", (time.time() - 3 * 86400, "Ev-old"))
    store.prune()
    assert store.claim_event("Ev-old") is True  # forgotten after a day: Slack stopped retrying long ago


@needs_pg
def test_replicas_migrating_at_once_agree(tmp_path):
    url = _fresh_pg_database()
    stores: list = []
    barrier = threading.Barrier(4)

    def start() -> None:
        barrier.wait()
        stores.append(_store(url))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s.available for s in stores)
    assert [r[0] for r in stores[0]._run("SELECT version FROM schema_version ORDER BY version", fetch="all")] == list(range(1, SCHEMA_VERSION + 1))


def test_an_unreachable_postgres_costs_an_answer_nothing_and_its_password_stays_out_of_the_logs(caplog):
    port = free_port()  # nothing listens there
    url = f"postgresql://assistant:hunter2-secret@127.0.0.1:{port}/db"
    caplog.set_level(logging.WARNING)
    started = time.monotonic()
    store = StateStore(dialect_for(url, Path("/nonexistent"), 0.5), timeout=0.5)
    answer_id = store.record_answer(Answer("q", "a", "en", True, []), "http")
    elapsed = time.monotonic() - started
    assert not store.available and len(answer_id) == 16 and elapsed < 5
    with pytest.raises(FeedbackUnavailable):
        store.add_feedback(answer_id, 1)
    assert store.claim_event("Ev") is None  # cannot tell: the bot falls back to what it saw itself
    assert "hunter2" not in caplog.text and "feedback store" in caplog.text
    assert redact(url) == f"postgresql://assistant:***@127.0.0.1:{port}/db"
    assert "hunter2" not in redact("host=h password=hunter2 dbname=d")


def test_an_unknown_state_url_is_a_config_error(tiny_settings):
    from oncall_common.errors import ConfigError

    with pytest.raises(ConfigError, match="not a store I know"):
        open_state(replace(tiny_settings, state_url="mysql://u:pw@h/db"))


@needs_pg
def test_two_serve_replicas_share_postgres_and_answer_a_slack_event_once(bundled_env, tmp_path):
    from .test_slack import SECRET, SlackStandIn, _event, _signed

    url = _fresh_pg_database()
    standin = SlackStandIn()
    env = dict(bundled_env, ASSISTANT_STATE_URL=url, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
               ASSISTANT_SLACK_API_URL=standin.url)
    ports = [free_port(), free_port()]
    procs = [_serve([], env, port) for port in ports]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    try:
        for base in urls:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a replica did not start"
                time.sleep(0.1)
        # The same event delivered to both replicas at once (a retry that reached the other one).
        body = _event({"type": "app_mention", "user": "U1", "text": "<@UBOT> NCCL error at startup", "ts": "1700000042.000100",
                       "channel": "CR"}, "Ev-replicas-1")
        barrier = threading.Barrier(2)
        codes: list[int] = []

        def deliver(base: str) -> None:
            barrier.wait()
            codes.append(httpx.post(base + "/slack/events", content=body, headers=_signed(body), timeout=10).status_code)

        threads = [threading.Thread(target=deliver, args=(base,)) for base in urls]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        standin.wait_for("chat.postMessage")
        time.sleep(2.0)  # room for a second answer, were there one
        posts = [p for m, p in standin.calls if m == "chat.postMessage" and p.get("channel") == "CR"]
        # An answer made by one replica takes feedback through the other.
        answer = httpx.post(urls[0] + "/v1/ask", json={"question": "vLLM CUDA out of memory", "llm": False}, timeout=30).json()
        fb = httpx.post(urls[1] + "/v1/feedback", json={"answer_id": answer["id"], "rating": -1, "comment": "from replica 2"}, timeout=10)
        ready = httpx.get(urls[1] + "/readyz", timeout=10).json()
    finally:
        errs = [_stop(p) for p in procs]
        standin.server.shutdown()
    assert codes == [200, 200]
    assert len(posts) == 1, posts
    assert fb.status_code == 200, fb.text
    assert ready["state"] == "postgresql" and ready["feedback"] == "ok"
    drafts = _store(url).export_negative()
    assert [d["question"] for d in drafts] == ["vLLM CUDA out of memory"] and "replica 2" in drafts[0]["draft"]["comments"]
    assert not any("Traceback" in e for e in errs), errs
