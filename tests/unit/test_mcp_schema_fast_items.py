"""Issue 29: the MCP argument check's fast `items` loop accepts, refuses and reports exactly
what the standard jsonschema validator does, on every published tool schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from book_agent.mcp import schema_check

CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"
SCHEMAS = {f"{path.stem}:{tool['name']}": tool["inputSchema"]
           for path in (CONTRACTS / "mcp-tools.json", CONTRACTS / "mcp-library-tools.json")
           for tool in json.loads(path.read_text(encoding="utf-8"))["tools"]}


def reference_problems(schema: dict[str, Any], arguments: Any) -> list[dict[str, Any]]:
    """schema_problems as it was: the standard Draft 2020-12 validator, item by item."""
    problems: list[dict[str, Any]] = []
    for error in Draft202012Validator(schema).iter_errors(arguments):
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
