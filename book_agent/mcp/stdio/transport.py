"""The stdio transport the server runs on: the SDK's, with the message checks of `wire`.

Kept like the SDK's `mcp.server.stdio.stdio_server` where it matters: while serving, fd 0
reads the null device and fd 1 writes to stderr, so a library or child process can neither
eat protocol input nor corrupt the output; the wire itself is served from private duplicates,
restored on exit. It differs in what `wire` says: bad lines are answered, not dropped, and
no answer can fail to encode. `serve_stdio` is FastMCP's `run_stdio_async` with this
transport in place of the SDK's.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from book_agent.mcp.stdio import wire

MAX_LINE_CHARS = 16 * 1024 * 1024  # far above any real request (a 20,000-character quote, a hit)


def _claim(fd: int, stream: Any, mode: str, diversion: Callable[[], int]) -> tuple[BinaryIO, Callable[[], None]]:
    """Serve fd from a private duplicate and point fd itself at `diversion`; in place when that fails."""
    buffer: BinaryIO = stream.buffer
    try:
        if buffer.fileno() != fd:
            raise OSError("not backed by its descriptor")
        import fcntl  # POSIX; elsewhere the wire is served in place

        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except (AttributeError, ImportError, OSError, ValueError):
        return buffer, lambda: None
    diverted = diversion()
    os.dup2(diverted, fd)
    os.close(diverted)

    def restore() -> None:
        os.dup2(private, fd)

    # closefd=False: a reader thread may still block on the private descriptor after we leave
    wire_end: BinaryIO = os.fdopen(private, mode, closefd=False)  # type: ignore[assignment]
    return wire_end, restore


def _null_input() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _stderr_output() -> int:
    return os.dup(2)


def read_bounded(stream: io.TextIOWrapper, limit: int = MAX_LINE_CHARS) -> tuple[str, bool]:
    """(line, complete); a line longer than `limit` is consumed to its end and reported cut."""
    line = stream.readline(limit)
    if len(line) < limit or line.endswith("\n"):
        return line, True
    while (rest := stream.readline(limit)) and not rest.endswith("\n"):
        pass
    return line, False


async def _reader(stdin: BinaryIO, inbound: MemoryObjectSendStream[Any], replies: MemoryObjectSendStream[Any]) -> None:
    text = io.TextIOWrapper(stdin, encoding="utf-8", errors="replace")  # like the SDK: bad bytes become U+FFFD
    async with inbound, replies:
        while True:
            line, complete = await anyio.to_thread.run_sync(read_bounded, text, abandon_on_cancel=True)
            if not line:
                return  # EOF: the host went away
            message, error = wire.read_line(line) if complete else (None, wire.too_long())
            if error is not None:
                await replies.send(SessionMessage(error))
            elif message is not None:
                await inbound.send(SessionMessage(message))


async def _writer(stdout: BinaryIO, outbound: MemoryObjectReceiveStream[SessionMessage]) -> None:
    broken = False
    async with outbound:
        async for item in outbound:
            if broken:
                continue  # keep draining: a sender must never wait on a host that is gone
            data = (wire.encode(item.message) + "\n").encode("utf-8")
            try:
                await anyio.to_thread.run_sync(_write_all, stdout, data)
            except OSError:
                broken = True


def _write_all(stdout: BinaryIO, data: bytes) -> None:
    stdout.write(data)
    stdout.flush()


@contextlib.asynccontextmanager
async def stdio_streams(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> AsyncIterator[Any]:
    """(read stream, write stream) for the server, over the process's stdin/stdout or the given binary streams."""
    restore: list[Callable[[], None]] = []
    if stdin is None:
        stdin, undo = _claim(0, sys.stdin, "rb", _null_input)
        restore.append(undo)
    if stdout is None:
        stdout, undo = _claim(1, sys.stdout, "wb", _stderr_output)
        restore.append(undo)
    in_send, in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    out_send, out_recv = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_writer, stdout, out_recv)
            async with anyio.create_task_group() as readers:
                readers.start_soon(_reader, stdin, in_send, out_send.clone())
                try:
                    yield in_recv, out_send
                finally:
                    readers.cancel_scope.cancel()  # EOF came already, or the server stopped
                    out_send.close()  # the writer ends once the answers in flight are written
    finally:
        for undo in reversed(restore):
            with contextlib.suppress(OSError):
                undo()


async def serve_stdio(server: Any) -> None:
    """Run a FastMCP server over stdio until stdin closes (FastMCP's run_stdio_async, our transport)."""
    from book_agent.mcp.internals import run_stdio

    await run_stdio(server, stdio_streams())
