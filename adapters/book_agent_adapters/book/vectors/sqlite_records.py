"""Batch reads of records from a package's index.sqlite (read-only, leaves no trace)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import Record
from book_agent.ports import RecordSource
from book_agent_adapters.files.sqlite_readonly import connect_readonly

COLUMNS = "record_id, seq, text, headings, md_start, md_end, source"
_CHUNK = 500  # stay far below SQLite's bound-parameter limit
# Records parsed once per open book: a package is read-only (and fingerprint-checked before every
# use), so a record read is a record for good. Parsing a hit's JSON columns and querying for it
# were a sixth of a warm one-book search (issue 29). Bounded so a big book's cache stays small.
CACHED_RECORDS = 4096


def _json(raw: Any, default: Any) -> Any:
    try:
        value = json.loads(raw) if raw else default
    except (ValueError, RecursionError):
        return default
    return value if isinstance(value, type(default)) else default


def record_from_row(row: Sequence[Any]) -> Record:
    record_id, seq, text, headings, md_start, md_end, source = row
    return Record(
        record_id=str(record_id),
        text=str(text or ""),
        source=_json(source, {}),
        seq=int(seq) if seq is not None else None,
        headings=[str(h) for h in _json(headings, [])],
        md_start=int(md_start) if md_start is not None else None,
        md_end=int(md_end) if md_end is not None else None,
    )


def _storable(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fetch_records(execute: Callable[[str, Sequence[Any]], Iterable[Sequence[Any]]],
                  record_ids: Sequence[str]) -> dict[str, Record]:
    """The records that exist among record_ids, keyed by id, read through `execute(sql, params)`.

    Shared by every reader of a package database (each brings its own connection and error
    translation), so rows are parsed one way everywhere.
    """
    found: dict[str, Record] = {}
    # An id that UTF-8 cannot encode (undecodable argv bytes, a lone surrogate) cannot be in
    # a database of UTF-8 text, and SQLite could not even bind it: it is simply not found.
    ids = [i for i in dict.fromkeys(record_ids) if _storable(i)]
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for row in execute(f"SELECT {COLUMNS} FROM records WHERE record_id IN ({marks})", chunk):
            record = record_from_row(row)
            found[record.record_id] = record
    return found


class SqliteRecordReader(RecordSource):
    """One read-only connection, shared by the MCP server's lanes (a `read_entry` on one thread, a
    search's or `locate_source`'s fetch on another): each fetch holds the lock while it runs and
    reads its rows. Python's sqlite3 does not make one connection safe for concurrent use: two
    threads running the same statement at once get SQLITE_MISUSE, missing rows or empty ones.

    Records read are kept (up to CACHED_RECORDS, the oldest dropped first) and handed out again:
    the same Record objects, which callers only read (RecordSource's contract)."""

    def __init__(self, database_path: Path, cached: int = CACHED_RECORDS) -> None:
        self.database_path = Path(database_path)
        self._con: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._cached: dict[str, Record] = {}
        self._limit = cached

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            try:
                self._con = connect_readonly(self.database_path, check_same_thread=False)
            except sqlite3.Error as exc:
                raise BookAgentError(
                    "package.database_unreadable",
                    f"cannot open {self.database_path}: {exc}",
                    remediation="check the package with `book-agent status BOOK --verify`",
                ) from exc
        return self._con

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Record]:
        try:
            with self._lock:
                cached = self._cached
                found = {i: cached[i] for i in record_ids if i in cached}
                missing = [i for i in record_ids if i not in found]
                if missing:
                    read = fetch_records(lambda sql, params: self._connection().execute(sql, params), missing)
                    self._keep(read)
                    found.update(read)
                return found
        except sqlite3.Error as exc:
            raise BookAgentError(
                "package.database_unreadable",
                f"cannot read records from {self.database_path}: {exc}",
                remediation="check the package with `book-agent status BOOK --verify`",
            ) from exc

    def _keep(self, read: dict[str, Record]) -> None:
        cached = self._cached
        for record_id, record in read.items() if self._limit > 0 else ():
            if len(cached) >= self._limit:
                del cached[next(iter(cached))]  # dicts keep insertion order: the oldest goes
            cached[record_id] = record

    def get(self, record_id: str) -> Record:
        record = self.fetch([record_id]).get(record_id)
        if record is None:
            raise BookAgentError(
                "record.not_found",
                f"no record {record_id!r} in this book",
                details={"record_id": record_id},
                remediation="use a record_id from a search hit (`book-agent search BOOK QUERY`)",
            )
        return record

    def close(self) -> None:
        with self._lock:
            self._cached.clear()
            if self._con is not None:
                self._con.close()
                self._con = None
