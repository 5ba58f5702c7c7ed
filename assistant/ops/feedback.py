"""Answers and 👍/👎 feedback, and export of 👎 answers as draft eval cases.

Every answer served over HTTP, the page or Slack is recorded with an id, so feedback can
point at exactly what the person saw (question, answer, citations). A maintainer turns the
👎 ones into eval cases with `assistant feedback export`, filling in `expect`.

The store itself (SQLite or a PostgreSQL shared by replicas, migrations, best-effort
writes) is `assistant.ops.store`; this module keeps the names the rest of the code and older
scripts use.
"""

from __future__ import annotations

from pathlib import Path

from assistant.ops.store import FeedbackUnavailable, StateStore, _sqlite, open_state

__all__ = ["FeedbackStore", "FeedbackUnavailable", "open_state"]


class FeedbackStore(StateStore):
    """The store in a SQLite file at `path` (what `ASSISTANT_FEEDBACK_DB` names)."""

    def __init__(self, path: Path | str, timeout: float = 0.5, retention_days: float = 90.0) -> None:
        super().__init__(_sqlite(Path(path), timeout), timeout=timeout, retention_days=retention_days)
