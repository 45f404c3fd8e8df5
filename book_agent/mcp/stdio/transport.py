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
from mcp import types
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


def _id_key(ident: Any) -> Any:
    """A request id as the SDK correlates it ("7" and 7 are one id)."""
    if isinstance(ident, str):
        with contextlib.suppress(ValueError):
            return int(ident)
    return ident


class Unanswered:
    """The requests read from the host and not yet answered. MCP's stdio shutdown is "close
    stdin, then wait": every request read before EOF must be answered before the server
    exits, but the SDK's dispatcher cancels its handlers as soon as its input ends. So EOF
    reaches the server only once this is empty (a request the host cancelled counts as
    answered: the server sends nothing for it)."""

    def __init__(self) -> None:
        self.counts: dict[Any, int] = {}
        self.empty = anyio.Event()
        self.empty.set()

    def read(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCRequest):
            key = _id_key(message.id)
            self.counts[key] = self.counts.get(key, 0) + 1
            self.empty = anyio.Event() if self.empty.is_set() else self.empty
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self.settle((message.params or {}).get("requestId"), every=True)

    def settle(self, ident: Any, every: bool = False) -> None:
        key = _id_key(ident)
        if key in self.counts:
            self.counts[key] = 0 if every else self.counts[key] - 1
            if self.counts[key] <= 0:
                del self.counts[key]
        if not self.counts:
            self.empty.set()

    def answered(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.settle(message.id)


async def _reader(stdin: BinaryIO, inbound: MemoryObjectSendStream[Any], replies: MemoryObjectSendStream[Any],
                  unanswered: Unanswered) -> None:
    text = io.TextIOWrapper(stdin, encoding="utf-8", errors="replace")  # like the SDK: bad bytes become U+FFFD
    async with inbound, replies:
        while True:
            line, complete = await anyio.to_thread.run_sync(read_bounded, text, abandon_on_cancel=True)
            if not line:
                await unanswered.empty.wait()  # EOF: the host is done; answer what it asked first
                return
            message, error = wire.read_line(line) if complete else (None, wire.too_long())
            if error is not None:
                await replies.send(SessionMessage(error))
            elif message is not None:
                unanswered.read(message)
                await inbound.send(SessionMessage(message))


async def _writer(stdout: BinaryIO, outbound: MemoryObjectReceiveStream[SessionMessage], own_pipe: bool = False,
                  unanswered: Unanswered | None = None) -> None:
    """Writes each answer whole, in order. On a pipe or socket of our own (`own_pipe`: the private
    duplicate of fd 1), from the event loop through asyncio's pipe transport: no thread hop per
    answer (~0.3 ms of a warm search's 4-5 ms round trip, 7% of the server's CPU per call on
    tools/bench/peers/bench_peers_mcp.py's book, issue 46). Else (a file, a terminal, a wire served in place, a
    stream handed in), each write on a worker thread, where a full pipe can block."""
    pipe = await _pipe_writer(stdout) if own_pipe else None
    broken = False
    try:
        async with outbound:
            async for item in outbound:
                if unanswered is not None:
                    unanswered.answered(item.message)  # written, or the host is gone: either way not awaited
                if broken:
                    continue  # keep draining: a sender must never wait on a host that is gone
                data = (wire.encode(item.message) + "\n").encode("utf-8")
                try:
                    if pipe is not None:
                        pipe.write(data)
                        await pipe.drain()  # every byte written (no high-water mark): then the next
                    else:
                        await anyio.to_thread.run_sync(_write_all, stdout, data)
                except OSError:
                    broken = True
    finally:
        if pipe is not None:
            _close_pipe(pipe, stdout)


async def _pipe_writer(stdout: BinaryIO) -> Any:
    """An asyncio StreamWriter over `stdout`'s descriptor when it is a pipe or a socket and the loop
    is asyncio's; None otherwise. The descriptor is made non-blocking until `_close_pipe`."""
    import asyncio
    import stat

    try:
        fd = stdout.fileno()
        if not (stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode)):
            return None
        loop = asyncio.get_running_loop()
        stdout.flush()
        # its own file object, closefd=False: closing the transport leaves the descriptor to its owner
        handle = open(fd, "wb", buffering=0, closefd=False)  # noqa: SIM115  # closed by the transport
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, handle)
    except (AttributeError, NotImplementedError, OSError, RuntimeError, ValueError):
        return None
    transport.set_write_buffer_limits(high=0)
    return asyncio.StreamWriter(transport, protocol, None, loop)


def _close_pipe(pipe: Any, stdout: BinaryIO) -> None:
    pipe.transport.close()
    with contextlib.suppress(OSError, ValueError):
        os.set_blocking(stdout.fileno(), True)


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
    own_pipe = False
    if stdout is None:
        stdout, undo = _claim(1, sys.stdout, "wb", _stderr_output)
        restore.append(undo)
        own_pipe = stdout is not sys.stdout.buffer  # a private duplicate (close-on-exec), not fd 1 in place
    in_send, in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    out_send, out_recv = anyio.create_memory_object_stream[SessionMessage](0)
    unanswered = Unanswered()
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_writer, stdout, out_recv, own_pipe, unanswered)
            async with anyio.create_task_group() as readers:
                readers.start_soon(_reader, stdin, in_send, out_send.clone(), unanswered)
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
