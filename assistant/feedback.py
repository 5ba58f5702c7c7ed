"""Answers and 👍/👎 feedback in SQLite, and export of 👎 answers as draft eval cases.

Every answer served over HTTP, the page or Slack is recorded with an id, so feedback can
point at exactly what the person saw (question, answer, citations). A maintainer turns the
👎 ones into eval cases with `assistant feedback export`, filling in `expect`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from pathlib import Path

from .answer import Answer
from .errors import AssistantError

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    id TEXT PRIMARY KEY, created REAL NOT NULL, channel TEXT NOT NULL, question TEXT NOT NULL,
    lang TEXT, answer TEXT NOT NULL, grounded INTEGER, backend TEXT, citations TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT, answer_id TEXT NOT NULL REFERENCES answers(id),
    created REAL NOT NULL, rating INTEGER NOT NULL CHECK (rating IN (-1, 1)), comment TEXT, user TEXT
);
CREATE INDEX IF NOT EXISTS answers_created ON answers(created);
CREATE INDEX IF NOT EXISTS feedback_answer ON feedback(answer_id);
"""
RETRY_SECONDS = 30.0  # how often an unavailable store tries to open again
PRUNE_EVERY = 500  # answers recorded between two prunes


class FeedbackUnavailable(AssistantError):
    """The store cannot be written (locked, read-only, corrupt): feedback is lost, answers are not."""


class FeedbackStore:
    """One connection per thread; SQLite serialises writers, WAL lets readers in.

    Recording is best-effort: a locked, read-only or corrupt database costs an answer at most
    `timeout` seconds and a logged warning, never the answer itself, and never stops the
    server from starting. An unavailable store tries again every RETRY_SECONDS.
    """

    def __init__(self, path: Path, timeout: float = 0.5, retention_days: float = 90.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.retention_days = retention_days
        self._local = threading.local()
        self._lock = threading.Lock()
        self._ready = False
        self._failed_at = -RETRY_SECONDS
        self._recorded = 0
        self._ensure()

    @property
    def available(self) -> bool:
        return self._ready

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.timeout)
            conn.execute("PRAGMA journal_mode=WAL")
            self._local.conn = conn
        return conn

    def _drop_conn(self) -> None:
        """Forget this thread's connection after an error; the next use opens a fresh one."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def _ensure(self) -> bool:
        """Create the schema once (and prune); retried at most every RETRY_SECONDS after a failure."""
        if self._ready:
            return True
        with self._lock:
            if self._ready or time.monotonic() - self._failed_at < RETRY_SECONDS:
                return self._ready
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self._conn() as conn:
                    conn.executescript(SCHEMA)
                self._ready = True
            except (OSError, sqlite3.Error) as exc:
                self._drop_conn()
                self._failed_at = time.monotonic()
                log.warning("feedback store %s is unavailable (%s: %s); answers are served but not recorded",
                            self.path, type(exc).__name__, exc)
                return False
        self.prune()
        return True

    def record_answer(self, answer: Answer, channel: str) -> str:
        """Store the answer and return its id. Never raises: answering must not depend on it."""
        answer_id = uuid.uuid4().hex[:16]
        if not self._ensure():
            return answer_id
        cites = json.dumps([{"id": c.id, "title": c.title, "source": c.source, "section": c.section} for c in answer.citations], ensure_ascii=False)
        try:
            with self._conn() as conn:
                conn.execute("INSERT INTO answers VALUES (?,?,?,?,?,?,?,?,?)",
                             (answer_id, time.time(), channel, answer.question, answer.lang, answer.answer, int(answer.grounded), answer.backend, cites))
        except (sqlite3.Error, ValueError) as exc:  # ValueError: text SQLite cannot encode
            self._drop_conn()
            log.warning("answer %s not recorded in %s: %s: %s", answer_id, self.path, type(exc).__name__, exc)
            return answer_id
        self._recorded += 1
        if self._recorded % PRUNE_EVERY == 0:
            self.prune()
        return answer_id

    def add_feedback(self, answer_id: str, rating: int, comment: str = "", user: str = "") -> None:
        if rating not in (-1, 1):
            raise AssistantError("rating must be 1 (👍) or -1 (👎)")
        if not self._ensure():
            raise FeedbackUnavailable("feedback cannot be stored right now", "try again later; the server log says why")
        try:
            with self._conn() as conn:
                if conn.execute("SELECT 1 FROM answers WHERE id = ?", (answer_id,)).fetchone() is None:
                    raise AssistantError(f"no answer with id {answer_id[:64]!r}")
                conn.execute("INSERT INTO feedback (answer_id, created, rating, comment, user) VALUES (?,?,?,?,?)",
                             (answer_id, time.time(), rating, comment[:2000], user[:200]))
        except (sqlite3.Error, ValueError) as exc:
            self._drop_conn()
            log.warning("feedback for %s not stored in %s: %s: %s", answer_id[:64], self.path, type(exc).__name__, exc)
            raise FeedbackUnavailable("feedback cannot be stored right now", "try again later; the server log says why") from exc

    def prune(self, now: float | None = None) -> int:
        """Delete answers older than the retention period that nobody rated; returns how many.
        Rated answers stay: they are what `feedback export` turns into eval cases."""
        if self.retention_days <= 0 or not self._ready:
            return 0
        cutoff = (time.time() if now is None else now) - self.retention_days * 86400
        try:
            with self._conn() as conn:
                cur = conn.execute("DELETE FROM answers WHERE created < ? AND NOT EXISTS "
                                   "(SELECT 1 FROM feedback f WHERE f.answer_id = answers.id)", (cutoff,))
            removed = cur.rowcount
        except sqlite3.Error as exc:
            self._drop_conn()
            log.warning("could not prune old answers in %s: %s", self.path, exc)
            return 0
        if removed:
            log.info("pruned %d unrated answers older than %g days", removed, self.retention_days)
        return removed

    def _readable(self) -> sqlite3.Connection:
        if not self._ensure():
            raise FeedbackUnavailable(f"the feedback store {self.path} cannot be opened", "the warning above says why")
        return self._conn()

    def counts(self) -> dict[str, int]:
        row = self._readable().execute("SELECT COALESCE(SUM(rating = 1), 0), COALESCE(SUM(rating = -1), 0) FROM feedback").fetchone()
        return {"up": int(row[0]), "down": int(row[1])}

    def export_negative(self) -> list[dict]:
        """👎 answers as draft eval cases (eval/cases.jsonl format; `expect` left to fill in)."""
        rows = self._readable().execute(
            "SELECT a.id, a.lang, a.question, a.answer, a.citations, group_concat(f.comment, ' | ') "
            "FROM feedback f JOIN answers a ON a.id = f.answer_id WHERE f.rating = -1 "
            "GROUP BY a.id ORDER BY min(f.created)").fetchall()
        cases = []
        for answer_id, lang, question, answer, citations, comments in rows:
            cases.append({
                "id": f"feedback-{answer_id}", "lang": lang or "en", "kind": "feedback", "question": question,
                "expect": [], "grounded": True,
                "draft": {"comments": comments or "", "answer_given": answer[:1000], "cited": [c["id"] for c in json.loads(citations)],
                          "todo": "fill expect with the fix strings the answer should contain; set grounded false if out of scope"},
            })
        return cases
