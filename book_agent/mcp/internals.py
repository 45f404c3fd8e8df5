"""Every use of FastMCP's, the MCP SDK's and sse-starlette's non-public API, in one place.

book-agent runs FastMCP's low-level server over its own stdio transport (book_agent/mcp/stdio/transport.py) and
keeps streamed answers alive through a graceful shutdown. Neither has a public API, so the
few private names involved are used here and nowhere else, against the releases named in
WRITTEN_AGAINST; tests/unit/test_mcp_internals.py checks that every one of them still
exists in the installed releases (and `make test-minima` in the oldest ones allowed). The
declared upper bounds (pyproject.toml: fastmcp<5, mcp<3, sse-starlette<4) stop at the next
major, where these are most likely to move. (uvicorn's h11 protocol and its multiprocess
supervisor, subclassed in book_agent/mcp/http/uvicorn_run.py, are public modules whose constructor and
attributes still change within 0.x: uvicorn>=0.52,<1.)
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

# The releases this module was written against (the newest tested); the lower bounds are
# pyproject.toml's, checked by `make test-minima`.
WRITTEN_AGAINST = {"fastmcp": "4.2.3", "mcp": "2.3.0", "sse-starlette": "3.7.0"}


async def run_stdio(server: Any, streams: AbstractAsyncContextManager[Any]) -> None:
    """FastMCP's `run_stdio_async` with our transport: the transport name tools see ("stdio"),
    the server's lifespan, then its low-level MCP server over `streams` (read, write)."""
    from fastmcp.server.context import reset_transport, set_transport

    low = server._mcp_server
    token = set_transport("stdio")
    try:
        async with server._lifespan_manager(), streams as (read_stream, write_stream):
            await low.run(read_stream, write_stream, low.create_initialization_options())
    finally:
        reset_transport(token)


def finish_streams_on_shutdown() -> None:
    """sse-starlette ends every SSE answer as soon as uvicorn is told to stop, so a streamed
    answer in flight at SIGTERM would lose its result. Stateless answers end by themselves once
    the result is sent, and uvicorn's graceful-shutdown timeout bounds the wait: let them finish."""
    from sse_starlette.sse import AppStatus

    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
