"""Housekeeping of a book's runtime dir: one builder at a time, and no temp file left over.

Every derived file is written as a hidden temp file and renamed into place. A process killed
mid-write (kill -9, power loss) leaves its temp file behind, and nothing else ever removes
it. `init` and `prepare` therefore sweep the runtime dir while holding its build lock:

- `.lexical-*.sqlite` is only ever written under that lock, so any such file found while
  holding it belongs to a dead process and goes at once;
- the other temp files (config, vector sidecar, page renders) are written by any process
  without the lock (a search, the MCP server): they go only once untouched for
  STALE_SECONDS, far longer than any live write takes (a live writer keeps its mtime fresh).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.files.safe_files import is_read_only, portalocker_module, read_only

LOCK_NAME = ".build.lock"
LOCK_TIMEOUT_S = 600.0  # a large book's index may take minutes to build
STALE_SECONDS = 15 * 60
LOCKED_PREFIXES = (".lexical-", ".locators-")
UNLOCKED_PREFIXES = (".config.json.", ".vectors.", ".render-", ".lexical.impact.npz.")  # written outside the lock


@contextmanager
def build_lock(runtime_dir: Path, wait: bool = True) -> Iterator[None]:
    """Hold the runtime dir's build lock (cross-process) for the duration of the block. With
    `wait` False, a lock another process holds is `lexical.build_busy` at once (a search does
    not wait for a writer: it serves what is in place)."""
    portalocker = portalocker_module(runtime_dir)

    lock = portalocker.Lock(str(runtime_dir / LOCK_NAME), mode="a", timeout=LOCK_TIMEOUT_S if wait else 0,
                            fail_when_locked=not wait)
    try:
        lock.acquire()
    except portalocker.exceptions.LockException as exc:
        if not wait:
            raise BookAgentError(
                "lexical.build_busy", f"another process is writing {runtime_dir}",
                details={"runtime_dir": str(runtime_dir)},
                remediation="nothing to do: searches serve the generation in place until the writer is done") from exc
        raise BookAgentError(
            "book.runtime_locked", f"another process is building {runtime_dir} (waited {LOCK_TIMEOUT_S:.0f} s)",
            details={"runtime_dir": str(runtime_dir)},
            remediation="retry when the other `book-agent init`/`prepare` finishes",
        ) from exc
    except OSError as exc:  # the lock file cannot be made: a read-only mount or folder
        if is_read_only(exc):
            raise read_only(runtime_dir, exc, "the build lock") from exc
        raise
    try:
        yield
    finally:
        lock.release()


def sweep_stale_temps(runtime_dir: Path, now: float | None = None) -> list[str]:
    """Remove leftover temp files (call while holding build_lock); returns their paths."""
    now = time.time() if now is None else now
    removed: list[str] = []
    for folder in (runtime_dir, runtime_dir / "vectors", runtime_dir / "renders"):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if _stale(entry, now):
                try:
                    os.unlink(entry.path)
                except OSError:
                    continue
                removed.append(entry.path)
    return removed


def _stale(entry: os.DirEntry[str], now: float) -> bool:
    name = entry.name
    if entry.name == LOCK_NAME or not entry.is_file(follow_symlinks=False):
        return False
    if name.startswith(LOCKED_PREFIXES):
        return True
    if not name.startswith(UNLOCKED_PREFIXES):
        return False
    try:
        return now - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS
    except OSError:
        return False
