"""One small exception family whose messages are meant for people, not for logs.

Adapters turn an `AssistantError` into what their channel speaks: the CLI its `exit_code`,
HTTP its `http_status` (and a Retry-After from `retry_after`), Slack a message. The status
travels with the exception, so no adapter reads the message text to choose one; anything
else escaping is a bug.
"""

from __future__ import annotations


class AssistantError(Exception):
    """A failure the user can act on: `message` says what happened, `hint` what to do."""

    exit_code = 1
    http_status = 400
    retry_after: int | None = None  # seconds, for failures that pass (HTTP Retry-After)

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class BadInput(AssistantError):
    """What the user handed over cannot be used (a binary log, a case file that is not text,
    a file type ingest does not read): exit code 2, as for a bad command-line argument."""

    exit_code = 2
    http_status = 422


class BadQuestion(BadInput):
    """The question itself is unusable (empty, binary, not text)."""


class QuestionTooLarge(BadQuestion):
    """The question is over the size limit: the client must send less, not something else."""

    http_status = 413


class Unavailable(AssistantError):
    """Something the answer needs is not there right now (the KB failed to load, the answer
    store is down); the request itself was fine."""

    http_status = 503


class NotFound(AssistantError):
    """What the request names does not exist (an answer id never issued)."""

    http_status = 404


class IndexError_(AssistantError):
    """The on-disk index is missing, corrupt or was built by something else."""


class ConfigError(AssistantError):
    """Settings that cannot work (unknown embedder, unreadable config file)."""
