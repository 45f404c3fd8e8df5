"""Background warm-up: once the handshake is done, load what the first search needs.

`initialize` and `tools/list` must stay as fast as a bare FastMCP server, so nothing heavy
loads before them. After them, the work lane loads the lexical index and the vector matrix
(a library: its index and every book's; `BookAgent.warm_up`) and runs a dry search that brings
its own vector (in Chinese for a Chinese book, which loads the word segmenter's dictionary too),
while the host's model is still reading the tool list, so the first search costs about what the
tenth does. It runs on the session's work lane (book_agent/mcp/session.py),
queued like any call: a search that arrives during the warm-up waits for it, never for more
than the work it needed anyway; jsonschema (needed only to explain a refused call) is
imported after it, as a job of its own, so a search that came meanwhile goes first.

The local encoder (~100 MB once used) is not part of it: the first search without a
`query_vector` loads it, and once that search is answered the lane packs it for repeated use
(`warm_up(encoder=True)`). A server whose queries all bring their vector never loads it.
Loading it speculatively after the handshake was considered (issue 29) and not done: nothing in
the handshake says whether the host will send text or vectors, a load started on a guess breaks
that promise for vector-only hosts, and on a 2-core machine its ~100 MB read and numpy work
would compete with the very search it is meant to speed up. A search written together with the
handshake (`tools/list` and the call at once) finds nothing loaded yet and pays the cold path
itself (tools/bench_peers_mcp.py measures it).

It starts right after `tools/list` is answered, or `START_AFTER_INITIALIZED` seconds after
`notifications/initialized` for a host that does not list tools; starting it before
`tools/list` would make the handshake share the interpreter with numpy's import.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import mcp_types as mt
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext

from book_agent.mcp.schema_check import load_validator_library
from book_agent.mcp.session import BookSession

if TYPE_CHECKING:
    from book_agent.agent import BookAgent

log = logging.getLogger(__name__)
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
        self.session.submit(self._warm_up)
        self.session.submit(lambda agent: load_validator_library())  # for a refused call's problems

    def start_encoder(self) -> None:
        if self.encoder_started:
            return
        self.encoder_started = True
        self.session.submit(lambda agent: self._warm_up(agent, encoder=True))

    def _warm_up(self, agent: BookAgent, encoder: bool = False) -> None:
        try:
            warmed = agent.warm_up(self.session.book_id, encoder=encoder)
        except Exception as exc:  # a warm-up never fails a session: the first call reports it
            log.debug("warm-up skipped: %s", exc)
            return
        log.debug("warmed up: %s", warmed)
