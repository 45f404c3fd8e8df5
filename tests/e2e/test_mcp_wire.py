"""Every request gets exactly one answer, over a real stdio session (issue 13, findings 1 and 11).

A lone UTF-16 surrogate in any string argument, a line that is not JSON, a message that is
not JSON-RPC 2.0, an argument of the wrong JSON type: each is answered (a coded tool error or
a JSON-RPC error), the server keeps serving, and stdout stays valid UTF-8 JSON.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_types import JSONRPCResponse

from book_agent.agent import BookAgent
from book_agent.domain.unicode_text import has_lone_surrogate, scrub, scrub_text, surrogate_paths
from book_agent.mcp.stdio.transport import read_bounded
from book_agent.mcp.stdio.wire import encode, read_line
from tests.support.package_builder import tree_fingerprint
from tests.support.stdio_session import RawSession, call, rpc

BOOK = "test-book"
S = "\ud800 spies"  # the red team's lone high surrogate
LOW = "x\udfffy"  # and a lone low one

def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = {"k": [leaf]}
    return leaf


# A lone surrogate in every string argument of every tool, at the top level and nested.
SURROGATE_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": S}, "query"),
    ("search", {"query": "water", "hints": {"href": LOW}}, "hints.href"),
    ("search", {"query": "water", "hints": {S: 1}}, "hints.\ufffd spies"),  # a key, named repaired
    ("read_entry", {"record_id": S}, "record_id"),
    ("read_markdown", {"record_id": LOW}, "record_id"),
    ("read_markdown", {"heading": S}, "heading"),
    ("locate_source", {"quote": S}, "quote"),
    ("locate_source", {"record_id": S}, "record_id"),
    ("locate_source", {"hit": {"record_id": "r0001", "text": LOW}}, "hit.text"),
    ("locate_source", {"quote": "water", "hints": {"page_index": 0, "href": S}}, "hints.href"),
    ("read_source", {"locator": {"book_id": BOOK, "kind": "pdf", "page_index": 0, "page_label": S}}, "locator.page_label"),
    ("render_page", {"page_index": 0, "clip": [0, 0, 100, 100], S: 1}, "\ufffd spies"),
    ("search", {"query": "water", "hints": {"deep": _nested(150, S)}}, ""),  # too deep to walk: refused as such
]

# Arguments of the wrong JSON type that lax validation used to coerce (finding 11).
LOOSE_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": "water", "top_k": True}, "top_k"),
    ("search", {"query": "water", "top_k": "5"}, "top_k"),
    ("search", {"query": "water", "top_k": 5.5}, "top_k"),
    ("search", {"query": "water", "strict": "false"}, "strict"),
    ("search", {"query": "water", "strict": 0}, "strict"),
    ("search", {"query": 5}, "query"),
    ("search", {"query": "water", "query_vector": ["0.1"]}, "query_vector.0"),
    ("search", {"query": "water", "query_vector": [True]}, "query_vector.0"),
    ("render_page", {"page_index": "0"}, "page_index"),
    ("render_page", {"page_index": False}, "page_index"),
    ("render_page", {"page_index": 0, "dpi": "150"}, "dpi"),
    ("render_page", {"page_index": 0, "include_image": "true"}, "include_image"),
    ("render_page", {"page_index": 0, "clip": ["0", 0, 1, 1]}, "clip.0"),
    ("read_source", {"locator": {}, "max_chars": "100"}, "max_chars"),
    ("read_markdown", {"start": "0", "end": 10}, "start"),
    ("read_markdown", {"context_chars": True, "record_id": "r0001"}, "context_chars"),
    ("locate_source", {"quote": ["water"]}, "quote"),
    ("read_entry", {"record_id": 1}, "record_id"),
]


@pytest.fixture
def data_dir(tmp_path: Path, pdf_package: Path) -> Path:
    data = tmp_path / "data"
    BookAgent(data).init(pdf_package)
    return data


def _tool_error(answers: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(answers) == 1, answers  # exactly one answer per request
    result = answers[0]["result"]
    assert result["isError"] is True and "structuredContent" not in result
    error: dict[str, Any] = json.loads(result["content"][0]["text"])["error"]
    return error


def test_every_malformed_request_is_answered_over_stdio(data_dir: Path, pdf_package: Path, tmp_path: Path) -> None:
    before = tree_fingerprint(pdf_package)
    session = RawSession(data_dir, BOOK, tmp_path / "stderr.txt")
    cases = SURROGATE_CALLS + LOOSE_CALLS
    session.send(*(call(i, tool, args) for i, (tool, args, _) in enumerate(cases, start=1)))
    n = len(cases)
    protocol = [  # (line, expected JSON-RPC error code, expected id)
        (b"not json", -32700, None),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"', -32700, None),  # cut short
        (b"[" * 100_000, -32700, None),  # nesting deeper than any parser's stack
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": NaN}}', -32700, None),
        (rpc("tools/list", {}, n + 1).replace('"2.0"', '"1.0"').encode(), -32600, n + 1),
        (b'{"id": %d, "method": "tools/list"}' % (n + 2), -32600, n + 2),  # no jsonrpc member
        (b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', -32600, None),
        (b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}', -32600, None),
        (b"[]", -32600, None),
        (b"42", -32600, None),
    ]
    session.send(*(line for line, _, _ in protocol))
    session.send(rpc("tools/call", {"name": "no_such_\ud800", "arguments": {}}, n + 3),
                 rpc("resources/read", {"uri": f"book://{BOOK}/\ud800"}, n + 4),
                 rpc("\ud800/method", {}, n + 5),
                 call(n + 6, "status", {}))
    answers = session.wait_for(list(range(1, n + 7)), nulls=sum(1 for *_, i in protocol if i is None))
    for i, (tool, _, argument) in enumerate(cases, start=1):
        error = _tool_error(answers[i])
        assert error["code"] == "mcp.bad_arguments", (tool, error)
        assert any(p["argument"] == argument for p in error["details"]["problems"]), (tool, argument, error)
    nulls = [m["error"]["code"] for m in answers[None]]
    for _, code, ident in protocol:
        if ident is None:
            assert code in nulls
            nulls.remove(code)
        else:
            assert [m["error"]["code"] for m in answers[ident]] == [code]
    assert answers[n + 3][0]["error"]["code"] == -32602  # an unknown tool: a JSON-RPC error
    assert answers[n + 3][0]["error"]["data"]["error"]["code"] == "mcp.unknown_tool"
    assert "error" in answers[n + 4][0] and "error" in answers[n + 5][0]  # JSON-RPC errors, written as UTF-8
    assert answers[n + 6][0]["result"]["structuredContent"]["package"]["healthy"] is True  # still serving
    assert session.close() == 0
    assert all(not has_lone_surrogate(line.decode("utf-8")) for line in session.raw)
    assert tree_fingerprint(pdf_package) == before


def test_schema_valid_arguments_still_pass(data_dir: Path, tmp_path: Path) -> None:
    """Strict is not stricter than the published schema: an integral float is an integer there."""
    session = RawSession(data_dir, BOOK, tmp_path / "stderr.txt")
    session.send(call(1, "search", {"query": "water", "top_k": 3.0, "query_vector": None, "hints": {}}),
                 call(2, "render_page", {"page_index": 0, "dpi": 72, "clip": [0, 0, 200, 200]}),
                 call(3, "read_markdown", {"start": 0, "end": 40}))
    answers = session.wait_for([1, 2, 3], timeout=60)
    assert len(answers[1][0]["result"]["structuredContent"]["hits"]) <= 3
    assert answers[2][0]["result"]["structuredContent"]["width_px"] > 0
    assert answers[3][0]["result"]["structuredContent"]["text"]
    assert session.close() == 0


# --- the pieces, in process -------------------------------------------------------------

@pytest.mark.parametrize(
    ("line", "code"),
    [("{", -32700), ("", None), ("  \t", None), ('{"jsonrpc": "2.0", "result": 5}', None),
     ('{"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}', -32600), ("Infinity", -32700)],
)
def test_read_line_answers_or_drops(line: str, code: int | None) -> None:
    message, error = read_line(line)
    assert message is None
    assert (error.error.code if error else None) == code


def test_read_line_keeps_a_lone_surrogate_for_the_tools_to_refuse() -> None:
    message, error = read_line(call(3, "search", {"query": S}))
    assert error is None and message is not None
    assert message.params == {"name": "search", "arguments": {"query": S}}  # type: ignore[union-attr]


def test_an_overlong_line_is_consumed_to_its_end() -> None:
    stream = io.TextIOWrapper(io.BytesIO(b"x" * 50 + b"\n" + b'{"a": 1}\n'), encoding="utf-8")
    assert read_bounded(stream, limit=16) == ("x" * 16, False)
    assert read_bounded(stream, limit=16) == ('{"a": 1}\n', True)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_answer_encodes_as_utf8_json(value: Any) -> None:
    line = encode(JSONRPCResponse(jsonrpc="2.0", id=1, result={"value": value}))
    line.encode("utf-8")  # never raises
    assert json.loads(line)["result"]["value"] == json.loads(json.dumps(scrub(value)))


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_scrub_replaces_exactly_the_lone_surrogates(text: str) -> None:
    clean = scrub_text(text)
    clean.encode("utf-8")
    assert has_lone_surrogate(text) == (clean != text) == bool(surrogate_paths(text))
    assert len(clean) <= len(text)
