"""The search argument checks every path shares (book_agent/services/search/checks.py), on their edges."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.services.search.checks import check_arguments, check_hints, check_query_vector

ACCEPTED: list[Any] = [
    [0.5, -0.25, 1.0], [1, 0, 0], [np.float32(0.5), 1.0], np.asarray([0.1, 0.2], dtype=np.float32),
    np.asarray([1, 2], dtype=np.int64), (0.5, 0.5), [1e308, 1e308],  # finite items whose sum overflows
    [5e-324, 0.0],
]
REFUSED: list[Any] = [
    [], [0.0, 0.0], [0, -0.0], [math.nan], [1.0, math.inf], [-math.inf, math.inf], [True, 0.5], [False, 1],
    ["0.5"], [None, 1.0], [[0.5], [0.5]], np.zeros((2, 2)), "0.5,0.5", {"a": 1.0}, 0.5, [1.0] * 16_385,
    np.asarray([math.nan, 1.0]), [np.float64(math.nan)],
]


@pytest.mark.parametrize("vector", ACCEPTED, ids=repr)
def test_well_formed_vectors_pass(vector: Any) -> None:
    check_query_vector(vector)


@pytest.mark.parametrize("vector", REFUSED, ids=lambda v: repr(v)[:40])
def test_malformed_vectors_are_refused(vector: Any) -> None:
    with pytest.raises(BookAgentError) as refused:
        check_query_vector(vector)
    assert refused.value.code == "query.vector_invalid" and refused.value.remediation


@pytest.mark.parametrize(("kwargs", "code"), [
    ({"top_k": True}, "search.bad_top_k"), ({"top_k": 2.0}, "search.bad_top_k"), ({"top_k": np.int64(101)}, "search.bad_top_k"),
    ({"strict": 1}, "search.bad_strict"), ({"query": "x" * 4001}, "search.query_too_long"),
    ({"query": " \n", "query_vector": None}, "search.empty_query"), ({"query": b"bytes"}, "search.bad_query"),
])
def test_arguments_are_refused_with_their_code(kwargs: dict[str, Any], code: str) -> None:
    arguments: dict[str, Any] = {"query": "water", "top_k": 5, "query_vector": None, **kwargs}
    with pytest.raises(BookAgentError) as refused:
        check_arguments(**arguments)
    assert refused.value.code == code


def test_numpy_integers_and_an_exactly_4000_character_query_pass() -> None:
    check_arguments("x" * 4000, np.int64(100), None)
    check_arguments("", 1, [0.5])  # a vector-only search


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


DEEP_HINTS = {"x": _nested(25)}  # past MAX_HINT_DEPTH: refused, not walked


def test_hints_nested_too_deep_are_refused() -> None:
    with pytest.raises(BookAgentError):
        check_hints(DEEP_HINTS)
    check_hints({"x": _nested(10)})


@pytest.mark.parametrize("hints", [
    {"visual": 1}, {"page_index": True}, {"page_index": 2.0}, {"page_text_chars": -3}, {"href": 3},
    {1: "x"}, {"x": {1, 2}}, {"x": math.nan}, {"x": [object()]}, {"x": {"y": {2: 1}}}, [("visual", True)],
])
def test_malformed_hints_are_refused(hints: Any) -> None:
    with pytest.raises(BookAgentError) as refused:
        check_hints(hints)
    assert refused.value.code == "search.bad_hints"


def test_hints_of_any_json_pass() -> None:
    check_hints({"visual": True, "page_index": 0, "page_text_chars": 12, "href": "a.xhtml", "free": [1, "b", None,
                 {"c": 2.5}], "numbers": (1, 2)})


# Float arrays are checked by their own loops (checks._float_array_checked); each must end as its list does
ARRAYS: list[Any] = [
    np.asarray([0.1, 0.2], dtype=np.float32), np.asarray([3e38, 3e38], dtype=np.float32),  # a sum that overflows
    np.asarray([1e308, 1e308]), np.asarray([5e-324, 0.0]), np.asarray([0.5], dtype=np.float16),
    np.zeros(3, dtype=np.float32), np.asarray([-0.0, 0.0]), np.asarray([math.nan, 1.0], dtype=np.float32),
    np.asarray([1.0, math.inf]), np.asarray([-math.inf, math.inf]), np.asarray([], dtype=np.float32),
    np.ones(16_385, dtype=np.float32), np.ones(16_384, dtype=np.float32),
    np.asarray([True, True]), np.asarray([1, 0], dtype=np.int32),
]


@pytest.mark.parametrize("vector", ARRAYS, ids=lambda v: f"{v.dtype}{v.shape}{v.tolist()!r:.30}")
def test_a_numpy_array_is_judged_as_its_items_would_be(vector: Any) -> None:
    def outcome(value: Any) -> tuple[str, str] | None:
        try:
            check_query_vector(value)
        except BookAgentError as exc:
            return exc.code, exc.message
        return None

    assert outcome(vector) == outcome(vector.tolist())
