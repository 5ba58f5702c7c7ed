"""A tool's arguments, from its signature: one pydantic model per tool gives both the JSON schema
a model is shown and the check its arguments pass before the call.

The signature stays the single definition (types, defaults, `Annotated[int, Ge(1)]` bounds,
`Literal` choices; the docstring's "Args:" lines describe each argument) and pydantic turns it
into standard JSON schema and validation. What this module adds is what the tools' audience needs:

- the schema is trimmed to what an LLM reads: no titles, `X | None` shown as X (null means "not
  given"), no `"default": null`;
- validation is strict, so "3" is not an integer and true is not 1: a model that sends the wrong
  type is told so rather than having it converted behind its back;
- every argument also accepts null, and ranges (minimum, …) are shown in the schema but left to
  the tool: each tool checks them again anyway (the CLI and tests call it directly) and names the
  parameter in its own words ("num_blocks must be positive");
- errors become one line per argument, phrased for a model to fix.

Private parameters (`_root`, …) are for tests and in-process callers: they are not part of the
model, so a caller that names one gets "unknown argument".
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

_CONFIG = ConfigDict(strict=True, extra="forbid", protected_namespaces=())
# Out-of-range values pass here: the tool refuses them with a message naming the parameter.
_RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
# pydantic's strict type errors, as the JSON type a model should have sent.
_EXPECTED = {"int_type": "integer", "float_type": "number", "string_type": "string", "bool_type": "boolean",
             "list_type": "array", "dict_type": "object"}


def description(fn: Callable[..., Any]) -> str:
    """The docstring's first paragraph, on one line."""
    doc = inspect.getdoc(fn) or fn.__name__
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def _arg_docs(fn: Callable[..., Any]) -> dict[str, str]:
    """Each argument's description from the docstring's "Args:" section (continuation lines joined)."""
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


def arguments_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model of fn's public arguments: its annotations (made nullable), defaults and
    docstring descriptions. A parameter without an annotation is a string."""
    hints = typing.get_type_hints(fn, include_extras=True)
    docs = _arg_docs(fn)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name.startswith("_"):
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints.get(name, str) | None, Field(default, description=docs.get(name)))
    return create_model(f"{fn.__name__}_arguments", __config__=_CONFIG, **fields)


def json_schema(model: type[BaseModel]) -> dict:
    """The schema an LLM is shown: pydantic's, without what a model does not need."""
    schema = model.model_json_schema()
    out: dict[str, Any] = {
        "type": "object",
        "properties": {name: _trimmed(prop) for name, prop in schema.get("properties", {}).items()},
        "additionalProperties": False,
    }
    if schema.get("required"):
        out["required"] = list(schema["required"])
    if "$defs" in schema:  # an Enum or nested model parameter: keep what its $ref points at
        out["$defs"] = schema["$defs"]
    return out


def _trimmed(prop: dict) -> dict:
    """One property's schema without titles, null options or a null default."""
    out = {k: v for k, v in prop.items() if k not in ("title", "anyOf")}
    options = [_trimmed(o) for o in prop.get("anyOf", []) if o != {"type": "null"}]
    if len(options) == 1:
        out = {**options[0], **out}
    elif options:
        out["anyOf"] = options
    if "default" in out and out["default"] is None:
        del out["default"]
    if out.get("additionalProperties") is True:  # a plain `dict`: any object
        del out["additionalProperties"]
    if isinstance(out.get("items"), dict):
        out["items"] = _trimmed(out["items"])
    return out


def problems(model: type[BaseModel], arguments: Any, hidden: Collection[str] = ()) -> list[str]:
    """What is wrong with `arguments`, one line each, phrased for a model to fix: missing
    arguments first, then each bad argument in the order given. `hidden` names arguments this
    caller may not see (a remote caller's file parameters): they count as unknown."""
    if not isinstance(arguments, dict):
        return ["arguments must be a JSON object"]
    allowed = [name for name in model.model_fields if name not in hidden]
    try:
        model.model_validate({k: v for k, v in arguments.items() if k not in hidden})
        errors: list = []
    except ValidationError as exc:
        errors = [e for e in exc.errors(include_url=False) if e["type"] not in _RANGE_ERRORS]
    missing = [f"missing required argument '{e['loc'][0]}'" for e in errors
               if e["type"] == "missing" and e["loc"][0] not in hidden]
    wrong: dict[str, str] = {}
    for e in errors:
        if e["type"] not in ("missing", "extra_forbidden"):
            wrong.setdefault(str(e["loc"][0]), _problem(e))
    out = []
    for name in arguments:
        if name not in allowed:
            out.append(f"unknown argument '{name}' (allowed: {', '.join(allowed)})")
        elif name in wrong:
            out.append(wrong[name])
    return missing + out


def _problem(error: Any) -> str:
    """One validation error as a line: "argument 'n': expected integer, got str"."""
    name, *inner = error["loc"]
    where = f"argument '{name}'" + "".join(f"[{part}]" for part in inner)
    value, kind = error["input"], error["type"]
    if kind == "float_type" and isinstance(value, int) and not isinstance(value, bool):
        return f"{where}: too large to be a number"  # strict floats take ints, unless they overflow
    if kind in _EXPECTED:
        return f"{where}: expected {_EXPECTED[kind]}, got {type(value).__name__}"
    if kind == "literal_error":
        return f"{where}: must be one of {error['ctx']['expected']}"
    return f"{where}: {error['msg']}"
