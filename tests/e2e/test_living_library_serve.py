"""A long-running server compacts its library in the background (issue 26): a real `serve @all`
(HTTP) and `mcp @all` (stdio) process, books registered beside it by another process until its
generation holds BACKGROUND_CHANGES changes; the server's compaction is held at its commit point
(tests/support/gated_compaction.py), and every search meanwhile answers from the living
generation; released, the server moves to the compacted generation, which scores as `prepare
@all --full` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from book_agent import BookAgent
from book_agent.services.library.writer import BACKGROUND_CHANGES
from tests.support import REPO_ROOT
from tests.support.cli_support import run_cli
from tests.support.http_serve import (
    MCP_HEADERS,
    free_port,
    rpc_body,
    sse_result,
    terminate,
    wait_healthy,
)
from tests.support.library_support import corpus, make_book
from tests.support.stdio_session import RawSession, call

QUERY = "grain tax season"
Search = Callable[[str], dict[str, Any]]


def gated(data: Path, *cli: str) -> list[str]:
    return [sys.executable, "-m", "tests.support.gated_compaction", "--data-dir", str(data), *cli]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """Two books, prepared: the base."""
    records = corpus(40)
    with BookAgent(tmp_path / "data") as agent:
        for part in range(2):
            agent.init(make_book(tmp_path / "parts", f"part-{part}", records[part::4]))
        agent.prepare("@all")
    (tmp_path / "gate").mkdir()
    return tmp_path / "data"


@pytest.fixture
def http_search(library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Search, int]]:
    monkeypatch.setenv("BOOK_AGENT_TEST_GATE", str(tmp_path / "gate"))
    port, log = free_port(), tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(gated(library, "serve", "@all", "--port", str(port)), stdout=out,
                                stderr=subprocess.STDOUT, env=dict(os.environ), cwd=REPO_ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, log)

        def search(query: str) -> dict[str, Any]:
            answer = httpx.post(base + "/mcp", content=rpc_body("search", {"query": query, "top_k": 30}),
                                headers=MCP_HEADERS, timeout=60)
            assert answer.status_code == 200, answer.text
            return dict(sse_result(answer.content)["result"]["structuredContent"])

        yield search, proc.pid
    finally:
        terminate(proc)
    assert b"Traceback" not in log.read_bytes(), log.read_text()


@pytest.fixture
def stdio_search(library: Path, tmp_path: Path) -> Iterator[tuple[Search, int]]:
    env = {**os.environ, "BOOK_AGENT_TEST_GATE": str(tmp_path / "gate"), "PYTHONPATH": str(REPO_ROOT)}
    session = RawSession(library, "@all", tmp_path / "server.err", env=env, argv=gated(library, "mcp", "@all"))
    calls = iter(range(1, 10_000))

    def search(query: str) -> dict[str, Any]:
        ident = next(calls)
        session.send(call(ident, "search", {"query": query, "top_k": 30}))
        answer = session.wait_for([ident], timeout=60)[ident][0]
        assert "error" not in answer and not answer["result"].get("isError"), answer
        return dict(answer["result"]["structuredContent"])

    try:
        yield search, session.proc.pid
    finally:
        assert session.close() == 0


def scores(result: dict[str, Any]) -> list[tuple[str, float]]:
    return [(h["evidence_id"], round(h["scores"]["lexical"] or 0, 9)) for h in result["hits"]]


def compacts_in_the_background(search: Search, server_pid: int, data: Path, tmp_path: Path) -> None:
    search(QUERY)  # the base, open
    records = corpus(40)
    with BookAgent(data) as other:  # another process's registrations, as `book-agent init` makes them
        for part in range(BACKGROUND_CHANGES):
            other.init(make_book(tmp_path / "parts", f"more-{part}", records[part::4]))
    living = search(QUERY)["library"]["generation"]
    assert "." in living  # the base and the books added since
    gate, deadline = tmp_path / "gate", time.monotonic() + 60
    while not (gate / "compacting").exists():  # the server's background writer (its own timer) finds it due
        assert time.monotonic() < deadline, "no background compaction started"
        assert search(QUERY)["library"]["generation"] == living
        time.sleep(0.2)
    assert int((gate / "compacting").read_text()) != server_pid  # a child process compacts, not the server
    try:
        for _ in range(5):  # the compaction holds the library: searches neither fail nor wait
            started = time.monotonic()
            during = search(QUERY)
            assert during["hits"] and during["library"]["generation"] == living
            assert time.monotonic() - started < 10
    finally:
        (gate / "release").touch()
    while (moved := search(QUERY))["library"]["generation"] == living:
        assert time.monotonic() < deadline + 60, "the server never moved to the compacted generation"
        time.sleep(0.2)
    assert "." not in moved["library"]["generation"]  # one base again
    done = run_cli("--data-dir", str(data), "--json", "prepare", "@all", "--full")
    assert done.code == 0, done.stderr
    exact_generation = done.json["lexical_index"]["generation"]
    while (exact := search(QUERY))["library"]["generation"] != exact_generation:
        assert time.monotonic() < deadline + 120, "the server never moved to the full rebuild"
        time.sleep(0.2)
    assert scores(moved) == scores(exact) and scores(exact)
    assert json.dumps(moved["books"], sort_keys=True) == json.dumps(exact["books"], sort_keys=True)


def test_an_http_server_compacts_in_the_background(http_search: tuple[Search, int], library: Path,
                                                   tmp_path: Path) -> None:
    compacts_in_the_background(*http_search, library, tmp_path)


@pytest.mark.slow
def test_a_stdio_server_compacts_in_the_background(stdio_search: tuple[Search, int], library: Path,
                                                   tmp_path: Path) -> None:
    compacts_in_the_background(*stdio_search, library, tmp_path)


def test_a_server_killed_mid_compaction_takes_its_writer_child_with_it(library: Path, tmp_path: Path) -> None:
    # The child used to run on to its commit, holding the library's build lock and its memory
    # (2 GB at a million records) for a server that no longer existed.
    env = {**os.environ, "BOOK_AGENT_TEST_GATE": str(tmp_path / "gate"), "PYTHONPATH": str(REPO_ROOT)}
    session = RawSession(library, "@all", tmp_path / "server.err", env=env, argv=gated(library, "mcp", "@all"))
    records = corpus(40)
    with BookAgent(library) as other:
        for part in range(BACKGROUND_CHANGES):
            other.init(make_book(tmp_path / "parts", f"more-{part}", records[part::4]))
    gate, deadline = tmp_path / "gate", time.monotonic() + 60
    try:
        while not (gate / "compacting").exists():
            assert time.monotonic() < deadline, "no background compaction started"
            time.sleep(0.1)
        child = int((gate / "compacting").read_text())
        with BookAgent(library) as other:  # what the held compaction would replace (it holds the lock)
            living = other.search("@all", QUERY)["library"]["generation"]
        session.proc.kill()
        session.proc.wait(30)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child}").exists() and Path(f"/proc/{child}/stat").read_text().split()[2] != "Z":
            assert time.monotonic() < deadline, "the writer child outlived its killed server"
            time.sleep(0.05)
    finally:
        (gate / "release").touch()  # a child still held would otherwise wait out its 60 s
        session.close()
    with BookAgent(library) as after:
        assert after.search("@all", QUERY)["library"]["generation"] == living  # it never committed
        compacted = after.prepare("@all", full=True)  # the next writer proceeds: no lock left held
        assert "." not in compacted["lexical_index"]["generation"] != living
