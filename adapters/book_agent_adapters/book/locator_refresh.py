"""PrepareProcessRefresh: a book's stale verified locators rebuilt by a `prepare` process.

A search that finds a book's locators from an older verifier (contracts/core.md, "Verified
locators") verifies its hits live, about 3-4 ms each, until the sidecar is rebuilt. Verifying
every record takes minutes for a large book and is CPU-bound Python: in a thread it would hold
the GIL against every search of the process, so it runs as `book-agent prepare BOOK` in a process
of its own (its own session: a caller's Ctrl-C or exit does not stop it halfway, and the write is
atomic anyway), at a lower priority, with no terminal. It holds the runtime dir's build lock, so
two never verify one book at once, and it writes only the runtime dir, never the package.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from book_agent.domain.errors import BookAgentError
from book_agent.ports.locators import LocatorRefresh, RefreshJob
from book_agent_adapters.book.runtime_files import build_lock
from book_agent_adapters.processes.low_priority import (
    LOCATOR_REBUILD_NICENESS,
    python_module_command,
    start_low_priority,
)

if TYPE_CHECKING:
    import subprocess

class ChildProcess(RefreshJob):
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def done(self) -> bool:
        return self.process.poll() is not None  # also reaps it


class PrepareProcessRefresh(LocatorRefresh):
    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir

    def start(self, book_id: str, runtime_dir: Path) -> RefreshJob | None:
        try:
            with build_lock(runtime_dir, wait=False):
                pass  # another writer (a prepare, a refresh started by another process) is at it
        except (BookAgentError, OSError):
            return None  # busy, or a read-only data dir: no rebuild can be written
        command = python_module_command("book_agent", ["--data-dir", str(self._data_dir), "prepare", book_id])
        with suppress(OSError):
            return ChildProcess(start_low_priority(command, LOCATOR_REBUILD_NICENESS))
        return None
