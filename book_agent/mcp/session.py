"""One served book or library, one BookAgent, two worker threads: how the server calls the core.

Agent calls never run on the event loop, so it keeps answering `ping`, `tools/list` and
malformed lines whatever a tool does. They run on two lanes, one thread each; each tool's
lane is declared with it (book_agent/mcp/tools/table.py):

- "work": search, locate_source, read_source, render_page: calls whose time depends on the
  input or on a remote endpoint (a long quotation, a 1200-dpi render, a slow reranker);
- "quick": status, get_skill, read_entry, read_markdown, list_books and the resources:
  bounded reads.

So a `status` never queues behind a long `locate_source` (it did: 42 s behind one). Within a
lane, calls run in arrival order; one thread per lane keeps the core's caches warm and its
concurrency low (the core's shared handles are thread-safe: SQLite connections opened with
check_same_thread=False under locks, PDFium behind one process-wide lock, the open book's
parts created under its lock).

The agent is built on first use (lazily), so `initialize` and `tools/list` never wait for
vectors or models; the start-up check (`check_book`, `check_library`) runs on the quick lane.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from book_agent.agent import BookAgent

log = logging.getLogger("book_agent.mcp.warmup")
T = TypeVar("T")
START, SEARCH, ENCODER = "start", "search", "encoder"  # the warm-ups (BookSession.queue_warm_up)
Lane = Literal["work", "quick"]

_stdout_lock = threading.Lock()
_stdout_depth = 0
_stdout_saved: Any = None


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """sys.stdout -> stderr while any lane runs a call (contextlib.redirect_stdout is not
    safe across threads: two overlapping calls could leave the wrong stream behind)."""
    global _stdout_depth, _stdout_saved
    with _stdout_lock:
        if _stdout_depth == 0:
            _stdout_saved, sys.stdout = sys.stdout, sys.stderr
        _stdout_depth += 1
    try:
        yield
    finally:
        with _stdout_lock:
            _stdout_depth -= 1
            if _stdout_depth == 0:
                sys.stdout = _stdout_saved


def _warm_up(agent: BookAgent, book_id: str, kind: str) -> None:
    try:
        if kind == START:
            warmed = agent.warm_up(book_id, encoder=False, segmenter=False)
        elif kind == ENCODER:  # queued once a text search is answered: it prepared all but the packing
            warmed = agent.warm_up(book_id, encoder=True, dry_search=False)
        else:
            warmed = agent.warm_up(book_id, encoder=False)
    except Exception as exc:  # a warm-up never fails a session: the first call reports it
        log.debug("warm-up skipped: %s", exc)
        return
    log.debug("warmed up: %s", warmed)


class BookSession:
    def __init__(self, book_id: str, agent: BookAgent | None = None, data_dir: Path | str | None = None) -> None:
        self.book_id = book_id
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self._agent = agent
        self._warm_ups: set[str] = set()  # the kinds queued already (queue_warm_up)
        self._lock = threading.Lock()
        self._lanes = {name: ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"book-agent-mcp-{name}")
                       for name in ("work", "quick")}

    @property
    def agent(self) -> BookAgent:
        with self._lock:
            if self._agent is None:
                from book_agent.agent import build_agent

                self._agent = build_agent(self.data_dir)
                self._agent.serve_long()  # a server: a background writer keeps its library up to date
            return self._agent

    def _guarded(self, fn: Callable[[BookAgent], T]) -> T:
        # The stdio transport points fd 1 at stderr while serving; this also covers a
        # transport served in place, where one stray print would corrupt the JSON-RPC stream.
        with _stdout_to_stderr():
            return fn(self.agent)

    def run_sync(self, fn: Callable[[BookAgent], T], lane: Lane = "quick") -> T:
        """Run `fn(agent)` on a lane and wait (start-up, outside the event loop)."""
        return self._lanes[lane].submit(self._guarded, fn).result()

    async def run(self, fn: Callable[[BookAgent], T], lane: Lane = "work") -> T:
        """Run `fn(agent)` on a lane without blocking the event loop."""
        return await asyncio.wrap_future(self._lanes[lane].submit(self._guarded, fn))

    def submit(self, fn: Callable[[BookAgent], T], lane: Lane = "work") -> Future[T]:
        """Queue `fn(agent)` on a lane without waiting (the background warm-up)."""
        return self._lanes[lane].submit(self._guarded, fn)

    def queue_warm_up(self, kind: str = SEARCH) -> None:
        """Queue a warm-up on the work lane, once per kind (book_agent/mcp/warmup.py): START, the
        part that costs a fraction of a second (`serve` queues it before FastMCP is imported, so
        it runs during the handshake); SEARCH, every search part but the local encoder; ENCODER,
        the encoder's packing, after the first text search."""
        if kind in self._warm_ups:
            return
        self._warm_ups.add(kind)
        self.submit(lambda agent: _warm_up(agent, self.book_id, kind))

    def _close_agent(self) -> None:
        close = getattr(self._agent, "close", None)
        if callable(close):
            close()

    def close(self) -> None:
        """Let both lanes finish, close the agent's resources, then stop the threads."""
        with contextlib.suppress(Exception):  # best effort; never mask the real exit reason
            self._lanes["quick"].submit(lambda: None).result(timeout=10)
            self._lanes["work"].submit(self._close_agent).result(timeout=10)
        for lane in self._lanes.values():
            lane.shutdown(wait=False, cancel_futures=True)
