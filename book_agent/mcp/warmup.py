"""Background warm-up: load what the first search needs while the handshake is served.

For one book, `serve` queues it on the session's work lane (BookSession.queue_warm_up) as soon
as the start-up check has passed, before FastMCP is even imported: it loads the lexical index and
the vector matrix (`BookAgent.warm_up`) and runs a dry search that brings its own vector while
the main thread imports FastMCP (~0.8 s) and answers `initialize` and `tools/list`. So a search
written together with the handshake (`tools/list` and the call at once, as a scripted host does)
finds everything loaded and costs about what the tenth does (issue 29: it cost 12x a warm one
when the warm-up started after `tools/list`). The price is that warm-up's CPU (~0.1 s of a ~1 s
start) shared with the handshake; the total from spawn to the first answer is what it was, or
less. What can cost seconds waits for `tools/list` to be answered (or `START_AFTER_INITIALIZED`
seconds after `notifications/initialized`, for a host that does not list tools), as does
everything for a server built without `serve` (in-process, HTTP): a library's warm-up (its indexes,
by a dry library search, and what it uses of each book) and a Chinese book's dry search in Chinese, which loads the word segmenter's
dictionary (jieba, 0.3-2 s).

Calls queue behind it like any call: a search that arrives during the warm-up waits for it,
never for more than the work it needed anyway. Nothing is queued speculatively after a call:
jsonschema (~50 ms to import), imported as a job after the first answered call to explain
refused arguments, held up the second search of every session by its import (30-45 ms, x10 a
warm search); arguments are now checked without it (book_agent/mcp/arguments/strict.py).

The local encoder (~100 MB once used) is not part of it: the first search without a
`query_vector` loads it, and once that search is answered the lane packs its weights for
repeated use, with no dry search (`warm_up(encoder=True, dry_search=False)`: that search has
just prepared everything else; packing is a copy on a thread of its own). A server whose queries all bring their vector never loads it
(tests/e2e/test_encoder_on_demand.py). Loading it speculatively was considered (issue 29) and
not done: nothing in the handshake says whether the host will send text or vectors, a load
started on a guess breaks that promise for vector-only hosts, and on a 2-core machine its
~100 MB read and numpy work would compete with the very search it is meant to speed up.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as mt
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext

from book_agent.mcp.session import ENCODER, BookSession

START_AFTER_INITIALIZED = 0.5  # seconds
START_AFTER_TOOLS_LIST = 0.01  # seconds: lets the answer reach the wire first


SEARCH_TOOL = "search"


class BackgroundWarmUp(Middleware):
    def __init__(self, session: BookSession, enabled: bool = True) -> None:
        self.session = session
        self.started = not enabled
        self.encoder_started = not enabled

    async def on_notification(
        self, context: MiddlewareContext[mt.Notification[Any, Any]], call_next: CallNext[Any, Any]
    ) -> Any:
        result = await call_next(context)
        if context.method == "notifications/initialized":
            asyncio.get_running_loop().call_later(START_AFTER_INITIALIZED, self.start)
        return result

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        result = await call_next(context)
        asyncio.get_running_loop().call_later(START_AFTER_TOOLS_LIST, self.start)
        return result

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        result = await call_next(context)
        arguments = context.message.arguments or {}
        if context.message.name == SEARCH_TOOL and arguments.get("query_vector") is None:
            self.start_encoder()  # this search loaded it (or found it missing): pack it now
        return result

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        self.session.queue_warm_up()  # after `serve`'s START warm-up: a dry search, or the segmenter

    def start_encoder(self) -> None:
        if self.encoder_started:
            return
        self.encoder_started = True
        self.session.queue_warm_up(ENCODER)
