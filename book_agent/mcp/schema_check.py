"""Tool arguments against a tool's published JSON Schema, as problems a caller can act on.

jsonschema's own messages quote the offending value (`'5' is not of type 'integer'`), which may
be a 20,000-character quote; these messages say what was expected instead, from the schema.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

MAX_PROBLEMS = 20


def load_validator_library() -> None:
    """Import jsonschema (~150 ms): at the first call, or earlier by the background warm-up,
    never before `tools/list` (a bare FastMCP server does not import it)."""
    import jsonschema  # noqa: F401


@lru_cache(maxsize=64)
def _validator(schema_json: str) -> Draft202012Validator:
    import json

    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _where(error: ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path)


def _expected(error: ValidationError) -> str:
    schema, kind, want = error.schema, error.validator, error.validator_value
    if not isinstance(schema, dict):
        return f"does not match the schema ({kind})"
    texts = {
        "type": f"must be of type {' or '.join(want) if isinstance(want, list) else want}",
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

    validator = _validator(json.dumps(schema, sort_keys=True))
    problems: list[dict[str, Any]] = []
    for error in validator.iter_errors(arguments):
        problems += _problems_of(error)
        if len(problems) >= MAX_PROBLEMS:
            break
    return sorted(problems[:MAX_PROBLEMS], key=lambda p: p["argument"])
