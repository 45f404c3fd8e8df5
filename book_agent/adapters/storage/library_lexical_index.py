"""The library's lexical index: one FTS5 table over every registered book's records.

One index, not one per book, so that BM25's statistics (how rare a word is, how long a
record is on average) are those of the whole library: a corpus split into books ranks as
it would as one book. It lives in data_dir/library/ (derived data, never in a package), is
built from the books' package databases with the same tokenizer as a book's own sidecar,
and is replaced atomically: a reader never sees a half-built index. Its stamp names every
book it holds (id, manifest and database hashes), so a registration or removal makes it
stale and the next library search rebuilds it.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from book_agent.adapters.storage.fts_lexical_index import (
    BATCH,
    RANK_SQL,
    RECORDS_SQL,
    add_rows,
    create_index,
    finish_index,
    match_expression,
    read_stamp,
)
from book_agent.adapters.storage.runtime_files import build_lock
from book_agent.adapters.storage.sqlite_readonly import connect_readonly
from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import LexicalHit
from book_agent.ports import LibraryIndex, LibraryLexicalIndex, LibraryMember, Progress

INDEX_NAME = "lexical.sqlite"


class SqliteLibraryIndex(LibraryIndex):
    def __init__(self, library_dir: Path) -> None:
        self.dir = library_dir
        self.path = library_dir / INDEX_NAME

    def state(self, expected: dict[str, str]) -> dict[str, Any]:
        stamp = read_stamp(self.path)
        fresh = stamp is not None and all(stamp.get(k) == v for k, v in expected.items())
        return {"present": stamp is not None, "fresh": fresh, "path": str(self.path),
                "record_count": int((stamp or {}).get("record_count", "0"))}

    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        """Rebuild under the library's build lock (another process may have just done it)."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _failed(exc) from exc
        with build_lock(self.dir):
            current = self.state(expected)
            if current["fresh"]:
                return int(current["record_count"])
            return self._build(members, expected, progress)

    def _build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        fd, name = tempfile.mkstemp(prefix=".lexical-library-", suffix=".sqlite", dir=self.dir)
        os.close(fd)
        tmp = Path(name)
        try:
            out = sqlite3.connect(tmp)
            try:
                count = _fill(out, members, expected, progress)
            finally:
                out.close()
            os.replace(tmp, self.path)
            return count
        except (sqlite3.Error, OSError) as exc:
            raise _failed(exc) from exc
        finally:
            tmp.unlink(missing_ok=True)

    def open(self) -> LibraryLexicalIndex:
        return SqliteLibraryLexical(self.path)


def _fill(out: sqlite3.Connection, members: Sequence[LibraryMember], expected: dict[str, str],
          progress: Progress | None) -> int:
    create_index(out, "book_id TEXT NOT NULL, record_id TEXT NOT NULL")
    total = sum(m.record_count for m in members)
    done = 0
    for member in members:
        source = connect_readonly(member.database_path)
        try:
            cursor = source.execute(RECORDS_SQL)
            while rows := cursor.fetchmany(BATCH):
                add_rows(out, done + 1, rows, member.book_id)
                done += len(rows)
                if progress:
                    progress(done, max(total, done))
        finally:
            source.close()
    out.execute("CREATE INDEX ids_book ON ids(book_id)")
    return finish_index(out, expected, done)


class SqliteLibraryLexical(LibraryLexicalIndex):
    """BM25 over the whole library; hits are `book_id#record_id` (evidence ids)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._con: sqlite3.Connection | None = None

    def search(self, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        match = match_expression(query)
        if match is None or top_k <= 0:
            return []
        where, args = "", [match]
        if book_ids is not None:
            where = f" AND ids.book_id IN ({','.join('?' * len(book_ids))})"
            args += list(book_ids)
        sql = (f"SELECT ids.book_id, ids.record_id, {RANK_SQL} AS rank_score FROM fts "
               f"JOIN ids ON ids.rowid = fts.rowid WHERE fts MATCH ?{where} ORDER BY rank_score LIMIT ?")
        try:
            if self._con is None:
                self._con = connect_readonly(self.path, check_same_thread=False, immutable=False)
            rows = self._con.execute(sql, (*args, int(top_k))).fetchall()
        except sqlite3.Error as exc:
            raise BookAgentError("lexical.query_failed", f"the library's lexical index could not answer: {exc}",
                                 remediation="run the search again (the library index is rebuilt when stale)") from exc
        return [LexicalHit(f"{book}#{rid}", -float(score)) for book, rid, score in rows]

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _failed(exc: Exception) -> BookAgentError:
    return BookAgentError("lexical.build_failed", f"the library's lexical index could not be built: {exc}",
                          remediation="check that the data dir is writable with free space")

