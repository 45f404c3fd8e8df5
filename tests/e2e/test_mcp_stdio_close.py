"""MCP's stdio shutdown is "close stdin, then wait": every request the server read before its
stdin closed is answered before it exits. The SDK's dispatcher cancels its handlers at EOF, so
a host that pipes its requests and closes its end lost every answer still in flight (a race:
9 of 9 on a loaded machine). Tested with the input closed at once, behind many calls, on a
one-book and a library server, with busy-loop processes running beside it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_types import LATEST_PROTOCOL_VERSION

from book_agent.agent import BookAgent
from tests.support.library_support import three_book_library

INIT = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
BUSY = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, pdf_package_template: Path) -> Path:
    data = three_book_library(tmp_path_factory.mktemp("library"))
    with BookAgent(data) as agent:
        agent.init(pdf_package_template)  # registered, never changed
    return data


@contextmanager
def busy_cores(count: int = 2) -> Iterator[None]:
    """Processes spinning beside the server (the race needs a loaded machine); bounded, and
    ended with the block."""
    spinners = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in spinners:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)


def rpc(method: str, params: dict[str, Any] | None = None, ident: int | str | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if ident is not None:
        message["id"] = ident
    return json.dumps(message) + "\n"


def piped(data: Path, book: str, lines: list[str]) -> tuple[dict[Any, Any], subprocess.CompletedProcess[bytes]]:
    """Every line written and stdin closed at once; the answers by id once the server exits."""
    proc = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), "mcp", book],
                          input="".join(lines).encode(), capture_output=True, timeout=300, check=False)
    answers = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    return {a.get("id"): a for a in answers}, proc


def search(book: str, ident: int) -> str:
    arguments: dict[str, Any] = {"query": f"water {ident}"}
    if book.startswith("@") or "," in book:
        arguments["book_ids"] = ["part-0"] if ident % 2 else []
    return rpc("tools/call", {"name": "search", "arguments": arguments}, ident)


@pytest.mark.parametrize("book", ["test-book", "@all"])
def test_every_request_read_before_stdin_closed_is_answered_under_load(data: Path, book: str) -> None:
    lines = [rpc("initialize", INIT, 0), rpc("notifications/initialized")]
    lines += [search(book, i) for i in range(1, 25)]
    lines += [rpc("tools/list", {}, 25), rpc("ping", {}, "26"), rpc("resources/list", {}, 27)]
    with busy_cores():
        answers, proc = piped(data, book, lines)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert set(answers) == {*range(26), "26", 27}
    assert all("result" in answers[i] for i in range(26)), [answers[i] for i in range(26) if "error" in answers[i]]


def test_the_three_message_handshake_then_eof_gets_its_tools(data: Path) -> None:
    lines = [rpc("initialize", INIT, 1), rpc("notifications/initialized"), rpc("tools/list", {}, 2)]
    with busy_cores():
        for _ in range(3):
            answers, proc = piped(data, "@all", lines)
            assert proc.returncode == 0 and set(answers) == {1, 2}
            assert answers[2]["result"]["tools"]


def test_bad_lines_and_a_cancelled_request_do_not_hold_the_exit(data: Path) -> None:
    lines = [rpc("initialize", INIT, 1), rpc("notifications/initialized"), "not json\n", '{"jsonrpc": "2.0"}\n',
             search("test-book", 2), rpc("notifications/cancelled", {"requestId": 2}), search("test-book", 3),
             rpc("tools/list", {}, 4), rpc("tools/list", {}, 4)]  # a repeated id counts twice
    answers, proc = piped(data, "test-book", lines)  # subprocess's timeout: a hang fails the test
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {1, 3, 4} <= set(answers) and None in answers  # the bad lines got their errors


def test_a_host_that_keeps_stdin_open_still_gets_its_answers_as_they_come(data: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "mcp", "test-book"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((rpc("initialize", INIT, 1) + rpc("notifications/initialized") + rpc("tools/list", {}, 2))
                         .encode())
        proc.stdin.flush()
        seen = {json.loads(proc.stdout.readline())["id"] for _ in range(2)}  # answered while stdin is open
        assert seen == {1, 2}
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        proc.stdout.close()
