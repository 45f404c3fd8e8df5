"""Background warm-up: once the handshake is done, load what the first search needs.

`initialize` and `tools/list` must stay as fast as a bare FastMCP server, so nothing heavy
loads before them. After them, the work lane loads the lexical index, the vector matrix and
the local encoder (a library: its index and every book's; `BookAgent.warm_up`) while the
host's model is still reading the tool list, so the first search costs about what the tenth
does. It runs on the session's work lane (book_agent/mcp/session.py), queued like any call:
a search that arrives during the warm-up waits for it, never for more than the work it
needed anyway.

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


class BackgroundWarmUp(Middleware):
    def __init__(self, session: BookSession, enabled: bool = True) -> None:
        self.session = session
        self.started = not enabled

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

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        self.session.submit(self._warm_up)

    def _warm_up(self, agent: BookAgent) -> None:
        try:
            load_validator_library()  # the first call's argument check needs it
            warmed = agent.warm_up(self.session.book_id)
        except Exception as exc:  # a warm-up never fails a session: the first call reports it
            log.debug("warm-up skipped: %s", exc)
            return
        log.debug("warmed up: %s", warmed)
