"""The MCP middleware's walks over a call's arguments (nesting depth, lone surrogates) skip a list
of plain numbers at C speed (a query vector: ~0.2 ms a call each, issue 46) and still find what
hides among numbers: a deep array after them, a surrogate string between them."""

from __future__ import annotations

from typing import Any

import pytest

from book_agent.domain.unicode_text import surrogate_paths
from book_agent.mcp.arguments.middleware import MAX_NESTING, _too_deep

VECTOR = [0.25] * 384


def deep(levels: int) -> Any:
    value: Any = 1.0
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("arguments", "too_deep"), [
    ({"query": "q", "query_vector": VECTOR}, False),
    ({"query_vector": [*VECTOR, deep(MAX_NESTING + 1)]}, True),
    ({"query_vector": [*VECTOR, deep(MAX_NESTING - 3)]}, False),
    ({"hints": {"a": [1, 2, {"b": deep(MAX_NESTING)}]}}, True),
    ({"hints": {"a": [None, True, "x", 3]}}, False),
])
def test_nesting_is_found_among_numbers(arguments: dict[str, Any], too_deep: bool) -> None:
    assert _too_deep(arguments) is too_deep


def test_surrogates_are_found_among_numbers_and_skipped_in_numbers_alone() -> None:
    assert surrogate_paths({"query": "q", "query_vector": VECTOR}) == []
    assert surrogate_paths({"query_vector": [*VECTOR, "bad\ud800"]}) == ["query_vector.384"]
    assert surrogate_paths({"hints": {"xs": [1, None, ["ok", "\udfff"]]}}) == ["hints.xs.2.1"]
    assert surrogate_paths([1.5, True, None, 3]) == []
