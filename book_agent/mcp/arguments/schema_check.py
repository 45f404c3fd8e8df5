"""Tool arguments against a tool's published JSON Schema, as problems a caller can act on.

jsonschema's own messages quote the offending value (`'5' is not of type 'integer'`), which may
be a 20,000-character quote; these messages say what was expected instead, from the schema.

Valid arguments (nearly every call) are recognised by book_agent/mcp/arguments/schema_vouch.py without
jsonschema, which is imported (~50 ms) and run only for arguments that check cannot vouch for:
so jsonschema alone decides what is refused and says why. A query vector is hundreds of
numbers, and jsonschema checks each item through its full keyword machinery (about 3 us an
item: 1.2 ms of a 7 ms search round trip for 384 floats), so when it does run, an array whose
item schema is one scalar type is first checked with a plain loop over the items' exact Python
types, the standard `items` keyword running only when that loop meets an item it cannot vouch
for. Accepted, refused and the problems reported are the standard validator's
(tests/unit/test_mcp_schema_fast_items.py compares them on generated arguments).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from book_agent.mcp.arguments.schema_vouch import vouches

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

MAX_PROBLEMS = 20


# Python types whose every value the JSON Schema type accepts (bool is not a number in JSON).
_EXACT_TYPES: dict[str, tuple[type, ...]] = {"number": (int, float), "integer": (int,),
                                             "string": (str,), "boolean": (bool,)}


def _scalar_items(items: Any, schema: dict[str, Any]) -> tuple[type, ...] | None:
    """The exact types that satisfy `items` when it is `{"type": T}` for a scalar T alone."""
    if not isinstance(items, dict) or items.keys() != {"type"} or "prefixItems" in schema:
        return None
    return _EXACT_TYPES.get(items["type"]) if isinstance(items["type"], str) else None


def _fast_items(validator: Any, items: Any, instance: Any, schema: dict[str, Any]) -> Any:
    """The `items` keyword: a loop over exact types first, the standard keyword when in doubt."""
    exact = _scalar_items(items, schema)
    if exact is not None and type(instance) is list and all(type(item) in exact for item in instance):
        return
    yield from _standard_items(validator, items, instance, schema)


def _standard_items(validator: Any, items: Any, instance: Any, schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    yield from Draft202012Validator.VALIDATORS["items"](validator, items, instance, schema)


@lru_cache(maxsize=1)
def _validator_class() -> type[Draft202012Validator]:
    from jsonschema import Draft202012Validator, validators

    fast: type[Draft202012Validator] = validators.extend(Draft202012Validator, {"items": _fast_items})
    return fast


@lru_cache(maxsize=64)
def _validator(schema_json: str) -> Draft202012Validator:
    import json

    return _validator_class()(json.loads(schema_json))


def _where(error: ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path)


def _expected(error: ValidationError) -> str:
    schema, kind, want = error.schema, error.validator, error.validator_value
    if not isinstance(schema, dict):
        return f"does not match the schema ({kind})"
    if kind == "type":
        return f"must be of type {' or '.join(map(str, want)) if isinstance(want, list) else want}"
    texts = {
        "minimum": f"must be >= {want}", "maximum": f"must be <= {want}",
        "exclusiveMinimum": f"must be > {want}", "exclusiveMaximum": f"must be < {want}",
        "minLength": f"must have at least {want} characters", "maxLength": f"must have at most {want} characters",
        "minItems": f"must have at least {want} items", "maxItems": f"must have at most {want} items",
    }
    return texts.get(str(kind), f"does not match the schema ({kind})")


def _branch_error(errors: list[ValidationError]) -> ValidationError:
    """For `X | null` given something else, what X lacks (not "must be null"), as deep as it is known."""
    from jsonschema.exceptions import best_match

    real = [e for e in errors if not (e.validator == "type" and e.validator_value == "null")]
    return max(real, key=lambda e: len(e.absolute_path)) if real else best_match(errors) or errors[0]


def _problems_of(error: ValidationError) -> list[dict[str, Any]]:
    if error.validator in ("anyOf", "oneOf") and error.context:
        return _problems_of(_branch_error(error.context))
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        return [{"argument": name, "problem": "is required", "type": "required"} for name in missing]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set((error.schema or {}).get("properties") or {})
        return [{"argument": str(name), "problem": "is not an argument of this tool", "type": "unknown_argument"}
                for name in error.instance if name not in known]
    return [{"argument": _where(error), "problem": _expected(error), "type": str(error.validator)}]


def schema_problems(schema: dict[str, Any], arguments: Any) -> list[dict[str, Any]]:
    """[] when `arguments` is valid for `schema`; else up to MAX_PROBLEMS problems, sorted by argument."""
    import json

    if vouches(schema, arguments):
        return []

    validator = _validator(json.dumps(schema, sort_keys=True))
    problems: list[dict[str, Any]] = []
    for error in validator.iter_errors(arguments):
        problems += _problems_of(error)
        if len(problems) >= MAX_PROBLEMS:
            break
    return sorted(problems[:MAX_PROBLEMS], key=lambda p: p["argument"])
