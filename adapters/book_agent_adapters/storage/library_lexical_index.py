"""The library's lexical index: BM25 over every registered book, with the library's statistics.

One index, not one per book, so that BM25's statistics (how rare a word is, how long a
record is on average) are those of the whole library: a corpus split into books ranks as
it would as one book. It is an impact index (impact_index.py: FTS5's terms and bm25()
formula over posting arrays, milliseconds at a million records where FTS5 takes a second),
merged from each book's term counts, which are cached per book (term_counts.py) so a new
registration counts only the new book. It lives in data_dir/library/ (derived data, never
in a package) and is replaced atomically: a reader never sees a half-built index. Its
stamp names every book it holds (id, manifest and database hashes), so a registration or
removal makes it stale and the next library search (or `prepare @all`) rebuilds it; so does
damage (library_lexical_search.py checks it). A build holds the library's build lock, sweeps
what a killed build left (its temp head, postings no head names, temp term counts), and writes
to space allocated first: a full disk is `storage.no_space`, with nothing half-written kept.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryIndexState
from book_agent.ports import LibraryIndex, LibraryLexicalIndex, LibraryMember, Progress
from book_agent_adapters.storage.impact_index import FORMAT, postings_files, write_index
from book_agent_adapters.storage.library_lexical_search import (
    DAMAGED_SUFFIX,
    SqliteLibraryLexical,
    inspect,
)
from book_agent_adapters.storage.runtime_files import build_lock
from book_agent_adapters.storage.safe_files import is_no_space, is_read_only, no_space, read_only
from book_agent_adapters.storage.term_counts import (
    BookTerms,
    book_terms,
    cache_path,
    count_uncached,
)

INDEX_NAME = "lexical.sqlite"
TERMS_DIR = "terms"
TEMP_PREFIX = ".lexical-library-"  # a temp head: written only under the build lock

__all__ = ["INDEX_NAME", "TERMS_DIR", "SqliteLibraryIndex", "SqliteLibraryLexical"]


class SqliteLibraryIndex(LibraryIndex):
    def __init__(self, library_dir: Path) -> None:
        self.dir = library_dir
        self.path = library_dir / INDEX_NAME

    def state(self, expected: dict[str, str]) -> LibraryIndexState:
        """Fresh when built for `expected` and its integrity checks pass; `intact` when they pass
        (a stale but intact index may serve while it cannot be rebuilt)."""
        found = inspect(self.path)
        if not found.present:
            return LibraryIndexState(present=False, fresh=False, records=0, reason="missing")
        fresh = found.sound and found.stamp.get("format") == FORMAT and all(
            found.stamp.get(k) == v for k, v in expected.items())
        reason = None if fresh else found.reason if not found.sound else "stale: built for other books"
        return LibraryIndexState(present=True, fresh=fresh, records=int(found.stamp["record_count"]) if found.sound else 0,
                                 generation=found.stamp.get("postings", "").removeprefix("postings-") or None,
                                 reason=reason, intact=found.sound)

    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
              wait: bool = True) -> int:
        """Rebuild under the library's build lock (another process may have just done it)."""
        return self._locked(members, expected, progress, wait, full=False)

    def compact(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
                wait: bool = True) -> int:
        return self._locked(members, expected, progress, wait, full=True)

    def _locked(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
                wait: bool, full: bool) -> int:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with build_lock(self.dir, wait=wait):
                current = self.state(expected)
                if current.fresh and not full:
                    return current.records
                sweep_dead_build(self.dir)
                return self._build(members, expected, progress)
        except (OSError, sqlite3.Error) as exc:  # the lock file cannot be made, a read-only mount
            raise _failed(self.dir, exc) from exc

    def _build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".sqlite", dir=self.dir)
        os.close(fd)
        tmp = Path(name)
        postings = self.dir / f"postings-{uuid.uuid4().hex[:12]}"  # new files: readers keep the old ones
        try:
            out = sqlite3.connect(tmp)
            try:
                count = _fill(out, members, expected, progress, self.dir / TERMS_DIR, postings)
            finally:
                out.close()
            os.replace(tmp, self.path)
        except (sqlite3.Error, OSError, ValueError) as exc:
            for path in postings_files(postings):
                path.unlink(missing_ok=True)
            raise _failed(self.dir, exc) from exc
        finally:
            tmp.unlink(missing_ok=True)
        _drop_postings_except(self.dir, postings.name)
        self.path.with_name(self.path.name + DAMAGED_SUFFIX).unlink(missing_ok=True)  # it named the old head
        return count

    def open(self) -> LibraryLexicalIndex:
        """A reader; its generation is the one in place now (the head it maps on its first search)."""
        return SqliteLibraryLexical(self.path, self.state({}).generation)


def _fill(out: sqlite3.Connection, members: Sequence[LibraryMember], expected: dict[str, str],
          progress: Progress | None, terms_dir: Path, postings: Path) -> int:
    total = sum(m.record_count for m in members)
    done = 0

    def counted(records: int) -> None:
        nonlocal done
        done += records
        if progress:
            progress(done, max(total, done))

    in_workers = count_uncached(terms_dir, members, counted)
    books: list[tuple[str, BookTerms]] = [
        (m.book_id, book_terms(terms_dir, m, None if m.book_id in in_workers else counted)) for m in members]
    _prune(terms_dir, {cache_path(terms_dir, m) for m in members})
    return write_index(out, books, expected, postings)


def sweep_dead_build(folder: Path) -> list[str]:
    """What an earlier build that died left (call holding the build lock, so no live build
    owns any of it): temp heads, postings no head names, temp term counts."""
    current = inspect(folder / INDEX_NAME).stamp.get("postings", "")
    doomed = [*folder.glob(TEMP_PREFIX + "*"), *(folder / TERMS_DIR).glob(".*.tmp"),
              *(p for p in folder.glob("postings-*.npy") if not (current and p.name.startswith(current + ".")))]
    removed = []
    for path in doomed:
        with contextlib.suppress(OSError):  # Windows: postings still mapped by a reader go at a later build
            path.unlink()
            removed.append(str(path))
    return removed


def _drop_postings_except(folder: Path, current: str) -> None:
    """Remove earlier builds' postings. A reader still mapping them keeps its pages (POSIX); where
    the system refuses (Windows, while mapped), they go at a later build."""
    for path in folder.glob("postings-*.npy"):
        if not path.name.startswith(current + "."):
            with contextlib.suppress(OSError):
                path.unlink()


def _prune(terms_dir: Path, keep: set[Path]) -> None:
    """Drop the cached counts of books no longer registered (or changed since)."""
    for path in terms_dir.glob("*.npz"):
        if path not in keep:
            path.unlink(missing_ok=True)


def _failed(folder: Path, exc: BaseException) -> BookAgentError:
    if isinstance(exc, BookAgentError):
        return exc
    if is_no_space(exc):
        return no_space(folder, exc, getattr(exc, "needed_bytes", None), "the library's lexical index")
    if is_read_only(exc):
        return read_only(folder, exc, "the library's lexical index")
    return BookAgentError("lexical.build_failed", f"the library's lexical index could not be built: {exc}",
                          details={"path": str(folder)},
                          remediation="the library index is stale (books were registered or removed) and the "
                          "data dir must be writable with free space to rebuild it; on read-only replicas, run "
                          "`book-agent prepare @all` where the data dir is writable")
