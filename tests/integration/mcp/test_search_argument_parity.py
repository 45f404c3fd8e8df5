"""Bad search arguments are refused on every path, good ones accepted on every path (issue 44,
item 11): the Python API, the CLI and the MCP tools (in-process FastMCP client: the same tools
and middleware as stdio and HTTP), each for one book and for a library (`@all`, `a,b`).

A path may refuse with its transport's code (the MCP schema's `mcp.bad_arguments`) or the
core's; what must never differ is whether a call is refused.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastmcp import Client

from book_agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent.mcp.server import build_server
from tests.support.cli_support import run_cli
from tests.support.library_support import DIMS, make_book, three_book_library, unit

GOOD_VECTOR = [float(x) for x in unit("river water")]
REFS = ("part-0", "@all", "part-0,part-1")

# name -> the search's keyword arguments (besides the book)
BAD: dict[str, dict[str, Any]] = {
    "vector too short": {"query": "river", "query_vector": GOOD_VECTOR[:8]},
    "vector too long": {"query": "river", "query_vector": GOOD_VECTOR + [0.5]},
    "vector empty": {"query": "river", "query_vector": []},
    "vector all zeros": {"query": "river", "query_vector": [0.0] * DIMS},
    "vector with NaN": {"query": "river", "query_vector": [math.nan] + GOOD_VECTOR[1:]},
    "vector with infinity": {"query": "river", "query_vector": [math.inf] + GOOD_VECTOR[1:]},
    "vector of the wrong length with NaN": {"query": "river", "query_vector": [math.nan] * 3},
    "vector nested": {"query": "river", "query_vector": [GOOD_VECTOR[:8], GOOD_VECTOR[8:]]},
    "vector of booleans": {"query": "river", "query_vector": [True] + [False] * (DIMS - 1)},
    "vector of text": {"query": "river", "query_vector": ["0.5"] * DIMS},
    "vector not an array": {"query": "river", "query_vector": {"0": 1.0}},
    "empty query": {"query": ""},
    "blank query": {"query": "  \t "},
    "query too long": {"query": "river " * 700},
    "top_k 0": {"query": "river", "top_k": 0},
    "top_k 101": {"query": "river", "top_k": 101},
    "top_k true": {"query": "river", "top_k": True},
    "top_k fraction": {"query": "river", "top_k": 2.5},
    "top_k text": {"query": "river", "top_k": "5"},
    "strict text": {"query": "river", "strict": "no"},
    "hints a list": {"query": "river", "hints": ["visual"]},
    "hint visual not boolean": {"query": "river", "hints": {"visual": "yes"}},
    "hint page_index negative": {"query": "river", "hints": {"page_index": -1}},
    "hint page_text_chars text": {"query": "river", "hints": {"page_text_chars": "many"}},
}
GOOD: dict[str, dict[str, Any]] = {
    "text": {"query": "river water"},
    "vector": {"query": "river", "query_vector": GOOD_VECTOR},
    "vector alone (empty query)": {"query": "", "query_vector": GOOD_VECTOR},
    "vector of whole numbers": {"query": "river", "query_vector": [1] + [0] * (DIMS - 1)},
    "hints": {"query": "river", "hints": {"visual": False, "page_index": 3, "anything": {"a": [1, "b"]}}},
    "top_k 100": {"query": "river", "top_k": 100},
}
# what the CLI cannot express (argv has no such values): checked on the other paths
NOT_ON_CLI = {"top_k true", "top_k fraction", "top_k text", "strict text", "hints a list", "vector not an array"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_book_library(tmp_path_factory.mktemp("parity"))


def python_api(data_dir: Path, ref: str, kwargs: dict[str, Any]) -> str | None:
    """None when answered, else the refusal's code."""
    with BookAgent(data_dir) as agent:
        try:
            agent.search(ref, **kwargs)
        except BookAgentError as exc:
            return exc.code
    return None


def mcp(data_dir: Path, ref: str, kwargs: dict[str, Any]) -> str | None:
    server_ref, arguments = ref, dict(kwargs)
    if "," in ref:  # a server of two books, searching both
        arguments["books"] = ref.split(",")
        server_ref = "@all"

    async def run() -> Any:
        async with Client(build_server(server_ref, data_dir=data_dir)) as client:
            return await client.call_tool("search", arguments, raise_on_error=False)

    try:
        result = asyncio.run(run())
    except Exception as exc:  # the client could not even send it (NaN is not JSON): refused before the server
        return f"client:{type(exc).__name__}"
    if not result.is_error:
        return None
    return str(json.loads(result.content[0].text)["error"]["code"])


