"""Read-only tools shared by the LLM, the CLI, `doctor` and (later) the HTTP API.

A tool is a plain typed function. Its JSON schema is derived from the signature (types,
defaults) and the docstring (first paragraph = description; "Args:" lines = parameter
descriptions), so one definition serves every caller. Tools never shell out and never
write; probes read files and endpoints, capacity tools only compute.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import json
import re
import threading
import time
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterator

_MODULES = ("capacity", "gpu", "host", "serving", "logs")


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
    parameters: dict
    access: Access = Access()

    def openai_schema(self, caller: "Caller | None" = None) -> dict:
        params = (caller or LOCAL).parameters(self)
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": params}}


@dataclass
class ToolCall:
    """One call as recorded in an Answer's `tool_calls` (and shown to the user)."""

    name: str
    arguments: dict
    result: Any = None
    error: str | None = None
    ms: float = 0.0

    def to_dict(self) -> dict:
        return {"name": self.name, "arguments": self.arguments, "result": self.result, "error": self.error, "ms": round(self.ms, 2)}


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
        _REGISTRY[f.__name__] = Tool(f.__name__, f, _description(f), schema_for(f), access)
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


def registry() -> dict[str, Tool]:
    import importlib

    for name in _MODULES:
        importlib.import_module(f"{__name__}.{name}")
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

    def parameters(self, t: Tool) -> dict:
        """The schema this caller sees: a remote one is not even told about file parameters."""
        if not self.remote or not t.access.reads_files:
            return t.parameters
        schema = json.loads(json.dumps(t.parameters))
        for name in t.access.reads_files:
            schema["properties"].pop(name, None)
        if "required" in schema:
            schema["required"] = [r for r in schema["required"] if r not in t.access.reads_files]
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


# ---------------------------------------------------------------- schema from signature

def _description(fn: Callable) -> str:
    doc = inspect.getdoc(fn) or fn.__name__
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def _arg_docs(fn: Callable) -> dict[str, str]:
    doc = inspect.getdoc(fn) or ""
    out: dict[str, str] = {}
    if "Args:" not in doc:
        return out
    current = None
    for line in doc.split("Args:", 1)[1].splitlines():
        m = re.match(r"^\s{0,4}(\w+):\s*(.*)$", line)
        if m and not line.startswith("        "):
            current = m.group(1)
            out[current] = m.group(2).strip()
        elif current and line.strip():
            out[current] += " " + line.strip()
        elif not line.strip() and current:
            current = None
    return out


def _json_type(annotation: Any) -> dict:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(options) == 1:
            return _json_type(options[0])
        return {"anyOf": [_json_type(a) for a in options]}
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return {"type": _json_type(type(values[0]))["type"], "enum": values}
    if origin in (list, tuple):
        (item,) = typing.get_args(annotation)[:1] or (str,)
        return {"type": "array", "items": _json_type(item)}
    if origin is typing.Annotated:
        # Annotated[int, Ge(1)]: bounds (annotated_types' gt/ge/lt/le) become JSON-schema keywords, so a
        # model sees "positive only"; other metadata (LOCAL_PATH) is for callers and stays out of the schema.
        base, *meta = typing.get_args(annotation)
        schema = dict(_json_type(base))
        for item in meta:
            for attr, key in (("gt", "exclusiveMinimum"), ("ge", "minimum"), ("lt", "exclusiveMaximum"), ("le", "maximum")):
                if getattr(item, attr, None) is not None:
                    schema[key] = getattr(item, attr)
        return schema
    return {bool: {"type": "boolean"}, int: {"type": "integer"}, float: {"type": "number"}, str: {"type": "string"}, dict: {"type": "object"}}.get(annotation, {"type": "string"})


# Annotated marker: the parameter names a file on this machine. Safe on the CLI only; never over HTTP
# or from an LLM (find it with typing.get_type_hints(fn, include_extras=True)).
LOCAL_PATH = "local-path"
# Annotated marker: the parameter is a URL the tool fetches. A remote caller may only name the allowed hosts.
URL = "network-url"


def schema_for(fn: Callable) -> dict:
    hints = typing.get_type_hints(fn, include_extras=True)
    docs = _arg_docs(fn)
    props: dict[str, dict] = {}
    required: list[str] = []
    for name, param in inspect.signature(fn).parameters.items():
        if name.startswith("_"):
            continue  # private parameters (e.g. a probe's root path) are for tests, not models
        prop = dict(_json_type(hints.get(name, str)))
        if name in docs:
            prop["description"] = docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif param.default is not None:
            prop["default"] = param.default
        props[name] = prop
    schema = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


# ---------------------------------------------------------------- validation and calls

def _check(value: Any, prop: dict) -> str | None:
    if "anyOf" in prop:
        return None if any(_check(value, p) is None for p in prop["anyOf"]) else f"expected one of {prop['anyOf']}"
    kind = prop.get("type")
    ok = {
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }.get(kind, True)
    if not ok:
        return f"expected {kind}, got {type(value).__name__}"
    if "enum" in prop and value not in prop["enum"]:
        return f"must be one of {prop['enum']}"
    return None


def validate(arguments: Any, schema: dict) -> list[str]:
    """Problems with `arguments` against a tool schema, phrased for a model to fix."""
    if not isinstance(arguments, dict):
        return ["arguments must be a JSON object"]
    problems = []
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments:
            problems.append(f"missing required argument '{name}'")
    for name, value in arguments.items():
        if name not in props:
            problems.append(f"unknown argument '{name}' (allowed: {', '.join(props)})")
            continue
        if value is None:
            continue
        why = _check(value, props[name])
        if why:
            problems.append(f"argument '{name}': {why}")
    return problems


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
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
        problems = validate(args, who.parameters(tools[name]))
        problem = "; ".join(problems) if problems else None
    if problem:
        call.error = f"invalid arguments for {name}: {problem}"
        return call
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = tools[name].fn(**args)
        except Exception as exc:  # a tool bug or bad input becomes a message, not a crash
            box["error"] = _failure(name, exc, who)

    started = time.perf_counter()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    call.ms = (time.perf_counter() - started) * 1000
    if worker.is_alive():
        call.error = f"{name} did not finish within {timeout:.0f} s"
    elif "error" in box:
        call.error = box["error"]
    else:
        call.result = _jsonable(box.get("value"))
    return call


def _failure(name: str, exc: Exception, who: Caller) -> str:
    """The error a caller sees. A remote one gets the message of a bad argument (ValueError)
    only: other messages can name server files or echo what was read from them."""
    if not who.remote or type(exc) is ValueError or isinstance(exc, json.JSONDecodeError):
        return f"{type(exc).__name__}: {exc}"
    import logging

    logging.getLogger("assistant.tools").warning("tool %s failed for a remote caller", name, exc_info=exc)
    return f"{name} failed ({type(exc).__name__})"
