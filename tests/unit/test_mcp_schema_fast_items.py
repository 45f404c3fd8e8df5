"""Issue 29: the MCP argument check's fast paths (schema_vouch for valid arguments, the `items`
loop inside jsonschema) accept, refuse and report exactly what the standard jsonschema
validator does, on every published tool schema and on generated schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from book_agent.mcp.arguments import schema_check
from book_agent.mcp.arguments.schema_vouch import vouches

CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"
SCHEMAS = {f"{path.stem}:{tool['name']}": tool["inputSchema"]
           for path in (CONTRACTS / "mcp-tools.json", CONTRACTS / "mcp-library-tools.json")
           for tool in json.loads(path.read_text(encoding="utf-8"))["tools"]}


def reference_problems(schema: dict[str, Any], arguments: Any) -> list[dict[str, Any]]:
    """schema_problems as it was: the standard Draft 2020-12 validator, item by item."""
    problems: list[dict[str, Any]] = []
    sorted_schema = json.loads(json.dumps(schema, sort_keys=True))  # as schema_problems caches it
    for error in Draft202012Validator(sorted_schema).iter_errors(arguments):
        problems += schema_check._problems_of(error)
        if len(problems) >= schema_check.MAX_PROBLEMS:
            break
    return sorted(problems[: schema_check.MAX_PROBLEMS], key=lambda p: p["argument"])


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False), st.text(max_size=5))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
# Mostly numbers, now and then one item that is not (a string, a bool, null, a list, a dict).
vector_items = st.one_of(st.floats(allow_nan=False), st.floats(allow_nan=False), st.integers(-5, 5),
                         st.floats(allow_nan=False), json_values)
vectors = st.lists(st.floats(-1, 1), min_size=0, max_size=400) | st.lists(vector_items, max_size=40)
argument_names = st.sampled_from(["query", "top_k", "strict", "query_vector", "hints", "book", "books",
                                  "record_id", "record_ids", "quotes", "page_index", "ids", "unknown"])
arguments = st.dictionaries(argument_names, json_values | vectors, max_size=6) | json_values


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SCHEMAS)), arguments)
def test_the_fast_check_reports_what_the_standard_validator_reports(tool: str, args: Any) -> None:
    assert schema_check.schema_problems(SCHEMAS[tool], args) == reference_problems(SCHEMAS[tool], args)


@settings(max_examples=100, deadline=None)
@given(st.lists(vector_items, max_size=400), st.sampled_from(["number", "integer", "string", "boolean"]))
def test_an_array_of_one_scalar_type_is_checked_as_jsonschema_checks_it(items: list[Any], kind: str) -> None:
    schema = {"type": "object", "properties": {"v": {"anyOf": [{"type": "array", "items": {"type": kind},
                                                                "maxItems": 300}, {"type": "null"}]}}}
    assert schema_check.schema_problems(schema, {"v": items}) == reference_problems(schema, {"v": items})


def test_a_bad_item_in_a_long_vector_is_refused_and_named() -> None:
    vector: list[Any] = [0.5] * 384
    vector[200] = "0.5"
    problems = schema_check.schema_problems(SCHEMAS["mcp-tools:search"], {"query": "q", "query_vector": vector})
    assert problems == [{"argument": "query_vector.200", "problem": "must be of type number", "type": "type"}]
    vector[200] = True  # a JSON boolean is not a number, though Python's bool is an int
    problems = schema_check.schema_problems(SCHEMAS["mcp-tools:search"], {"query": "q", "query_vector": vector})
    assert problems == [{"argument": "query_vector.200", "problem": "must be of type number", "type": "type"}]


def test_the_published_query_vector_takes_the_fast_loop() -> None:
    """The search tool's query_vector items are one scalar type, so the loop (not jsonschema's
    per-item machinery) checks them: the speed-up applies to the schema hosts are given."""
    array = SCHEMAS["mcp-tools:search"]["properties"]["query_vector"]["anyOf"][0]
    assert schema_check._scalar_items(array["items"], array) == (int, float)
    assert schema_check._scalar_items({"type": "number", "minimum": 0}, array) is None  # more than a type
    assert schema_check._scalar_items(array["items"], {**array, "prefixItems": []}) is None


# Schemas made of the keywords schema_vouch knows, and one it does not (it must then defer).
numbers = st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False)
type_names = st.sampled_from(["object", "array", "string", "boolean", "number", "integer", "null"])
leaf_schemas = st.one_of(
    st.fixed_dictionaries({"type": type_names | st.lists(type_names, min_size=1, max_size=3)}),
    st.fixed_dictionaries({}, optional={"type": st.sampled_from(["number", "integer"]), "minimum": numbers,
                                        "maximum": numbers, "exclusiveMinimum": numbers,
                                        "exclusiveMaximum": numbers, "description": st.text(max_size=3)}),
    st.fixed_dictionaries({}, optional={"type": st.just("string"), "minLength": st.integers(0, 3),
                                        "maxLength": st.integers(0, 3)}),
    st.fixed_dictionaries({"enum": st.lists(scalars, max_size=3)}),  # not known: always deferred
    st.booleans(),
)
schemas = st.recursive(leaf_schemas, lambda inner: st.one_of(
    st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"type": st.just("array")}, optional={"items": inner, "minItems": st.integers(0, 3),
                                                                "maxItems": st.integers(0, 3)}),
    st.fixed_dictionaries({}, optional={
        "type": st.just("object"), "properties": st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
        "required": st.lists(st.sampled_from("abcd"), max_size=3, unique=True),
        "additionalProperties": st.booleans() | inner}),
), max_leaves=6)
values = st.recursive(scalars | numbers | st.text("ab", max_size=5), lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from("abcd"), inner, max_size=4), max_leaves=10)


def values_for(schema: Any) -> st.SearchStrategy[Any]:
    """Values near what `schema` asks for (right type, lengths and numbers about its bounds), or
    anything at all: so each keyword is met both satisfied and broken."""
    if not isinstance(schema, dict):
        return values
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    near: list[st.SearchStrategy[Any]] = []
    if {"number", "integer"} & set(kinds) or {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} & set(schema):
        near.append(numbers | st.integers(-4, 4).map(lambda i: i / 2) | st.booleans())
    if "string" in kinds or {"minLength", "maxLength"} & set(schema):
        near.append(st.text("ab", max_size=5))
    if "array" in kinds:
        near.append(st.lists(values_for(schema.get("items")), max_size=4))
    if "object" in kinds or "properties" in schema or "required" in schema:
        props = schema.get("properties") or {}
        near.append(st.dictionaries(st.sampled_from("abcd"), st.one_of(*[values_for(p) for p in props.values()],
                                                                       values), max_size=4))
    if "anyOf" in schema:
        near.append(st.one_of(*[values_for(branch) for branch in schema["anyOf"]]))
    return st.one_of(*near, values) if near else values


def check_vouch(data: st.DataObject, schema: Any) -> None:
    value = data.draw(values_for(schema))
    if vouches(schema, value):
        assert Draft202012Validator(schema).is_valid(value), (schema, value)


@settings(max_examples=500, deadline=None)
@given(st.data(), schemas)
def test_what_schema_vouch_accepts_jsonschema_accepts(data: st.DataObject, schema: Any) -> None:
    check_vouch(data, schema)


@settings(max_examples=300, deadline=None)
@given(st.data(), leaf_schemas)
def test_each_keyword_vouch_knows_holds_at_its_edges(data: st.DataObject, schema: Any) -> None:
    check_vouch(data, schema)


@settings(max_examples=300, deadline=None)
@given(schemas.filter(lambda s: isinstance(s, dict)), values)
def test_generated_schemas_report_what_jsonschema_reports(schema: dict[str, Any], value: Any) -> None:
    assert schema_check.schema_problems(schema, value) == reference_problems(schema, value)


VALID_CALLS = [
    ("mcp-tools:search", {"query": "river", "top_k": 6, "query_vector": [0.25, -1, 3e-5] * 128, "hints": None}),
    ("mcp-tools:search", {"query": "兵法", "strict": True, "hints": {"page_index": 12}}),
    ("mcp-tools:read_entry", {"record_id": "p0001-05"}),
]


@pytest.mark.parametrize(("tool", "arguments"), VALID_CALLS)
def test_valid_calls_are_vouched_for_without_jsonschema(tool: str, arguments: dict[str, Any]) -> None:
    """The calls hosts send: vouched for, so jsonschema is neither run nor (in a fresh server) imported."""
    assert Draft202012Validator(SCHEMAS[tool]).is_valid(arguments)
    assert vouches(SCHEMAS[tool], arguments)
