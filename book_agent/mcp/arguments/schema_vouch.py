"""Arguments a tool's schema surely accepts, decided without jsonschema.

jsonschema costs ~50 ms to import (the first call of a session would pay it) and walks every
item of a 384-float query vector through its keyword machinery. Almost every call is valid, so
`vouches(schema, arguments)` first answers the one question that matters for those: is this
surely valid? It knows the keywords our published schemas use (contracts/mcp-tools.json) and
says True only when each of them holds; for anything else (a keyword it does not know, a
value it is unsure of, an invalid value) it says False and jsonschema decides, and explains
(book_agent/mcp/arguments/schema_check.py). So it can never accept what jsonschema refuses:
tests/unit/test_mcp_schema_fast_items.py checks both on generated arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Keywords that never refuse anything.
ANNOTATIONS = frozenset({"description", "default", "title", "examples", "deprecated", "readOnly", "writeOnly"})

# Python types whose every value the JSON Schema type accepts. An integral float is an
# "integer" for jsonschema too, but is left to it (rare, and a judgement call).
EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "number": (int, float), "integer": (int,), "null": (type(None),),
}

JSON_TYPES = (dict, list, str, bool, int, float, type(None))  # what json.loads gives


def _plain(value: Any) -> bool:
    """A keyword for another type holds for this value, if it is one of JSON's own types (a
    subclass, or anything else a Python caller passed, is left to jsonschema)."""
    return type(value) in JSON_TYPES


def _types(kind: Any) -> tuple[type, ...] | None:
    kinds = kind if isinstance(kind, list) else [kind]
    found: tuple[type, ...] = ()
    for name in kinds:
        if not isinstance(name, str) or name not in EXACT_TYPES:
            return None
        found += EXACT_TYPES[name]
    return found


def _type(want: Any, value: Any, schema: dict[str, Any]) -> bool:
    exact = _types(want)
    return exact is not None and type(value) in exact


def _bound(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any, dict[str, Any]], bool]:
    """A bound on a number: holds, or the value is not a number (bounds apply to numbers only)."""
    def check(want: Any, value: Any, schema: dict[str, Any]) -> bool:
        if isinstance(want, bool) or not isinstance(want, int | float):
            return False
        return test(value, want) if type(value) in (int, float) else _plain(value)
    return check


def _at_least(have: Any, want: Any) -> bool:
    return bool(have >= want)


def _at_most(have: Any, want: Any) -> bool:
    return bool(have <= want)


def _above(have: Any, want: Any) -> bool:
    return bool(have > want)


def _below(have: Any, want: Any) -> bool:
    return bool(have < want)


def _length(test: Callable[[Any, Any], bool], kind: type[str] | type[list[Any]]) -> Callable[[Any, Any, dict[str, Any]], bool]:
    def check(want: Any, value: Any, schema: dict[str, Any]) -> bool:
        if isinstance(want, bool) or not isinstance(want, int):
            return False
        return test(len(value), want) if type(value) is kind else _plain(value)
    return check


def _properties(want: Any, value: Any, schema: dict[str, Any]) -> bool:
    if not isinstance(want, dict):
        return False
    if type(value) is not dict:
        return _plain(value)
    return all(vouches(want[name], item) for name, item in value.items() if name in want)


def _additional(want: Any, value: Any, schema: dict[str, Any]) -> bool:
    if type(value) is not dict:
        return _plain(value)
    if want is True:
        return True
    known = schema.get("properties", {})
    extra = [item for name, item in value.items() if name not in known]
    if want is False:
        return not extra
    return isinstance(want, dict) and all(vouches(want, item) for item in extra)


def _required(want: Any, value: Any, schema: dict[str, Any]) -> bool:
    if not isinstance(want, list) or not all(isinstance(name, str) for name in want):
        return False
    return all(name in value for name in want) if type(value) is dict else _plain(value)


def _any_of(want: Any, value: Any, schema: dict[str, Any]) -> bool:
    return isinstance(want, list) and any(vouches(branch, value) for branch in want)


def _items(want: Any, value: Any, schema: dict[str, Any]) -> bool:
    if type(value) is not list:
        return _plain(value)
    if isinstance(want, dict) and want.keys() == {"type"} and (exact := _types(want["type"])) is not None:
        return all(type(item) in exact for item in value)  # a query vector: one loop, no calls
    return all(vouches(want, item) for item in value)


KEYWORDS: dict[str, Callable[[Any, Any, dict[str, Any]], bool]] = {
    "type": _type, "properties": _properties, "additionalProperties": _additional,
    "required": _required, "anyOf": _any_of, "items": _items,
    "minimum": _bound(_at_least), "maximum": _bound(_at_most),
    "exclusiveMinimum": _bound(_above), "exclusiveMaximum": _bound(_below),
    "minLength": _length(_at_least, str), "maxLength": _length(_at_most, str),
    "minItems": _length(_at_least, list), "maxItems": _length(_at_most, list),
}


def vouches(schema: Any, value: Any) -> bool:
    """True only when `value` is valid for `schema` (JSON Schema 2020-12, these keywords);
    False when it is not, or when this check cannot tell."""
    if schema is True:
        return True
    if not isinstance(schema, dict):
        return False
    for keyword, want in schema.items():
        if keyword in ANNOTATIONS:
            continue
        check = KEYWORDS.get(keyword)
        if check is None or not check(want, value, schema):
            return False
    return True
