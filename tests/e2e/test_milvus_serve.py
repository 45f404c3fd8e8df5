"""`book-agent serve @all` on the `milvus` backend: a real server process over a real Milvus
(milvus-lite on loopback, or $BOOK_AGENT_TEST_MILVUS_URI), answering the MCP search tool with
the hits the local backend gives, narrowed to the books asked for inside the engine; the
token is read from the variable the config names."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client

from book_agent import BookAgent
from tests.support.http_serve import free_port, terminate, wait_healthy
from tests.support.library_support import three_book_library, unit
from tests.support.milvus_library import use_milvus

QUERIES = ["river water battle", "siege wall enemy", "harvest grain tax season"]
TOKEN = "root:Milvus"  # milvus-lite ignores it; a real server with authentication checks it


def local_hits(data: Path, query: str) -> list[dict[str, Any]]:
    with BookAgent(data) as agent:
        return list(agent.search("@all", query, top_k=8, query_vector=[float(x) for x in unit(query)])["hits"])


def same_hits(found: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
    """The same hits in the same order, each channel's score equal to float32 precision."""
    return [h["evidence_id"] for h in found] == [h["evidence_id"] for h in expected] and all(
        a["scores"].keys() == b["scores"].keys()
        and all(abs(a["scores"][c] - b["scores"][c]) <= 1e-5 * max(1e-6, abs(b["scores"][c])) + 1e-9
                for c in a["scores"] if a["scores"][c] is not None and b["scores"][c] is not None)
        for a, b in zip(found, expected, strict=True))


def test_serve_at_all_over_milvus_answers_as_the_local_backend(tmp_path: Path, milvus_uri: str) -> None:
    data = three_book_library(tmp_path)
    expected = {q: local_hits(data, q) for q in QUERIES}
    use_milvus(data, milvus_uri, token_env="TEST_MILVUS_TOKEN")
    env = {**os.environ, "BOOK_AGENT_LIBRARY_BACKEND": "", "TEST_MILVUS_TOKEN": TOKEN}
    prepared = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), "prepare", "@all", "--json"],
                              env=env, capture_output=True, text=True, timeout=300)
    assert prepared.returncode == 0, prepared.stderr
    port = free_port()
    with open(tmp_path / "server.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                                 "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, proc, tmp_path / "server.log")

            async def run() -> dict[str, Any]:
                found: dict[str, Any] = {}
                async with Client(base + "/mcp") as client:
                    for q in QUERIES:
                        found[q] = (await client.call_tool("search", {
                            "query": q, "top_k": 8, "query_vector": [float(x) for x in unit(q)]})).structured_content
                    found["narrowed"] = (await client.call_tool("search", {
                        "query": QUERIES[0], "top_k": 8, "books": ["part-1"],
                        "query_vector": [float(x) for x in unit(QUERIES[0])]})).structured_content
                return found
            found = asyncio.run(run())
        finally:
            terminate(proc)
    log_text = (tmp_path / "server.log").read_text(errors="replace")
    assert "Traceback" not in log_text and TOKEN not in log_text
    assert TOKEN not in (data / "config.toml").read_text()
    for q in QUERIES:
        result = found[q]
        assert result["channels"]["lexical"]["ran"] and result["channels"]["vector"]["ran"]
        assert all(g["search"] == "approximate" for g in result["library"]["model_groups"])  # in Milvus
        assert same_hits(result["hits"], expected[q])
    narrowed = found["narrowed"]
    assert narrowed["hits"] and {h["book_id"] for h in narrowed["hits"]} == {"part-1"}
