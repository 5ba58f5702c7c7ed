"""Answers and 👍/👎 feedback in SQLite, and export of 👎 answers as draft eval cases.

Every answer served over HTTP, the page or Slack is recorded with an id, so feedback can
point at exactly what the person saw (question, answer, citations). A maintainer turns the
👎 ones into eval cases with `assistant feedback export`, filling in `expect`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from pathlib import Path

from .answer import Answer
from .errors import AssistantError

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    id TEXT PRIMARY KEY, created REAL NOT NULL, channel TEXT NOT NULL, question TEXT NOT NULL,
    lang TEXT, answer TEXT NOT NULL, grounded INTEGER, backend TEXT, citations TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT, answer_id TEXT NOT NULL REFERENCES answers(id),
    created REAL NOT NULL, rating INTEGER NOT NULL CHECK (rating IN (-1, 1)), comment TEXT, user TEXT
);
"""


class FeedbackStore:
    """One connection per thread; SQLite serialises writers, WAL lets readers in."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as conn:
            conn.executescript(SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=10)
            conn.execute("PRAGMA journal_mode=WAL")
            self._local.conn = conn
        return conn

    def record_answer(self, answer: Answer, channel: str) -> str:
        answer_id = uuid.uuid4().hex[:16]
        cites = json.dumps([{"id": c.id, "title": c.title, "source": c.source, "section": c.section} for c in answer.citations], ensure_ascii=False)
        with self._conn() as conn:
            conn.execute("INSERT INTO answers VALUES (?,?,?,?,?,?,?,?,?)",
                         (answer_id, time.time(), channel, answer.question, answer.lang, answer.answer, int(answer.grounded), answer.backend, cites))
        return answer_id

    def add_feedback(self, answer_id: str, rating: int, comment: str = "", user: str = "") -> None:
        if rating not in (-1, 1):
            raise AssistantError("rating must be 1 (👍) or -1 (👎)")
        with self._conn() as conn:
            if conn.execute("SELECT 1 FROM answers WHERE id = ?", (answer_id,)).fetchone() is None:
                raise AssistantError(f"no answer with id {answer_id!r}")
            conn.execute("INSERT INTO feedback (answer_id, created, rating, comment, user) VALUES (?,?,?,?,?)",
                         (answer_id, time.time(), rating, comment[:2000], user[:200]))

    def counts(self) -> dict[str, int]:
        row = self._conn().execute("SELECT COALESCE(SUM(rating = 1), 0), COALESCE(SUM(rating = -1), 0) FROM feedback").fetchone()
        return {"up": int(row[0]), "down": int(row[1])}

    def export_negative(self) -> list[dict]:
        """👎 answers as draft eval cases (eval/cases.jsonl format; `expect` left to fill in)."""
        rows = self._conn().execute(
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
