"""The MCP server in-process: a real FastMCP in-memory client against a real registered book."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastmcp import Client

from book_agent import __version__
from book_agent.agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DPI_RANGE, MAX_TOP_K
from book_agent.mcp.published import document
from book_agent.mcp.server import build_server, check_book, serve
from book_agent.mcp.tools.images import MAX_IMAGE_BYTES, with_image
from tests.support import REPO_ROOT, published_tool_names
from tests.support.package_builder import break_package

CONTRACTS = REPO_ROOT / "contracts"
TOOLS = published_tool_names("mcp-tools.json")
BOOK = "test-book"


@pytest.fixture
def data_dir(tmp_path: Path, pdf_package: Path) -> Path:
    data = tmp_path / "data"
    BookAgent(data).init(pdf_package)
    return data


def session(server: Any, body: Callable[[Client[Any]], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with Client(server) as client:
            return await body(client)

    return asyncio.run(run())


def call(server: Any, tool: str, args: dict[str, Any] | None = None) -> Any:
    return session(server, lambda c: c.call_tool(tool, args or {}, raise_on_error=False))


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    assert result.structured_content is None  # strict clients would check it against the output schema
    payload: dict[str, Any] = json.loads(result.content[0].text)["error"]
    assert set(payload) >= {"code", "message", "details", "remediation"}
    return payload


def check_output(result: Any, tool: str) -> dict[str, Any]:
    assert not result.is_error, result.content
    schema = next(t["outputSchema"] for t in document()["tools"] if t["name"] == tool)
    jsonschema.validate(result.structured_content, schema)
    assert json.loads(result.content[0].text) == result.structured_content  # text mirrors the data
    data: dict[str, Any] = result.structured_content
    return data


class Untouchable:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"agent.{name} used")


# --- the published contract -------------------------------------------------------------

def test_published_tool_schemas_match_the_contract_file() -> None:
    published = document()
    written = json.loads((CONTRACTS / "mcp-tools.json").read_text(encoding="utf-8"))
    assert published == written, "run: python -m book_agent.mcp.published > contracts/mcp-tools.json"
    for tool in published["tools"]:
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["outputSchema"]["type"] == "object"
        assert len(tool["description"]) > 150  # written for an agent, not a stub


def test_contract_doc_names_every_tool_and_error_code() -> None:
    text = (CONTRACTS / "mcp-tools.md").read_text(encoding="utf-8")
    for name in TOOLS | {"mcp.bad_arguments", "mcp.internal_error", "mcp.book_unusable", "mcp.unknown_tool",
                         "search.empty_query", "book://"}:
        assert name in text


def test_tools_and_resources_list_without_calling_the_agent() -> None:
    server = build_server(BOOK, agent=Untouchable())

    async def body(c: Client[Any]) -> tuple[list[Any], list[Any]]:
        return await c.list_tools(), await c.list_resources()

    tools, resources = session(server, body)
    assert {t.name for t in tools} == TOOLS
    assert {str(r.uri) for r in resources} == {f"book://{BOOK}/skill", f"book://{BOOK}/metadata"}


def test_server_info_names_book_agent_its_version_and_the_book() -> None:
    async def body(c: Client[Any]) -> Any:
        return c.server_info

    info = session(build_server(BOOK, agent=Untouchable()), body)
    assert info.version == __version__ and info.name == f"book-agent:{BOOK}"


def test_published_bounds_are_the_cores_own() -> None:
    props = {t["name"]: t["inputSchema"]["properties"] for t in document()["tools"]}
    assert props["search"]["top_k"]["maximum"] == MAX_TOP_K
    assert (props["render_page"]["dpi"]["minimum"], props["render_page"]["dpi"]["maximum"]) == DPI_RANGE


def test_unknown_tool_is_a_json_rpc_error_and_the_session_goes_on() -> None:
    """MCP: a call to a tool the server does not have is a JSON-RPC error, -32602, not a result;
    its message is the tool error's JSON, its data the error's fields."""
    from mcp.shared.exceptions import MCPError

    server = build_server(BOOK, agent=Untouchable())

    async def body(c: Client[Any]) -> tuple[Any, list[Any]]:
        with pytest.raises(MCPError) as info:
            await c.call_tool_mcp("no_such_tool", {"x": 1})
        return info.value, await c.list_tools()

    refused, tools = session(server, body)
    assert refused.code == -32602
    err = json.loads(refused.message)["error"]
    assert err == refused.data["error"]
    assert err["code"] == "mcp.unknown_tool" and "tools/list" in err["remediation"]
    assert err["details"]["tool"] == "no_such_tool" and set(err["details"]["available"]) == TOOLS
    assert {t.name for t in tools} == TOOLS


@pytest.mark.parametrize("query", [" ", "\t\n  \u3000"])
def test_whitespace_query_is_the_cores_tool_error_not_a_crash(data_dir: Path, query: str) -> None:
    server = build_server(BOOK, data_dir=data_dir)

    async def body(c: Client[Any]) -> tuple[Any, Any]:
        return (await c.call_tool("search", {"query": query}, raise_on_error=False),
                await c.call_tool("search", {"query": "water"}, raise_on_error=False))

    bad, good = session(server, body)
    err = error_of(bad)
    assert err["code"] == "search.empty_query" and err["remediation"]
    assert check_output(good, "search")["hits"]  # the session goes on


# --- every tool against a real book -----------------------------------------------------

def test_search_accepts_the_cores_largest_top_k(data_dir: Path) -> None:
    data = check_output(call(build_server(BOOK, data_dir=data_dir), "search", {"query": "water", "top_k": MAX_TOP_K}), "search")
    assert 1 <= len(data["hits"]) <= MAX_TOP_K


def test_search_returns_structured_citable_hits(data_dir: Path) -> None:
    data = check_output(call(build_server(BOOK, data_dir=data_dir), "search", {"query": "water ground", "top_k": 3}), "search")
    assert data["book_id"] == BOOK and 1 <= len(data["hits"]) <= 3
    top = data["hits"][0]
    assert top["record_id"] == "r0001" and top["evidence_id"] and "Water shapes" in top["text"]
    assert set(data["visual_fallback"]) >= {"recommended", "reasons"}


def test_read_entry_and_unknown_record_then_keeps_serving(data_dir: Path) -> None:
    server = build_server(BOOK, data_dir=data_dir)

    async def body(c: Client[Any]) -> tuple[Any, Any, Any]:
        bad = await c.call_tool("read_entry", {"record_id": "no-such-record"}, raise_on_error=False)
        good = await c.call_tool("read_entry", {"record_id": "r0004"}, raise_on_error=False)
        again = await c.call_tool("status", {}, raise_on_error=False)
        return bad, good, again

    bad, good, again = session(server, body)
    err = error_of(bad)
    assert err["code"] == "record.not_found" and err["remediation"]
    assert "Photosynthesis" in check_output(good, "read_entry")["text"]
    assert check_output(again, "status")["book_id"] == BOOK


def test_status_reports_health_and_capabilities(data_dir: Path) -> None:
    data = check_output(call(build_server(BOOK, data_dir=data_dir), "status"), "status")
    assert data["package"]["healthy"] is True and "capabilities" in data


@pytest.mark.parametrize(
    ("tool", "args", "argument"),
    [
        ("search", {"query": "x" * 4001}, "query"),
        ("search", {"query": "x", "top_k": 0}, "top_k"),
        ("search", {"query": "x", "top_k": MAX_TOP_K + 1}, "top_k"),
        ("render_page", {"page_index": 0, "dpi": DPI_RANGE[0] - 1}, "dpi"),
        ("render_page", {"page_index": 0, "dpi": DPI_RANGE[1] + 1}, "dpi"),
        ("search", {"query": "x", "surprise": 1}, "surprise"),
        ("read_entry", {}, "record_id"),
        ("render_page", {"page_index": -1}, "page_index"),
        ("render_page", {"page_index": 0, "clip": [1, 2, 3]}, "clip"),
        ("read_source", {"locator": "page 3"}, "locator"),
    ],
)
def test_bad_arguments_are_tool_errors_naming_the_argument(tool: str, args: dict[str, Any], argument: str) -> None:
    server = build_server(BOOK, agent=object())  # never reached: validation comes first
    err = error_of(call(server, tool, args))
    assert err["code"] == "mcp.bad_arguments"
    assert any(argument in p["argument"] for p in err["details"]["problems"]) or argument in err["message"]


@pytest.mark.parametrize("args", [{}, {"quote": "water", "record_id": "r0001"}])
def test_locate_source_needs_exactly_one_target(args: dict[str, Any]) -> None:
    err = error_of(call(build_server(BOOK, agent=object()), "locate_source", args))
    assert err["code"] == "mcp.bad_arguments" and "exactly one" in err["message"]


# --- failures that are not the caller's -------------------------------------------------

class LeakyAgent(BookAgent):
    """The real agent with one bug and one stray print, to prove the server contains both."""

    threads: set[int] = set()

    def search(self, book_ref: str, query: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        LeakyAgent.threads.add(threading.get_ident())
        print("stray print from a library")
        if query == "crash":
            raise RuntimeError("internal detail: secret-path /srv/x")
        return super().search(book_ref, query, *args, **kwargs)


def test_unexpected_errors_are_masked_and_logged(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = build_server(BOOK, agent=LeakyAgent(data_dir))
    with caplog.at_level(logging.ERROR, logger="book_agent.mcp"):
        result = call(server, "search", {"query": "crash"})
    err = error_of(result)
    assert err["code"] == "mcp.internal_error" and "secret-path" not in result.content[0].text
    assert "secret-path" in caplog.text  # the real cause is in the server's log


def test_stray_prints_go_to_stderr_not_stdout(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_output(call(build_server(BOOK, agent=LeakyAgent(data_dir)), "search", {"query": "rivers"}), "search")
    out, err = capsys.readouterr()
    assert "stray print" not in out and "stray print" in err


def test_concurrent_calls_all_answer_on_one_worker_thread(data_dir: Path) -> None:
    LeakyAgent.threads = set()
    server = build_server(BOOK, agent=LeakyAgent(data_dir))
    queries = ["water", "rivers", "general battle", "tax rates", "兵者", "photosynthesis"] * 4

    async def body(c: Client[Any]) -> list[Any]:
        return list(await asyncio.gather(*(c.call_tool("search", {"query": q}, raise_on_error=False) for q in queries)))

    results = session(server, body)
    assert [r.structured_content["query"] for r in results] == queries
    assert len(LeakyAgent.threads) == 1 and threading.get_ident() not in LeakyAgent.threads


# --- start-up checks --------------------------------------------------------------------

def test_check_book_rejects_unknown_and_broken_books(data_dir: Path, pdf_package: Path) -> None:
    agent = BookAgent(data_dir)
    assert check_book(agent, BOOK)["book_id"] == BOOK
    with pytest.raises(BookAgentError) as unknown:
        check_book(agent, "no-such-book")
    assert unknown.value.code == "book.not_registered"
    break_package(pdf_package, "missing_markdown")
    with pytest.raises(BookAgentError) as broken:
        check_book(BookAgent(data_dir), BOOK)
    assert broken.value.code in {"package.changed", "mcp.book_unusable"}


def test_serve_fails_fast_on_an_unknown_book(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(BookAgentError) as failed:
        serve("no-such-book", data_dir=data_dir)
    assert failed.value.code == "book.not_registered" and failed.value.remediation
    assert "cannot serve book 'no-such-book'" in failed.value.message
    assert capsys.readouterr().out == ""


# --- resources ----------------------------------------------------------------------------

def test_metadata_resource_is_json_about_the_book(data_dir: Path) -> None:
    contents = session(build_server(BOOK, data_dir=data_dir), lambda c: c.read_resource(f"book://{BOOK}/metadata"))
    meta = json.loads(contents[0].text)
    assert meta["book_id"] == BOOK and meta["title"] == "A Synthetic Test Book" and meta["package"]["root"]


# --- images -------------------------------------------------------------------------------

def _png(path: Path, size: tuple[int, int] = (40, 30)) -> bytes:
    from PIL import Image

    Image.new("RGB", size, (200, 10, 10)).save(path, format="PNG")
    return path.read_bytes()


def test_with_image_sends_the_png_once(tmp_path: Path) -> None:
    png = _png(tmp_path / "p.png")
    result = with_image({"path": str(tmp_path / "p.png"), "width_px": 40, "height_px": 30,
                         "image_base64": base64.b64encode(png).decode()})
    assert [b.type for b in result.content] == ["text", "image"]
    assert base64.b64decode(result.content[1].data) == png and result.content[1].mime_type == "image/png"
    assert result.structured_content is not None and "image_base64" not in result.structured_content
    assert "image_base64" not in result.content[0].text and result.structured_content["image_included"] is True


def test_with_image_leaves_out_an_oversized_png(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    big.write_bytes(_png(tmp_path / "small.png") + b"\0" * (MAX_IMAGE_BYTES + 1))
    result = with_image({"path": str(big), "width_px": 40, "height_px": 30})
    assert [b.type for b in result.content] == ["text"]
    assert result.structured_content is not None and result.structured_content["image_included"] is False
    assert "clip" in result.structured_content["warnings"][-1]


# --- the source tools ----------------------------------------

def test_skill_markdown_and_skill_resource(data_dir: Path) -> None:
    server = build_server(BOOK, data_dir=data_dir)
    skill = check_output(call(server, "get_skill"), "get_skill")
    assert skill["text"].strip()
    resource = session(server, lambda c: c.read_resource(f"book://{BOOK}/skill"))
    assert resource[0].text == skill["text"]
    md = check_output(call(server, "read_markdown", {"record_id": "r0003", "context_chars": 20}), "read_markdown")
    assert "Running rivers" in md["text"]


def test_locate_read_source_and_render_page(data_dir: Path) -> None:
    server = build_server(BOOK, data_dir=data_dir)
    hit = check_output(call(server, "search", {"query": "supply chain diagram"}), "search")["hits"][0]
    for target in ({"hit": hit}, {"record_id": hit["record_id"]}, {"quote": hit["text"][:40]}):
        locator = check_output(call(server, "locate_source", target), "locate_source")
        assert locator["page_index"] == hit["source_locator"]["page_index"]
    source = check_output(call(server, "read_source", {"locator": locator, "max_chars": 2000}), "read_source")
    assert hit["text"][:20] in " ".join(source["text"].split())
    image = call(server, "render_page", {"page_index": locator["page_index"], "include_image": True, "dpi": 72})
    data = check_output(image, "render_page")
    assert data["image_included"] is True and [b.type for b in image.content] == ["text", "image"]
    assert base64.b64decode(image.content[1].data).startswith(b"\x89PNG")
    lowest = check_output(call(server, "render_page", {"page_index": 0, "dpi": DPI_RANGE[0]}), "render_page")
    assert 0 < lowest["width_px"] < 200  # the renderer's smallest dpi gets through the schema and renders
    err = error_of(call(server, "render_page", {"page_index": 999}))
    assert err["code"].startswith("source.")
