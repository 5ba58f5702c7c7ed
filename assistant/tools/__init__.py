"""Read-only tools shared by the LLM, the CLI, `doctor` and the HTTP API.

A tool is a plain typed function in a module of this package, registered by `@tool`: its
signature and docstring are its only definition, turned into the JSON schema a model sees and
the check its arguments pass (see `_arguments`), and its result is a dataclass that in-process
callers read by attribute and everyone else gets as JSON. Modules are found by listing the
package, so adding a tool is adding a file. Tools never shell out and never write; probes read
files and endpoints, capacity tools only compute. What a tool touches (files, the network, the
host, secrets) is declared with it, so who may call it is decided from the declaration.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import importlib
import inspect
import json
import math
import pkgutil
import threading
import time
import typing
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ._arguments import arguments_model, description, json_schema, problems

# Annotated marker: the parameter names a file on this machine. Safe on the CLI only; never over HTTP
# or from an LLM (find it with typing.get_type_hints(fn, include_extras=True)).
LOCAL_PATH = "local-path"
# Annotated marker: the parameter is a URL the tool fetches. A remote caller may only name the allowed hosts.
URL = "network-url"


@dataclass(frozen=True)
class Access:
    """What a tool touches, declared with the tool itself (decorator flags, and Annotated
    markers on its parameters), so a caller's policy is decided from the declaration and a
    new tool cannot slip past a list of names."""

    reads_files: tuple[str, ...] = ()  # parameters that name files on this machine (LOCAL_PATH)
    network: tuple[str, ...] = ()  # parameters holding a URL the tool fetches (URL)
    reads_host: bool = False  # reads this machine's state: /proc, devices, environment
    secrets: bool = False  # its result may carry secret values: never for a remote caller
    http_safe: bool = True  # may run for a remote caller, under the checks in Caller


@dataclass(frozen=True)
class Tool:
    name: str
    fn: Callable[..., Any]
    description: str
    parameters: dict  # the JSON schema of its arguments, as a local caller sees it
    arguments: type[BaseModel] = field(repr=False, compare=False)  # checks arguments (see _arguments)
    access: Access = Access()

    def openai_schema(self, caller: Caller | None = None) -> dict:
        params = (caller or LOCAL).parameters(self)
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": params}}

    def problems(self, arguments: Any, hidden: Collection[str] = ()) -> list[str]:
        """What is wrong with `arguments`, one line each (empty when they may be passed to fn).
        `hidden`: parameters the caller may not use, which then count as unknown."""
        return problems(self.arguments, arguments, hidden)


@dataclass
class ToolCall:
    """One call as recorded in an Answer's `tool_calls` (and shown to the user).

    `result` is the JSON the LLM and HTTP clients see; `value` is the tool's own typed result
    (a dataclass) for in-process callers, left out of `to_dict()`."""

    name: str
    arguments: dict
    result: Any = None
    error: str | None = None
    ms: float = 0.0
    value: Any = field(default=None, repr=False, compare=False)
    # The tool ran and refused a value (a plain ValueError: "num_blocks must be positive"):
    # the caller's input, not the tool, is at fault, so the CLI says so with exit 2.
    refused_value: bool = field(default=False, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, arguments: dict, value: Any, ms: float = 0.0) -> ToolCall:
        """Record a successful call made in-process rather than through call_tool (e.g. a log
        the CLI already read), with its JSON result derived from the typed value as call_tool does."""
        return cls(name, arguments, _jsonable(value), None, ms, value)

    def to_dict(self) -> dict:
        return {"name": self.name, "arguments": _jsonable(self.arguments), "result": _jsonable(self.result), "error": self.error,
                "ms": round(self.ms, 2)}


_REGISTRY: dict[str, Tool] = {}


def tool(fn: Callable[..., Any] | None = None, *, reads_host: bool = False, secrets: bool = False,
         http_safe: bool | None = None) -> Any:
    """Register fn as a tool under its own name: `@tool`, or `@tool(reads_host=True)`.

    File and URL parameters are found from their LOCAL_PATH / URL markers; `http_safe`
    defaults to "unless it returns secrets", since files and URLs are checked per call.
    """

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(f, include_extras=True)
        params = [n for n in inspect.signature(f).parameters if not n.startswith("_")]
        access = Access(
            reads_files=tuple(n for n in params if _marked(hints.get(n), LOCAL_PATH)),
            network=tuple(n for n in params if _marked(hints.get(n), URL)),
            reads_host=reads_host,
            secrets=secrets,
            http_safe=(not secrets) if http_safe is None else http_safe,
        )
        model = arguments_model(f)
        _REGISTRY[f.__name__] = Tool(f.__name__, f, description(f), json_schema(model), model, access)
        return f

    return register(fn) if fn is not None else register


def _marked(hint: Any, marker: str) -> bool:
    """Whether an annotation carries `marker` in an Annotated[...], also inside `X | None`."""
    if hint is None:
        return False
    if typing.get_origin(hint) is typing.Annotated:
        base, *meta = typing.get_args(hint)
        return marker in meta or _marked(base, marker)
    return any(_marked(arg, marker) for arg in typing.get_args(hint))


def schema_for(fn: Callable[..., Any]) -> dict:
    """The JSON schema of fn's public arguments, as a registered tool shows it."""
    return json_schema(arguments_model(fn))


