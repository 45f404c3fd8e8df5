"""The library's lexical index: BM25 over every registered book, with the library's statistics.

One index, not one per book, so that BM25's statistics (how rare a word is, how long a
record is on average) are those of the whole library: a corpus split into books ranks as
it would as one book. It is an impact index (impact_index.py: FTS5's terms and bm25()
formula over posting arrays, milliseconds at a million records where FTS5 takes a second),
merged from each book's term counts, which are cached per book (term_counts.py) so a new
registration counts only the new book. It lives in data_dir/library/ (derived data, never
in a package) and is replaced atomically: a reader never sees a half-built index. Its
stamp names every book it holds (id, manifest and database hashes), so a registration or
removal makes it stale and the next library search (or `prepare @all`) rebuilds it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryIndexState
from book_agent.domain.records import LexicalHit
from book_agent.ports import LibraryIndex, LibraryLexicalIndex, LibraryMember, Progress
from book_agent_adapters.files.sqlite_readonly import connect_readonly
from book_agent_adapters.storage.fts_lexical_index import read_stamp
from book_agent_adapters.storage.fts_terms import FtsTerms
from book_agent_adapters.storage.impact_index import (
    FORMAT,
    ImpactScorer,
    postings_files,
    write_index,
)
from book_agent_adapters.storage.runtime_files import build_lock
from book_agent_adapters.storage.term_counts import (
    BookTerms,
    book_terms,
    cache_path,
    count_uncached,
)

INDEX_NAME = "lexical.sqlite"
TERMS_DIR = "terms"


class SqliteLibraryIndex(LibraryIndex):
    def __init__(self, library_dir: Path) -> None:
        self.dir = library_dir
        self.path = library_dir / INDEX_NAME

    def state(self, expected: dict[str, str]) -> LibraryIndexState:
        stamp = read_stamp(self.path)
        if stamp is None:
            return LibraryIndexState(present=False, fresh=False, records=0, reason="missing")
        fresh = stamp.get("format") == FORMAT and all(stamp.get(k) == v for k, v in expected.items())
        reason = None if fresh else "stale: built for other books" if stamp.get("format") == FORMAT \
            else "of another format"
        return LibraryIndexState(present=True, fresh=fresh, records=int(stamp.get("record_count", "0")),
                                 generation=stamp.get("postings", "").removeprefix("postings-") or None,
                                 reason=reason)

    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        """Rebuild under the library's build lock (another process may have just done it)."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with build_lock(self.dir):
                current = self.state(expected)
                if current.fresh:
                    return current.records
                return self._build(members, expected, progress)
        except OSError as exc:  # the lock file cannot be made: a read-only data dir (a replica's mount)
            raise _failed(exc) from exc

    def _build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        fd, name = tempfile.mkstemp(prefix=".lexical-library-", suffix=".sqlite", dir=self.dir)
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
        except (sqlite3.Error, OSError) as exc:
            for path in postings_files(postings):
                path.unlink(missing_ok=True)
            raise _failed(exc) from exc
        finally:
            tmp.unlink(missing_ok=True)
        _drop_postings_except(self.dir, postings.name)
        return count

    def open(self) -> LibraryLexicalIndex:
        return SqliteLibraryLexical(self.path)


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


class SqliteLibraryLexical(LibraryLexicalIndex):
    """BM25 over the whole library; hits are `book_id#record_id` (evidence ids). Safe to share
    between threads (an MCP server's workers): the connection and the query stemmer are locked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._scorer: ImpactScorer | None = None
        self._terms = FtsTerms()
        self._lock = threading.Lock()

    def search(self, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        if top_k <= 0:
            return []
        try:
            with self._lock:
                terms, prefixes = self._terms.query_terms(query)
                if not terms and not prefixes:
                    return []
                scorer = self._open()
                top = scorer.top(terms, prefixes, top_k, book_ids)
                ids = _ids_of(scorer.con, [row for row, _ in top])
        except (sqlite3.Error, OSError, KeyError, ValueError) as exc:
            raise BookAgentError("lexical.query_failed", f"the library's lexical index could not answer: {exc}",
                                 remediation="run `book-agent prepare @all` to rebuild the library index") from exc
        return [LexicalHit(ids[row], score) for row, score in top]

    def _open(self) -> ImpactScorer:
        """The scorer of the index in place; one retry when a rebuild replaced it between
        reading its head and mapping its postings."""
        if self._scorer is None:
            for attempt in (1, 2):
                con = connect_readonly(self.path, check_same_thread=False, immutable=False)
                try:
                    self._scorer = ImpactScorer(con, self.path.parent)
                    break
                except OSError:
                    con.close()
                    if attempt == 2:
                        raise
        assert self._scorer is not None
        return self._scorer

    def close(self) -> None:
        with self._lock:
            if self._scorer is not None:
                self._scorer.con.close()
                self._scorer = None
            self._terms.close()


def _ids_of(con: sqlite3.Connection, rows: list[int]) -> dict[int, str]:
    if not rows:
        return {}
    found = con.execute(f"SELECT rowid, book_id, record_id FROM ids WHERE rowid IN ({','.join('?' * len(rows))})",
                        rows).fetchall()
    return {int(r): f"{book}#{rid}" for r, book, rid in found}


def _failed(exc: Exception) -> BookAgentError:
    return BookAgentError("lexical.build_failed", f"the library's lexical index could not be built: {exc}",
                          remediation="the library index is stale (books were registered or removed) and the "
                          "data dir must be writable with free space to rebuild it; on read-only replicas, run "
                          "`book-agent prepare @all` where the data dir is writable")

