"""Read-only tools shared by the LLM, the CLI, `doctor` and (later) the HTTP API.

A tool is a plain typed function. Its JSON schema is derived from the signature (types,
defaults) and the docstring (first paragraph = description; "Args:" lines = parameter
descriptions), so one definition serves every caller. Tools never shell out and never
write; probes read files and endpoints, capacity tools only compute.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import threading
import time
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

_MODULES = ("capacity", "gpu", "host", "serving", "logs")


@dataclass(frozen=True)
class Tool:
    name: str
    fn: Callable[..., Any]
    description: str
    parameters: dict

    def openai_schema(self) -> dict:
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


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


def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register fn as a tool under its own name."""
    _REGISTRY[fn.__name__] = Tool(fn.__name__, fn, _description(fn), schema_for(fn))
    return fn


def registry() -> dict[str, Tool]:
    import importlib

    for name in _MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return dict(_REGISTRY)


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
    return {bool: {"type": "boolean"}, int: {"type": "integer"}, float: {"type": "number"}, str: {"type": "string"}, dict: {"type": "object"}}.get(annotation, {"type": "string"})


def schema_for(fn: Callable) -> dict:
    hints = typing.get_type_hints(fn)
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


def call_tool(name: str, arguments: str | dict | None, *, timeout: float = 10.0) -> ToolCall:
    """Validate and run one tool with a time limit. Never raises: errors are in the result."""
    tools = registry()
    args, problem = parse_arguments(arguments)
    call = ToolCall(name, args if isinstance(args, dict) else {"_raw": str(arguments)[:500]})
    if name not in tools:
        call.error = f"unknown tool '{name}' (available: {', '.join(sorted(tools))})"
        return call
    if problem is None:
        problems = validate(args, tools[name].parameters)
        problem = "; ".join(problems) if problems else None
    if problem:
        call.error = f"invalid arguments for {name}: {problem}"
        return call
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = tools[name].fn(**args)
        except Exception as exc:  # a tool bug or bad input becomes a message, not a crash
            box["error"] = f"{type(exc).__name__}: {exc}"

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
