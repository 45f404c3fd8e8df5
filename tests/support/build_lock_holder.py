"""Another writer holding the library's build lock, for the tests of what a search or a build
does meanwhile (serve the generation in place, be busy at once, never wait)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from book_agent_adapters.book.runtime_files import build_lock


@contextmanager
def another_writer_holding(library_dir: Path, hold_s: float = 60) -> Iterator[None]:
    """The block runs while a thread holds `library_dir`'s build lock (for at most `hold_s`);
    it lets go when the block ends."""
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with build_lock(library_dir):
            held.set()
            release.wait(hold_s)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert held.wait(10), "the writer thread never took the build lock"
        yield
    finally:
        release.set()
        thread.join()
