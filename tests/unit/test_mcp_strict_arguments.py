"""Issue 47: tool arguments are checked by FastMCP's strict validation (pydantic, on the types the
published schema is made from), told in the schema's words (book_agent/mcp/arguments/strict.py).
The published JSON Schema stays the contract: on every published tool, one-book and library,
each argument set below is refused exactly when the standard Draft 2020-12 validator
(jsonschema, here the reference only) refuses it, blaming the same arguments."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.arguments.strict import integral_floats
from book_agent.mcp.server import build_server

REACHED = "test.reached"


class Reached:
    """An agent whose every method says the call got past validation."""

    def __getattr__(self, name: str) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            raise BookAgentError(REACHED, f"{name} was called")
        return method


SCALARS: list[Any] = [None, True, False, 0, 1, -1, 5.0, 5.5, 1e300, 10**30, "", "5", "x", "true", [], {}]


def candidates(schema: dict[str, Any]) -> Iterator[Any]:
    """Values around what a property's schema says: wrong types, each bound and one past it."""
    yield from SCALARS
    for branch in [schema, *schema.get("anyOf", [])]:
        for key, step in (("minimum", -1), ("maximum", 1), ("exclusiveMinimum", 0), ("exclusiveMaximum", 0)):
            if key in branch:
                yield from (branch[key], branch[key] + step, float(branch[key]), branch[key] + step + 0.5)
        for key, step in (("minLength", -1), ("maxLength", 1)):
            if key in branch:
                yield from ("a" * branch[key], "a" * max(0, branch[key] + step))
        for key, step in (("minItems", -1), ("maxItems", 1)):
            if key in branch:
                for length in (branch[key], max(0, branch[key] + step)):
                    yield from ([1.5] * length, ["a"] * length, [1] * length)
        if "items" in branch:
            yield from ([True], ["0.1"], [None], [[1]], [1, 2.5])
        if branch.get("type") == "object":
            yield from ({"a": 1}, {"page_index": 3}, {"visual": "yes"})


def valid_value(schema: dict[str, Any]) -> Any:
    check = Draft202012Validator(schema)
    return next(value for value in [*candidates(schema), "a", 1, {"a": 1}] if check.is_valid(value))


def calls(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    props, required = schema.get("properties", {}), schema.get("required", [])
    base = {name: valid_value(props[name]) for name in required}
    yield base
    yield {**base, "surprise": 1}
    for name in required:
        yield {key: value for key, value in base.items() if key != name}
    for name, sub in props.items():
        for value in candidates(sub):
            yield {**base, name: value}


def blamed(error: ValidationError) -> set[str]:
    """The top-level arguments a reference error is about."""
    if error.validator == "required":
        return {name for name in error.validator_value if name not in (error.instance or {})}
    if error.validator == "additionalProperties":
        known = set((error.schema or {}).get("properties") or {})
        return {name for name in error.instance if name not in known}
    return {str(error.absolute_path[0])} if error.absolute_path else {""}


async def outcomes(ref: str) -> list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | None]]:
    """(tool, its inputSchema, arguments, the refusal's error or None) for every call."""
    found = []
    async with Client(build_server(ref, agent=Reached())) as client:
        for tool in await client.list_tools():
            for arguments in calls(tool.input_schema):
                result = await client.call_tool(tool.name, arguments, raise_on_error=False)
                error = json.loads(result.content[0].text)["error"] if result.is_error else None
                found.append((tool.name, tool.input_schema, arguments, error))
    return found


@pytest.mark.parametrize("ref", ["a-book", "@all"])
def test_refused_exactly_when_the_published_schema_refuses(ref: str) -> None:
    seen = 0
    for tool, schema, arguments, error in asyncio.run(outcomes(ref)):
        reference = list(Draft202012Validator(schema).iter_errors(arguments))
        refused = error is not None and error["code"] == "mcp.bad_arguments" and "problems" in error["details"]
        assert refused == bool(reference), (tool, arguments, error, [e.message for e in reference])
        if refused:
            assert error is not None
            expected = set().union(*map(blamed, reference))
            assert {p["argument"].split(".")[0] for p in error["details"]["problems"]} == expected, (tool, arguments)
            said = json.dumps(error)
            assert not any(isinstance(v, str) and len(v) > 20 and v in said for v in arguments.values())
            seen += 1
    assert seen > 100  # the generator reaches the refusals it is meant to


@pytest.mark.parametrize(("arguments", "problem"), [
    ({"query": "x", "top_k": "5"}, {"argument": "top_k", "problem": "must be of type integer", "type": "type"}),
    ({"query": "x", "top_k": 0}, {"argument": "top_k", "problem": "must be >= 1", "type": "minimum"}),
    ({"query": "x", "top_k": 5.5}, {"argument": "top_k", "problem": "must be of type integer", "type": "type"}),
    ({"query": "x" * 4001}, {"argument": "query", "problem": "must have at most 4000 characters", "type": "maxLength"}),
    ({"query": "x", "surprise": 1},
     {"argument": "surprise", "problem": "is not an argument of this tool", "type": "unknown_argument"}),
    ({}, {"argument": "query", "problem": "is required", "type": "required"}),
    ({"query": "x", "query_vector": [0.5, "0.1"]},
     {"argument": "query_vector.1", "problem": "must be of type number", "type": "type"}),
])
def test_a_refusal_names_the_schema_keyword_and_never_the_value(arguments: dict[str, Any],
                                                                problem: dict[str, Any]) -> None:
    async def run() -> Any:
        async with Client(build_server("a-book", agent=Reached())) as client:
            return await client.call_tool("search", arguments, raise_on_error=False)

    error = json.loads(asyncio.run(run()).content[0].text)["error"]
    assert error["code"] == "mcp.bad_arguments" and error["details"]["problems"] == [problem]


def test_whole_floats_are_integers_where_the_schema_says_integer_only() -> None:
    schema = {"type": "object", "properties": {
        "top_k": {"type": "integer"}, "start": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
        "ratio": {"type": "number"}, "either": {"type": ["integer", "number"]},
        "pages": {"type": "array", "items": {"type": "integer"}}, "vector": {"type": "array", "items": {"type": "number"}},
        "any": {}}}
    given = {"top_k": 5.0, "start": 2.0, "ratio": 3.0, "either": 4.0, "pages": [1.0, 2.5], "vector": [1.0], "any": 7.0}
    fixed = integral_floats(schema, given)
    assert fixed == given and [type(fixed[name]) for name in given] == [int, int, float, float, list, list, float]
    assert [type(page) for page in fixed["pages"]] == [int, float] and fixed["vector"] is given["vector"]
    unchanged = {"top_k": 5, "ratio": 3.0, "vector": [1.0] * 384}
    assert integral_floats(schema, unchanged) is unchanged  # nothing to change: the very object
