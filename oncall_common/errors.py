"""One small exception family whose messages are meant for people, not for logs.

Adapters (CLI, HTTP, Slack) turn an `AssistantError` into an exit code, a status or a
message; anything else escaping is a bug.
"""

from __future__ import annotations


class AssistantError(Exception):
    """A failure the user can act on: `message` says what happened, `hint` what to do."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class BadQuestion(AssistantError):
    """The question itself is unusable (empty, too long, binary)."""

    exit_code = 2


class IndexError_(AssistantError):
    """The on-disk index is missing, corrupt or was built by something else."""


class ConfigError(AssistantError):
    """Settings that cannot work (unknown embedder, unreadable config file)."""