def tool_modules(package: str = __name__) -> list[str]:
    """Import every public module of `package` (once: Python caches imports) and return their
    names. Their `@tool` functions register themselves; modules starting with "_" are plumbing."""
    path = importlib.import_module(package).__path__
    names = [f"{package}.{info.name}" for info in pkgutil.iter_modules(path) if not info.name.startswith("_")]
    for name in names:
        importlib.import_module(name)
    return names


@functools.cache
def _discovered() -> tuple[str, ...]:
    return tuple(tool_modules())


def registry() -> dict[str, Tool]:
    """Every registered tool, by name (the modules of this package are imported on first use)."""
    _discovered()
    return dict(_REGISTRY)


# ---------------------------------------------------------------- who may call what

@dataclass(frozen=True)
class Caller:
    """Who the tool calls are made for. The CLI is local and keeps every tool's full power.
    A remote caller (an HTTP client, a Slack user, and the LLM answering them, which a
    prompt-injected runbook or question may steer) gets only tools declared http_safe, never
    their file parameters, and URLs only on the allowed hosts."""

    remote: bool = False
    hosts: frozenset[str] = frozenset()  # "host" (any port) or "host:port"

    def allows(self, t: Tool) -> bool:
        return not self.remote or (t.access.http_safe and not t.access.secrets)

    def hidden(self, t: Tool) -> tuple[str, ...]:
        """Parameters of `t` this caller is not told about and may not use: a remote caller's file parameters."""
        return t.access.reads_files if self.remote else ()

    def parameters(self, t: Tool) -> dict:
        """The schema this caller sees: a remote one is not even told about file parameters."""
        hidden = self.hidden(t)
        if not hidden:
            return t.parameters
        schema = json.loads(json.dumps(t.parameters))
        for name in hidden:
            schema["properties"].pop(name, None)
        if "required" in schema:
            schema["required"] = [r for r in schema["required"] if r not in hidden]
        return schema

    def refusal(self, t: Tool, args: dict) -> str | None:
        """Why this caller may not make this call, or None."""
        if not self.remote:
            return None
        if not self.allows(t):
            return f"{t.name} is not available here"
        files = [n for n in t.access.reads_files if args.get(n) not in (None, "")]
        if files:
            return (f"reading files on the server is not allowed here ({', '.join(files)}); "
                    "send the content itself instead (e.g. a log as `text`, a config as inline JSON)")
        for name in t.access.network:
            if args.get(name) not in (None, "") and not self.host_allowed(str(args[name])):
                allowed = ", ".join(sorted(self.hosts)) or "no host"
                return f"{t.name} may only probe {allowed} here (add the host to ASSISTANT_SERVING_HOSTS_ALLOW)"
        return None

    def host_allowed(self, url: str) -> bool:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(url.strip())
            host, port = (parts.hostname or "").lower(), parts.port
        except ValueError:  # a malformed port or IPv6 literal
            return False
        if parts.scheme not in ("http", "https") or not host:
            return False
        shown = f"[{host}]" if ":" in host else host
        return host in self.hosts or (port is not None and f"{shown}:{port}" in self.hosts)


