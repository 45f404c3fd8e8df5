"""ready_result (book_agent/mcp/tools/results.py) makes of a tool's answer exactly the result FastMCP's own
conversion makes (issue 29: that conversion serialised each answer four times): the same text
block, the same structuredContent, the same wire form; and it hands back (None) whatever FastMCP
must decide itself: a lone surrogate (scrubbed first), a NaN or infinity, a value that is not
an object."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fastmcp.tools import FunctionTool
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.agent import BookAgent
from book_agent.domain.unicode_text import has_lone_surrogate
from book_agent.mcp.tools.results import ready_result


async def search(query: str) -> Any:  # the shape of every published tool: return annotation Any
    return None


FASTMCP_TOOL = FunctionTool.from_function(search, name="search", output_schema={"type": "object"})


def fastmcp_result(value: Any) -> Any:
    return FASTMCP_TOOL.convert_result(value)


def same_as_fastmcp(value: dict[str, Any]) -> None:
    ready, theirs = ready_result(value), fastmcp_result(value)
    assert ready is not None
    assert ready.content == theirs.content
    assert ready.content[0].text == theirs.content[0].text
    assert ready.structured_content == theirs.structured_content
    assert ready.to_mcp_result() == theirs.to_mcp_result()
    assert (ready.meta, ready.is_error) == (theirs.meta, theirs.is_error)


def test_a_real_search_answer_and_reads_are_converted_as_fastmcp_does(tmp_path: Path, pdf_package: Path) -> None:
    agent = BookAgent(tmp_path / "data")
    try:
        agent.init(pdf_package)
        found = agent.search("test-book", "the", top_k=5)
        assert found["hits"]
        same_as_fastmcp(dict(found))
        same_as_fastmcp(dict(agent.status("test-book")))
        same_as_fastmcp(dict(agent.read_entry("test-book", found["hits"][0]["record_id"])))
    finally:
        agent.close()


def test_odd_but_valid_values_keep_fastmcp_text() -> None:
    same_as_fastmcp({"é": "line\u2028sep \"quoted\" \\ \x00 \U0001f600", "big": 10**30, "tiny": 5e-324,
                     "e": 1e16, "neg": -0.0, "tuple": (1, (2, 3)), 7: "an int key", "path": Path("/x/y"),
                     "nested": {"a": [None, True, False, {"b": []}]}})


def test_what_fastmcp_must_decide_is_handed_back() -> None:
    assert ready_result({"text": "a lone \ud800 surrogate"}) is None
    assert ready_result({"\udfff": 1}) is None
    assert ready_result({"score": math.nan}) is None
    assert ready_result({"score": [math.inf]}) is None
    assert ready_result(["not", "an", "object"]) is None
    assert ready_result("text") is None
    assert ready_result({"words": "NaN and Infinity, as words"}) is None  # FastMCP's substring test, kept


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return has_lone_surrogate(value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_surrogate(v) for v in value)
    return False


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_like, max_size=5))
def test_any_answer_is_fastmcps_or_handed_back(value: dict[str, Any]) -> None:
    ready = ready_result(value)
    if ready is None:
        text = repr(value)
        assert _has_surrogate(value) or "nan" in text or "inf" in text or "NaN" in text or "Infinity" in text
        return
    same_as_fastmcp(value)
