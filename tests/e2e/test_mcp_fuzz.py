"""Property-based fuzzing of the MCP tools over a real stdio session (issue 13, beyond the findings).

Arbitrary arguments for every tool (strings with lone surrogates, NULs and huge lengths;
integers of any size, floats, booleans, null; nested arrays and objects; missing, extra and
wrongly named arguments; unknown tools): every call is answered within a bound by exactly one
response, a result or a coded error, never a traceback, and the package is not changed by a
byte. One server process serves all examples, as a host would keep it.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from book_agent.agent import BookAgent
from tests.support.package_builder import tree_fingerprint
from tests.support.stdio_session import RawSession, call

BOOK = "test-book"
ANSWER_BOUND_S = 60.0  # per call; a 20,000-character quote or a 1200-dpi render takes well under it
ARGUMENTS = {
    "search": ["query", "top_k", "strict", "query_vector", "hints"],
    "read_entry": ["record_id"],
    "read_markdown": ["record_id", "start", "end", "heading", "context_chars"],
    "get_skill": [],
    "locate_source": ["hit", "record_id", "quote", "hints"],
    "read_source": ["locator", "max_chars"],
    "render_page": ["page_index", "clip", "dpi", "include_image"],
    "status": [],
}
REQUIRED = {"search": {"query"}, "read_entry": {"record_id"}, "read_source": {"locator"}, "render_page": {"page_index"}}
CODE = re.compile(r"^[a-z_]+\.[a-z_]+$")  # a stable error code: family.name

surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3)
strings = st.one_of(  # plain text weighted up: most calls should get past the schema check
    st.text(max_size=40), st.text(max_size=40), st.text(max_size=40),
    st.sampled_from(["r0001", "water", "general battle", "兵者", "fire"]),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=10), surrogates, st.text(max_size=10)),
    st.text(alphabet="\x00 ab\n", max_size=20),
    st.sampled_from([4000, 4001, 20000, 20001, 100_001]).map(lambda n: "water " * (n // 6) + "w" * (n % 6)),
    st.sampled_from(["r0001", "r0002", "water", "test-book", "pdf", "epub", "text/ch01.xhtml", " \t\n "]),
)
scalars = st.one_of(
    st.none(), st.booleans(), strings,
    st.integers(min_value=-(2**70), max_value=2**70), st.integers(-3, 1300),
    st.floats(allow_nan=False, allow_infinity=False),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(strings, inner, max_size=5),
                      max_leaves=12)
# Arguments of the right JSON type too (most of them), so the tools themselves run, not only the schema check.
ids = st.sampled_from(["r0001", "r0002", "r0003", "nope"]) | strings
typed: dict[str, st.SearchStrategy[Any]] = {
    "query": strings, "top_k": st.integers(1, 100), "strict": st.booleans(), "heading": strings,
    "query_vector": st.none() | st.lists(st.floats(-1, 1), max_size=8) | st.lists(st.just(0.1), min_size=384, max_size=384),
    "hints": st.none() | st.dictionaries(st.sampled_from(["page_index", "href", "visual", "spine_index"]) | strings, values, max_size=3),
    "record_id": ids, "start": st.integers(0, 10**6), "end": st.integers(0, 10**6), "context_chars": st.integers(0, 20000),
    "quote": strings, "max_chars": st.integers(1, 200_000), "include_image": st.booleans(),
    "page_index": st.integers(0, 5), "dpi": st.integers(18, 300),
    "clip": st.none() | st.lists(st.floats(-100, 1000), min_size=4, max_size=4),
    "locator": st.fixed_dictionaries({"book_id": st.sampled_from([BOOK, "other"]), "kind": st.sampled_from(["pdf", "epub"])},
                                     optional={"page_index": st.integers(-1, 5), "char_start": st.integers(-5, 5000),
                                               "char_end": st.integers(-5, 5000), "href": strings}),
    "hit": st.fixed_dictionaries({"text": strings}, optional={"record_id": ids, "book_id": st.sampled_from([BOOK, "x"]),
                                                              "source_locator": values}),
}


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, Any]:
    tool = draw(st.sampled_from([*ARGUMENTS, "no_such_tool"]))
    names = ARGUMENTS.get(tool, [])
    chosen = set(draw(st.lists(st.sampled_from(names), unique=True)) if names else [])
    if draw(st.integers(0, 9)):
        chosen |= REQUIRED.get(tool, set())  # mostly: a call without them only reaches the schema check
    arguments: dict[str, Any] = {}
    for name in sorted(chosen):
        arguments[name] = draw(typed[name] if draw(st.integers(0, 9)) else values)
    if draw(st.integers(0, 9)) == 0:
        arguments[draw(strings)] = draw(values)  # an argument the tool does not have
    if draw(st.integers(0, 19)) == 0:
        return tool, draw(values)  # arguments that are not an object at all
    return tool, arguments


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, pdf_package_template: Path) -> Iterator[tuple[RawSession, Path]]:
    import shutil

    root = tmp_path_factory.mktemp("fuzz")
    package = Path(shutil.copytree(pdf_package_template, root / "pkg", symlinks=True))
    BookAgent(root / "data").init(package)
    env = dict(os.environ, HOME=str(root / "home"), BOOK_AGENT_HOME=str(root / "data"),
               XDG_CACHE_HOME=str(root / "cache"), HF_HOME=str(root / "hf"))
    before = tree_fingerprint(package)
    session = RawSession(root / "data", BOOK, root / "stderr.txt", env=env)
    yield session, root
    assert session.close() == 0
    assert tree_fingerprint(package) == before  # not a byte of the package changed
    stderr = (root / "stderr.txt").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in stderr, stderr[-3000:]


class Ids:
    next = 1000


SEEN: Counter[str] = Counter()  # what the answers were, printed with -s: a fuzzer that only hits the schema check proves little


def event(what: str) -> None:
    SEEN[what] += 1


def _check_one(session: RawSession, tool: str, arguments: Any) -> None:
    Ids.next += 1
    ident = Ids.next
    session.send(call(ident, tool, arguments))
    answers = session.wait_for([ident], timeout=ANSWER_BOUND_S)[ident]
    assert len(answers) == 1, answers  # exactly one answer
    answer = answers[0]
    if "error" in answer:  # a JSON-RPC error: the request itself was not a valid tools/call
        assert isinstance(answer["error"]["code"], int) and answer["error"]["message"]
        event(f"JSON-RPC {answer['error']['code']}")
        return
    result = answer["result"]
    text = result["content"][0]["text"] if result.get("content") else ""
    assert "Traceback" not in text
    if result.get("isError"):
        error = json.loads(text)["error"]  # the promised JSON shape, with a stable code
        assert CODE.match(error["code"]) and error["message"] and error["code"] != "mcp.internal_error", error
        event(error["code"])
    else:
        assert isinstance(result["structuredContent"], dict) and tool in ARGUMENTS
        event(f"result of {tool}")


def _fuzz(session: RawSession, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(tool_calls())
    def one(case: tuple[str, Any]) -> None:
        _check_one(session, *case)

    one()
    print(f"\n{examples} fuzzed calls so far answered as: {dict(SEEN.most_common())}")


def test_fuzzed_tool_calls_are_each_answered_once(served: tuple[RawSession, Path]) -> None:
    _fuzz(served[0], examples=60)


@pytest.mark.slow
def test_fuzzed_tool_calls_are_each_answered_once_at_length(served: tuple[RawSession, Path]) -> None:
    _fuzz(served[0], examples=1000)


def test_no_answer_went_to_a_request_twice(served: tuple[RawSession, Path]) -> None:
    session = served[0]
    session.send(call(1, "status", {}))
    session.wait_for([1], timeout=ANSWER_BOUND_S)
    assert all(len(answers) == 1 for ident, answers in session.by_id.items() if ident is not None)