LOCAL = Caller()


def remote_caller(allowed_hosts: str) -> Caller:
    """The caller for HTTP and Slack requests, from the comma-separated host allow-list."""
    return Caller(True, frozenset(h.strip().lower() for h in allowed_hosts.split(",") if h.strip()))


_CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("tool_caller", default=LOCAL)


@contextlib.contextmanager
def acting_for(caller: Caller) -> Iterator[None]:
    """Make every tool call in this thread (the LLM's included) on behalf of `caller`.
    Adapters wrap answering in it; code deep in the answer path need not pass it along."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)


def current_caller() -> Caller:
    return _CALLER.get()


def available(caller: Caller | None = None) -> dict[str, Tool]:
    """The tools `caller` (default: the current one) may use."""
    who = caller or current_caller()
    return {name: t for name, t in registry().items() if who.allows(t)}


# ---------------------------------------------------------------- calls

def _jsonable(value: Any) -> Any:
    """A tool's typed result as JSON-ready data (dataclasses as dicts, tuples as lists).
    Infinity and NaN become null: a model's `1e400` argument made `ask --json` print
    `Infinity`, which no JSON parser reads."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def parse_arguments(raw: str | dict | None) -> tuple[dict | None, str | None]:
    if isinstance(raw, dict):
        return raw, None
    if raw is None or not str(raw).strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
    return (value, None) if isinstance(value, dict) else (None, "arguments must be a JSON object")


def call_tool(name: str, arguments: str | dict | None, *, timeout: float = 10.0, caller: Caller | None = None) -> ToolCall:
    """Validate and run one tool with a time limit, on behalf of `caller` (default: the
    current one, see acting_for). Never raises: errors are in the result."""
    who = caller or current_caller()
    tools = available(who)
    args, problem = parse_arguments(arguments)
    call = ToolCall(name, args if isinstance(args, dict) else {"_raw": str(arguments)[:500]})
    if name not in tools:
        call.error = f"unknown tool '{name}' (available: {', '.join(sorted(tools))})"
        return call
    if problem is None:
        problem = who.refusal(tools[name], args)
        if problem:
            call.error = problem
            return call
        problem = "; ".join(tools[name].problems(args, who.hidden(tools[name]))) or None
    if problem:
        call.error = f"invalid arguments for {name}: {problem}"
        return call
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = tools[name].fn(**args)
        except Exception as exc:  # a tool bug or bad input becomes a message, not a crash
            box["error"] = _failure(name, exc, who)
            box["refused"] = type(exc) is ValueError

    started = time.perf_counter()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    call.ms = (time.perf_counter() - started) * 1000
    if worker.is_alive():
        call.error = f"{name} did not finish within {timeout:.0f} s"
    elif "error" in box:
        call.error = box["error"]
        call.refused_value = box["refused"]
    else:
        call.value = box.get("value")
        call.result = _jsonable(call.value)
    return call


def _failure(name: str, exc: Exception, who: Caller) -> str:
    """The error a caller sees. A remote one gets the message of a bad argument (ValueError)
    only: other messages can name server files or echo what was read from them."""
    if type(exc) is ValueError:
        return str(exc) or "ValueError"  # a bad argument, said as such ("gpu_memory_gib must be positive")
    if not who.remote or isinstance(exc, json.JSONDecodeError):
        return f"{type(exc).__name__}: {exc}"
    import logging

    logging.getLogger("assistant.tools").warning("tool %s failed for a remote caller", name, exc_info=exc)
    return f"{name} failed ({type(exc).__name__})"
