"""One book, one BookAgent, one worker thread: how the server calls the core.

Every agent call runs on the same single worker thread. The core caches per-book resources
(SQLite connections opened with check_same_thread, PDFium documents), which are only safe on
the thread that opened them; one thread also keeps the event loop free to answer `ping` and
`tools/list` while a search runs. Concurrent tool calls queue on that thread in arrival order.

The agent is built on first use (lazily), so `initialize` and `tools/list` never wait for
vectors or models; the start-up check (`check_book`) runs on the same worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class BookSession:
    def __init__(self, book_id: str, agent: Any = None, data_dir: Path | str | None = None) -> None:
        self.book_id = book_id
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._agent = agent
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="book-agent-mcp")
        self.calls = 0

    @property
    def agent(self) -> Any:
        with self._lock:
            if self._agent is None:
                from book_agent.agent import BookAgent

                self._agent = BookAgent(data_dir=self.data_dir)
            return self._agent

    def _guarded(self, fn: Callable[[Any], T]) -> T:
        # The stdio transport already points fd 1 at stderr while serving; this also
        # covers the transport's in-place fallback, where sys.stdout IS the wire and one
        # stray print from a library would corrupt the JSON-RPC stream.
        with contextlib.redirect_stdout(sys.stderr):
            self.calls += 1
            return fn(self.agent)

    def run_sync(self, fn: Callable[[Any], T]) -> T:
        """Run `fn(agent)` on the worker thread and wait (start-up, outside the event loop)."""
        return self._executor.submit(self._guarded, fn).result()

    async def run(self, fn: Callable[[Any], T]) -> T:
        """Run `fn(agent)` on the worker thread without blocking the event loop."""
        return await asyncio.wrap_future(self._executor.submit(self._guarded, fn))

    def submit(self, fn: Callable[[Any], T]) -> Future[T]:
        """Queue `fn(agent)` on the worker thread without waiting (background warm-up)."""
        return self._executor.submit(self._guarded, fn)

    def _close_agent(self) -> None:
        close = getattr(self._agent, "close", None)
        if callable(close):
            close()

    def close(self) -> None:
        """Close the agent's resources on the thread that opened them, then stop the thread."""
        with contextlib.suppress(Exception):  # best effort; never mask the real exit reason
            self._executor.submit(self._close_agent).result(timeout=10)
        self._executor.shutdown(wait=False, cancel_futures=True)
