"""FastMCP's validation of tool arguments made strict, its refusals told in the published schema's words.

FastMCP validates a tool's arguments with pydantic, on the very types (mcp/tools/params.py) its
published inputSchema is made from. pydantic in lax mode coerces (`top_k: true` became 1, `"5"`
became 5), so `strictly` marks each JSON type of a tool's parameters strict (pydantic's `Strict`:
the published schema is unchanged) and the same validation refuses them. This module adds what
pydantic lacks to keep the contract (contracts/mcp-tools.md, `mcp.bad_arguments`):

- `problems_of`: pydantic's errors as `{argument, problem, type}` with the JSON Schema keyword
  as the type (`int_type` is `type`, `greater_than_equal` is `minimum`, an unexpected keyword
  is `unknown_argument`) and words that say what was expected, never the value given;
- `integral_floats`: JSON Schema counts `5.0` as an integer, and so did the schema check this
  replaced; pydantic's strict mode refuses it. A whole-number float where the schema says
  integer is made an int before validation, as lax validation did.

Why not FastMCP's own switch (`FastMCP(strict_input_validation=True)`, fastmcp 4.2): it makes the
same pydantic checks strict, but validates JSON in pydantic's JSON mode, first walking every
argument in Python to see that it is JSON (`_is_json_data`) and serialising it again: 162 us for
a search with a 384-number query vector, against 45 us for the check it replaced and 13 us for the
strict types in Python mode (load 5; a text search: 4 us, 7 us, 5 us). (Until issue 47 the arguments were checked a second time, against the published JSON
Schema, by jsonschema and a fast path of our own: ~270 lines, and a 50 ms import on the first
refusal.)
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

from pydantic import Strict

MAX_PROBLEMS = 20
_JSON_SCALARS = (int, float, str, bool)

_TYPES = {"int_type": "integer", "float_type": "number", "string_type": "string", "bool_type": "boolean",
          "dict_type": "object", "list_type": "array", "none_required": "null"}

# pydantic's error type -> (the JSON Schema keyword, what the argument must be; `ctx` fills it in)
_KEYWORDS: dict[str, tuple[str, str]] = {
    "greater_than_equal": ("minimum", "must be >= {ge}"), "less_than_equal": ("maximum", "must be <= {le}"),
    "greater_than": ("exclusiveMinimum", "must be > {gt}"), "less_than": ("exclusiveMaximum", "must be < {lt}"),
    "string_too_short": ("minLength", "must have at least {min_length} characters"),
    "string_too_long": ("maxLength", "must have at most {max_length} characters"),
    "too_short": ("minItems", "must have at least {min_length} items"),
    "too_long": ("maxItems", "must have at most {max_length} items"),
    "missing_argument": ("required", "is required"), "missing": ("required", "is required"),
    "unexpected_keyword_argument": ("unknown_argument", "is not an argument of this tool"),
    "extra_forbidden": ("unknown_argument", "is not an argument of this tool"),
}


def strictly(annotation: Any) -> Any:
    """`annotation` with each JSON type in it strict (`list[float] | None` becomes a strict list of
    strict floats, or None; `Annotated` metadata, such as bounds, kept); other types as they are."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return Annotated[(strictly(args[0]), *annotation.__metadata__)]
    if origin in (types.UnionType, typing.Union):
        return typing.Union[tuple(strictly(arg) for arg in args)]  # noqa: UP007 (built from a tuple)
    if origin in (list, dict):
        inner = tuple(strictly(arg) for arg in args)
        return Annotated[origin[inner] if inner else origin, Strict()]
    if annotation in _JSON_SCALARS:
        return Annotated[annotation, Strict()]
    return annotation


def _problem(error: Any) -> dict[str, Any]:
    where = ".".join(str(part) for part in error.get("loc", ()))
    kind = str(error.get("type"))
    if kind in _TYPES:
        return {"argument": where, "problem": f"must be of type {_TYPES[kind]}", "type": "type"}
    if kind in _KEYWORDS:
        keyword, text = _KEYWORDS[kind]
        try:
            said = text.format(**(error.get("ctx") or {}))
        except (KeyError, IndexError):
            said = str(error.get("msg"))
        return {"argument": where, "problem": said, "type": keyword}
    # pydantic's own words (asked without the input, so they never quote the value)
    return {"argument": where, "problem": str(error.get("msg")), "type": kind}


def problems_of(exc: BaseException) -> list[dict[str, Any]]:
    """The problems of FastMCP's ValidationError (its cause is pydantic's), sorted by argument."""
    from pydantic import ValidationError

    cause = exc.__cause__
    if not isinstance(cause, ValidationError):
        return []
    problems = [_problem(error) for error in cause.errors(include_url=False, include_input=False)]
    return sorted(problems[:MAX_PROBLEMS], key=lambda p: p["argument"])


def _branches(schema: Any) -> list[dict[str, Any]]:
    """The schema and its `anyOf` alternatives (`int | None` is an anyOf)."""
    if not isinstance(schema, dict):
        return []
    return [schema, *(branch for alternative in schema.get("anyOf") or () for branch in _branches(alternative))]


def _type_names(schema: Any) -> set[str]:
    names: set[str] = set()
    for branch in _branches(schema):
        kind = branch.get("type")
        names.update(kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else [])
    return names


def _mentions_integer(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "integer" in _type_names({"type": schema.get("type")}) or any(map(_mentions_integer, schema.values()))
    if isinstance(schema, list):
        return any(map(_mentions_integer, schema))
    return False


def integral_floats(schema: Any, value: Any) -> Any:
    """`value` with every whole-number float an int where `schema` allows integers and not other
    numbers; the very object when nothing changed. Arrays are walked only when their items
    mention an integer (a query vector's numbers are passed over)."""
    if type(value) is float:
        names = _type_names(schema)
        return int(value) if value.is_integer() and "integer" in names and "number" not in names else value
    if type(value) is dict:
        known = {name: sub for branch in _branches(schema) for name, sub in (branch.get("properties") or {}).items()}
        if not known:
            return value
        fixed = {name: integral_floats(known.get(name), item) for name, item in value.items()}
        return fixed if any(fixed[name] is not item for name, item in value.items()) else value
    if type(value) is list:
        items = [branch["items"] for branch in _branches(schema) if isinstance(branch.get("items"), dict)]
        if not items or not _mentions_integer(items[0]):
            return value
        fixed_items = [integral_floats(items[0], item) for item in value]
        return fixed_items if any(new is not old for new, old in zip(fixed_items, value, strict=True)) else value
    return value