def cli(data_dir: Path, ref: str, kwargs: dict[str, Any], tmp_path: Path) -> str | None:
    args = ["--data-dir", str(data_dir), "search", ref, kwargs["query"], "--json"]
    if "top_k" in kwargs:
        args += ["--top-k", str(kwargs["top_k"])]
    if "query_vector" in kwargs:
        vector_file = tmp_path / "vector.json"
        vector_file.write_text(json.dumps(kwargs["query_vector"]), encoding="utf-8")  # NaN as NaN: Python's JSON
        args += ["--query-vector", str(vector_file)]
    for key, value in (kwargs.get("hints") or {}).items():
        args += ["--hint", f"{key}={json.dumps(value) if not isinstance(value, str) else value}"]
    result = run_cli(*args)
    if result.code == 0:
        assert "hits" in result.json
        return None
    return str(result.error_code)


@pytest.mark.parametrize("ref", REFS)
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_arguments_are_refused_on_every_path(data_dir: Path, tmp_path: Path, ref: str, name: str) -> None:
    kwargs = BAD[name]
    codes = {"python": python_api(data_dir, ref, kwargs), "mcp": mcp(data_dir, ref, kwargs)}
    if name not in NOT_ON_CLI:
        codes["cli"] = cli(data_dir, ref, kwargs, tmp_path)
    assert all(code is not None for code in codes.values()), codes
    # the core's refusal is the same code for one book and a library
    assert codes["python"] == python_api(data_dir, REFS[0], kwargs)


@pytest.mark.parametrize("ref", REFS)
@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_arguments_are_answered_on_every_path(data_dir: Path, tmp_path: Path, ref: str, name: str) -> None:
    kwargs = GOOD[name]
    codes = {"python": python_api(data_dir, ref, kwargs), "mcp": mcp(data_dir, ref, kwargs),
             "cli": cli(data_dir, ref, kwargs, tmp_path)}
    assert codes == {"python": None, "mcp": None, "cli": None}


def test_a_library_refuses_a_vector_that_fits_none_of_its_models(data_dir: Path) -> None:
    """The reported case: `@all` answered lexical-only with a warning where one book refused."""
    with BookAgent(data_dir) as agent:
        for ref in REFS:
            with pytest.raises(BookAgentError) as refused:
                agent.search(ref, "river", query_vector=GOOD_VECTOR[:8])
            assert refused.value.code == "query.vector_invalid"
            assert refused.value.details["expected_dimensions"] == [DIMS]
            assert refused.value.details["got_dimensions"] == 8


def test_a_library_of_two_models_searches_the_group_a_vector_fits(tmp_path: Path) -> None:
    """A vector that fits one model's books is searched there; the other books say why not."""
    data = three_book_library(tmp_path)
    from tests.support.library_support import corpus

    with BookAgent(data) as agent:
        agent.init(make_book(tmp_path / "wide", "wide", corpus(12), dims=24))
        found = agent.search("@all", "river", query_vector=GOOD_VECTOR)
        assert found["channels"]["vector"]["ran"]
        notes = {b["book_id"]: b.get("vector") for b in found["books"]}
        assert "24" in str(notes["wide"]) and "16 dimensions" in str(notes["wide"])
        wide = [float(x) for x in unit("river", 24)]
        assert agent.search("@all", "river", query_vector=wide)["channels"]["vector"]["ran"]
        with pytest.raises(BookAgentError) as refused:
            agent.search("@all", "river", query_vector=GOOD_VECTOR[:10])
        assert refused.value.details["expected_dimensions"] == [16, 24]


def test_a_numpy_query_vector_is_accepted_and_a_2d_one_refused(data_dir: Path) -> None:
    with BookAgent(data_dir) as agent:
        for ref in REFS:
            assert agent.search(ref, "river", query_vector=np.asarray(GOOD_VECTOR, dtype=np.float32))["hits"]
            with pytest.raises(BookAgentError) as refused:
                agent.search(ref, "river", query_vector=np.asarray(GOOD_VECTOR).reshape(2, -1))
            assert refused.value.code == "query.vector_invalid"


def test_cli_hints_are_read_as_the_types_the_core_reads(data_dir: Path) -> None:
    """`--hint page_text_chars=50` is the number 50, as over MCP: the visual fallback reads it."""
    result = run_cli("--data-dir", str(data_dir), "search", "part-0", "river", "--json",
                     "--hint", "page_text_chars=50", "--hint", "visual=false")
    assert result.code == 0, result.stdout
    assert result.json["hints"] == {"page_text_chars": 50, "visual": False}
    with BookAgent(data_dir) as agent:
        low = agent.search("part-0", "river", hints={"page_text_chars": 50})
    assert {"code": "page.little_text", "detail": "the page has 50 characters of text"} in \
        low["visual_fallback"]["reasons"]
