"""The lexical channel: an SQLite FTS5 sidecar in the book's runtime dir, ranked by BM25.

The sidecar is built from the package's `records` (never inside the package). It is a
contentless FTS5 table (the text lives in the package already) over CJK-segmented text
(see book_agent.domain.search.lexical_text) with the `porter unicode61` tokenizer, plus a table
mapping FTS rowids to record ids and a stamp saying what it was built from.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Mapping
from itertools import repeat
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import LexicalHit
from book_agent.domain.search.lexical_text import index_text, is_cjk, query_terms
from book_agent.ports import LexicalIndex
from book_agent_adapters.book.lexical import sidecar_checks
from book_agent_adapters.book.lexical.book_impact_files import identity, impact_path
from book_agent_adapters.files.safe_files import (
    is_no_space,
    is_read_only,
    no_space,
    open_regular,
    read_only,
    require_regular,
)
from book_agent_adapters.files.sqlite_readonly import connect_readonly
from book_agent_adapters.text.cjk_fold import fold_chinese
from book_agent_adapters.text.cjk_words import segment_chinese

SIDECAR_NAME = "lexical.sqlite"
HEADINGS_WEIGHT = 0.4  # heading paths repeat over many records: they count, but less than body text
BATCH = 2000


def read_stamp(path: Path) -> dict[str, str] | None:
    """The sidecar's stamp, or None when it is missing, not a regular file, unreadable or
    truncated (then: rebuild)."""
    try:
        if require_regular(path).st_size % 512 or not _whole(path):
            return None
        con = connect_readonly(path, immutable=False)
        try:
            rows = con.execute("SELECT key, value FROM meta").fetchall()
            con.execute("SELECT count(*) FROM ids").fetchone()
        finally:
            con.close()
    except (sqlite3.Error, OSError):
        return None
    return {str(k): str(v) for k, v in rows}


def _whole(path: Path) -> bool:
    """The file holds every page its SQLite header counts (a truncated copy does not)."""
    with open_regular(path) as handle:
        header = handle.read(100)
        size = os.fstat(handle.fileno()).st_size
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return False
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(header[28:32], "big")
    return pages == 0 or size >= pages * page


def build_sidecar(
    database_path: Path,
    sidecar_path: Path,
    stamp: dict[str, str],
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """(Re)build the sidecar atomically from the package database. Returns the record count."""
    import tempfile  # a build only

    try:
        sidecar_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".lexical-", suffix=".sqlite", dir=sidecar_path.parent)
    except OSError as exc:
        raise _build_failed(database_path, exc, sidecar_path.parent) from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        source = connect_readonly(database_path)
        out = sqlite3.connect(tmp)
        try:
            count = _fill(source, out, stamp, progress)
        finally:
            source.close()
            out.close()
        sidecar_checks.record(tmp, sidecar_path.parent)  # before the rename: it keeps inode and mtime
        # numpy: imported by a build, not with this module
        from book_agent_adapters.book.lexical.book_impact_search import build_quietly

        build_quietly(tmp, impact_path(sidecar_path), HEADINGS_WEIGHT, book_words(database_path))
        os.replace(tmp, sidecar_path)
        return count
    except (sqlite3.Error, OSError) as exc:  # OSError: a full disk, permissions in the runtime dir
        raise _build_failed(database_path, exc, sidecar_path.parent) from exc
    finally:
        tmp.unlink(missing_ok=True)


def _build_failed(database_path: Path, exc: Exception, folder: Path) -> BookAgentError:
    if is_no_space(exc):
        return no_space(folder, exc, None, "the book's lexical index")
    if is_read_only(exc):
        return read_only(folder, exc, "the book's lexical index")
    return BookAgentError(
        "lexical.build_failed",
        f"the lexical index could not be built from {database_path}: {exc}",
        remediation="check the package with `book-agent status BOOK --verify`, and that the data dir is "
        "writable with free space",
    )


def _fill(
    source: sqlite3.Connection,
    out: sqlite3.Connection,
    stamp: dict[str, str],
    progress: Callable[[int, int], None] | None,
) -> int:
    create_index(out, "record_id TEXT NOT NULL UNIQUE")
    (total,) = source.execute("SELECT count(*) FROM records").fetchone()
    cursor = source.execute(RECORDS_SQL)
    done = 0
    while rows := cursor.fetchmany(BATCH):
        add_rows(out, done + 1, rows)
        done += len(rows)
        if progress:
            progress(done, total)
    return finish_index(out, stamp, done)


# The one schema, row encoding and ranking of an FTS index, shared by a book's sidecar and the
# library's index (adapters/book_agent_adapters/library/local/lexical/library_lexical_index.py): a record must be indexed and
# ranked the same in both, or a library would not rank as the one book holding its records.
RECORDS_SQL = "SELECT record_id, text, headings FROM records ORDER BY seq"
RANK_SQL = f"bm25(fts, 1.0, {HEADINGS_WEIGHT})"  # lower is better (and negative)


def create_index(out: sqlite3.Connection, id_columns: str) -> None:
    """Tables of an empty index, written without a journal (it is built to a temp file)."""
    out.execute("PRAGMA journal_mode=OFF")
    out.execute("PRAGMA synchronous=OFF")
    out.executescript(
        f"""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE ids (rowid INTEGER PRIMARY KEY, {id_columns});
        CREATE VIRTUAL TABLE fts USING fts5(
            body, headings, content='', tokenize='porter unicode61 remove_diacritics 2');
        """
    )


def add_rows(out: sqlite3.Connection, start: int, rows: list[Any], *owner: str) -> None:
    """Index `(record_id, text, headings)` rows from rowid `start`; `owner`: the ids columns
    before record_id (the library's book_id)."""
    marks = ", ".join("?" * (len(owner) + 2))
    out.executemany(f"INSERT INTO ids VALUES ({marks})", [(start + i, *owner, str(r[0])) for i, r in enumerate(rows)])
    out.executemany(
        "INSERT INTO fts(rowid, body, headings) VALUES (?, ?, ?)",
        [(start + i, index_text(r[1] or "", fold_chinese), index_text(headings_text(r[2]), fold_chinese))
         for i, r in enumerate(rows)],
    )


def finish_index(out: sqlite3.Connection, stamp: dict[str, str], count: int) -> int:
    out.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    out.executemany("INSERT INTO meta VALUES (?, ?)", sorted({**stamp, "record_count": str(count)}.items()))
    out.commit()
    return count


def match_expression(query: str) -> str | None:
    """The FTS5 query for any text: every term, quoted and OR-ed (None when there is none).
    BM25 ranks records by how many (and how rare) they hold; pruning long queries to their
    rarest terms cost quality on the eval suite."""
    terms = query_terms(query, fold_chinese, segment_chinese)
    return " OR ".join(terms) if terms else None


_WORD = re.compile(r"[^\W_]+")  # the runs of letters and digits a query's words are made of


def book_words(database_path: Path) -> set[str]:
    """The distinct words of a book's records and headings (not CJK runs: a Chinese query's
    bigrams are few and FTS5 tokenises them at search), as a query spells them: lowercased,
    from the indexed form of the text. The impact file keeps each one's FTS5 term."""
    words: set[str] = set()
    try:
        source = connect_readonly(database_path)
        try:
            for _, text, headings in source.execute(RECORDS_SQL):
                for part in (text or "", headings_text(headings)):
                    words.update(_WORD.findall(index_text(part, fold_chinese).lower()))
        finally:
            source.close()
    except sqlite3.Error:
        return set()
    return {w for w in words if not is_cjk(w)}


def headings_text(raw: str | None) -> str:
    try:
        value = json.loads(raw or "[]")
    except (ValueError, RecursionError):
        return ""
    return " ".join(str(h) for h in value) if isinstance(value, list) else ""


class FtsLexicalIndex(LexicalIndex):
    """Queries a built sidecar. Any query string is safe: it is never parsed as FTS5 syntax.

    From its second search on (a one-shot process never pays the load), a query FTS5 would
    score phrase by phrase over single terms is answered from the sidecar's impact file when
    there is one for this very sidecar (book_impact.py: the same scores, bit for bit, in the
    same order); when there is none, the first process to search warm builds it in the
    background, FTS5 answering meanwhile."""

    def __init__(self, sidecar_path: Path, on_words: Callable[[Mapping[str, str]], None] | None = None) -> None:
        """`on_words`: told the book's words and their FTS5 terms when its impact file loads
        (the passage reader learns them then, instead of stemming them at a search)."""
        self.path = Path(sidecar_path)
        self._con: sqlite3.Connection | None = None
        self._identity: list[int] | None = None  # the sidecar's, as opened
        # imported here, not with this module (which every command imports): it imports numpy
        from book_agent_adapters.book.lexical.book_impact_search import WarmImpact

        self._impact = WarmImpact(self.path, HEADINGS_WEIGHT, on_words)

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            try:
                require_regular(self.path)  # a FIFO in its place would hang the open
                before = identity(self.path)
                self._con = connect_readonly(self.path, check_same_thread=False, immutable=False)
                self._identity = before if identity(self.path) == before else None
            except (sqlite3.Error, OSError) as exc:
                raise BookAgentError(
                    "lexical.index_missing",
                    f"the lexical index {self.path} cannot be opened: {exc}",
                    remediation="run `book-agent prepare BOOK` to rebuild it",
                ) from exc
        return self._con

    def search(self, query: str, top_k: int) -> list[LexicalHit]:
        terms = query_terms(query, fold_chinese, segment_chinese)
        if not terms or top_k <= 0:
            return []
        con = self._connection()  # first: it notes the sidecar's identity
        found = self._impact.top(terms, int(top_k), self._identity, lambda: con)
        if found is not None:  # tuple.__new__ at C speed: NamedTuple's own __new__ is a Python call per hit
            return list(map(tuple.__new__, repeat(LexicalHit), zip(*found, strict=True)))
        return self._fts_search(" OR ".join(terms), top_k)

    def warm_up(self) -> None:
        """The impact file loaded now (or its build started), as a second search would."""
        con = self._connection()
        self._impact.warm_up(self._identity, lambda: con)

    def teach_words(self) -> bool:
        """Tell `on_words` the book's words without loading the impact file's postings (a library
        member's warm-up: the library searches its own index). True when words were told."""
        from book_agent_adapters.book.lexical.book_impact_words import teach
        from book_agent_adapters.text.passage_terms import MAX_LEARNT

        self._connection()  # notes the sidecar's identity
        return teach(self._impact.on_words, impact_path(self.path), self._identity, HEADINGS_WEIGHT, MAX_LEARNT)

    def _fts_search(self, match: str, top_k: int) -> list[LexicalHit]:
        sql = (
            f"SELECT ids.record_id, {RANK_SQL} AS rank_score FROM fts "
            "JOIN ids ON ids.rowid = fts.rowid WHERE fts MATCH ? ORDER BY rank_score LIMIT ?"
        )
        try:
            rows = self._connection().execute(sql, (match, int(top_k))).fetchall()
        except sqlite3.Error as exc:
            raise BookAgentError(
                "lexical.query_failed",
                f"the lexical index could not answer: {exc}",
                remediation="run `book-agent prepare BOOK` to rebuild the lexical index",
            ) from exc
        # bm25() is lower-is-better and negative; flip it so every channel's score rises with relevance
        return [LexicalHit(record_id=str(rid), score=-float(score)) for rid, score in rows]

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        self._impact.close()
