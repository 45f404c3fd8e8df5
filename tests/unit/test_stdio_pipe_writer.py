"""The stdio transport's answers over a real pipe (book_agent/mcp/stdio/transport.py): written from the event
loop through asyncio's pipe transport, whole and in order even when each answer is larger than the
pipe's buffer and the reader is slow; the descriptor is blocking again afterwards; a reader that
goes away leaves the writer draining instead of failing; a regular file takes the thread path."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from book_agent.mcp.stdio.transport import _writer

ANSWERS = 12
BIG = "x" * 300_000  # far more than a pipe's 64 KiB buffer


def _message(n: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=n, result={"n": n, "text": BIG}))


async def _write_through(handle: Any, own_pipe: bool, count: int = ANSWERS) -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage](0)
    with anyio.fail_after(60):  # a writer stuck on a gone or full pipe fails the test, not the run
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_writer, handle, receive, own_pipe)
            async with send:
                for n in range(count):
                    await send.send(_message(n))


def _slow_reader(fd: int, into: bytearray, write_fd: int = -1, modes: list[bool] | None = None) -> None:
    while chunk := os.read(fd, 10_000):
        if modes is not None and not modes:
            modes.append(os.get_blocking(write_fd))  # while answers are written: the loop's transport's
        into += chunk
        time.sleep(0.0005)


def test_answers_larger_than_the_pipe_arrive_whole_and_in_order() -> None:
    read_fd, write_fd = os.pipe()
    received = bytearray()
    modes: list[bool] = []
    reader = threading.Thread(target=_slow_reader, args=(read_fd, received, write_fd, modes))
    reader.start()
    handle = os.fdopen(write_fd, "wb", closefd=False)
    try:
        anyio.run(_write_through, handle, True)
        assert os.get_blocking(write_fd)  # blocking again for whoever holds it next
    finally:
        handle.close()
        os.close(write_fd)
        reader.join(timeout=30)
        os.close(read_fd)
    lines = bytes(received).decode("utf-8").splitlines()
    assert modes == [False]  # written by asyncio's pipe transport (non-blocking), not a thread
    assert [json.loads(line)["id"] for line in lines] == list(range(ANSWERS))
    assert all(json.loads(line)["result"]["text"] == BIG for line in lines)


def test_a_reader_gone_leaves_the_writer_draining() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # the host went away before the answers
    handle = os.fdopen(write_fd, "wb", closefd=False)
    try:
        anyio.run(_write_through, handle, True, 4)  # returns: every answer taken, none written
    finally:
        handle.close()
        os.close(write_fd)


def test_a_regular_file_is_written_on_a_thread_as_before(tmp_path: Path) -> None:
    out = tmp_path / "answers.jsonl"
    with open(out, "wb") as handle:
        anyio.run(_write_through, handle, True, 3)
    assert [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()] == [0, 1, 2]
