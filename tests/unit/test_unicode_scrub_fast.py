"""needs_scrub and surrogate_paths skip what cannot hold a surrogate (issue 29: a query vector's
numbers each cost a path string, and every answer was copied by scrub); they must say what the
plain walks say, on any JSON-like value."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain import unicode_text
from book_agent.domain.unicode_text import (
    has_lone_surrogate,
    needs_scrub,
    scrub,
    scrub_text,
    surrogate_paths,
)


def surrogate_paths_plain(value: Any, path: str = "", depth: int = 0) -> list[str]:
    """surrogate_paths as first written: every item visited, every path spelled."""
    if isinstance(value, str):
        return [path] if has_lone_surrogate(value) else []
    if depth >= unicode_text._MAX_DEPTH:
        return []
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{scrub_text(str(key))}" if path else scrub_text(str(key))
            if isinstance(key, str) and has_lone_surrogate(key):
                found.append(where)
            found += surrogate_paths_plain(item, where, depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found += surrogate_paths_plain(item, f"{path}.{index}" if path else str(index), depth + 1)
    return found


TEXT = st.text(alphabet=st.sampled_from(["a", "é", "\ud800", "\udc00", "😀", " ", "."]), max_size=4)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.one_of(TEXT, st.integers(0, 3)), inner, max_size=4)), max_leaves=25)


@settings(max_examples=2000, deadline=None)
@given(VALUES)
def test_the_shortcuts_answer_as_the_plain_walks(value: Any) -> None:
    assert surrogate_paths(value) == surrogate_paths_plain(value)
    assert needs_scrub(value) == (scrub(value) != value or _has_tuple(value))


def _has_tuple(value: Any) -> bool:
    if isinstance(value, tuple):
        return True
    if isinstance(value, dict):
        return any(_has_tuple(v) for v in value.values())
    return isinstance(value, list) and any(_has_tuple(v) for v in value)


def test_nesting_past_what_scrub_keeps_needs_it() -> None:
    deep: Any = 1
    for _ in range(unicode_text._MAX_DEPTH + 1):
        deep = [deep]
    assert needs_scrub(deep) and scrub(deep) != deep
