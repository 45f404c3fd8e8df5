"""SqliteLocatorStore: a book's verified locators in its runtime dir (locators.sqlite).

One row per record (its locator as JSON), a stamp of what they were computed from and the
summary of how they were verified. Written to a staged file and moved into place, so a
search reading the old file never sees half a new one; read with `mode=ro` (not immutable:
a rebuild replaces the file under a reader, which then reads the old inode to the end).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import closing, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.locators import LocatorState
from book_agent.domain.sources.source_results import Locator
from book_agent.ports.locators import LocatorLookup, LocatorStore
from book_agent_adapters.files.sqlite_readonly import connect_readonly

if TYPE_CHECKING:
    from book_agent.domain.sources.locator_summary import LocatorSummary

FILE_NAME = "locators.sqlite"
_SCHEMA = ("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
           "CREATE TABLE locators (record_id TEXT PRIMARY KEY, locator TEXT NOT NULL) WITHOUT ROWID;")


def _connect(path: Path) -> sqlite3.Connection:
    return connect_readonly(path, check_same_thread=False, immutable=False)


def _state(path: Path, con: sqlite3.Connection, expected: dict[str, str]) -> LocatorState:
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        stamp, summary = json.loads(meta["stamp"]), json.loads(meta["summary"])
    except (sqlite3.Error, KeyError, ValueError):
        return {"present": True, "fresh": False, "reason": "corrupt", "path": str(path)}
    fresh = stamp == expected
    return {"present": True, "fresh": fresh, "reason": "fresh" if fresh else "stale (built from another package "
            "or verifier version)", "path": str(path), "summary": summary,
            "stamp": stamp}


CACHED_LOCATORS = 4096  # parsed locators kept per open lookup (a search's hits ask for the same ones again)


class SqliteLocatorLookup(LocatorLookup):
    """The open sidecar. Locators read are kept (up to CACHED_LOCATORS, the oldest dropped
    first): the file this lookup reads never changes under it (a rebuild replaces it, and a new
    lookup opens the new one), and callers copy a locator before changing it."""

    def __init__(self, path: Path, cached: int = CACHED_LOCATORS, con: sqlite3.Connection | None = None) -> None:
        """`con`: the sidecar's connection when the caller has opened it (it is this lookup's to close)."""
        self._con = con if con is not None else _connect(path)
        self._cached: dict[str, Locator] = {}
        self._limit = cached
        self._lock = threading.Lock()  # the MCP server's lanes share one lookup (and its connection)

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Locator]:
        ids = [r for r in dict.fromkeys(record_ids) if isinstance(r, str)]
        if not ids:
            return {}
        with self._lock:
            cached = self._cached
            found = {r: cached[r] for r in ids if r in cached}
            missing = [r for r in ids if r not in found]
            if missing:
                read = self._read(missing)
                if read is None:
                    return found  # a damaged sidecar: the rest are verified live instead (services/locators.py)
                for record_id, locator in read.items() if self._limit > 0 else ():
                    if len(cached) >= self._limit:
                        del cached[next(iter(cached))]
                    cached[record_id] = locator
                found.update(read)
            return found

    def _read(self, ids: list[str]) -> dict[str, Locator] | None:
        marks = ",".join("?" * len(ids))
        try:
            rows = self._con.execute(f"SELECT record_id, locator FROM locators WHERE record_id IN ({marks})",
                                     ids).fetchall()
        except (sqlite3.Error, UnicodeEncodeError):
            return None
        return {rid: json.loads(raw) for rid, raw in rows}

    def close(self) -> None:
        self._con.close()


class SqliteLocatorStore(LocatorStore):
    def path(self, runtime_dir: Path) -> Path:
        return Path(runtime_dir) / FILE_NAME

    def state(self, runtime_dir: Path, expected: dict[str, str]) -> LocatorState:
        path = self.path(runtime_dir)
        if not path.is_file():
            return {"present": False, "fresh": False, "reason": "missing", "path": str(path)}
        try:
            con = _connect(path)
        except sqlite3.Error:
            return {"present": True, "fresh": False, "reason": "corrupt", "path": str(path)}
        with closing(con):
            return _state(path, con, expected)

    def build(self, runtime_dir: Path, expected: dict[str, str], locators: Iterable[Locator]) -> LocatorSummary:
        target = self.path(runtime_dir)
        import secrets  # a build only (secrets imports hashlib and hmac)

        from book_agent.domain.sources.locator_summary import LocatorSummary

        staged = target.with_name(f".locators-{secrets.token_hex(6)}.sqlite")
        summary = LocatorSummary()
        started = time.perf_counter()
        try:
            with closing(sqlite3.connect(staged)) as con:
                con.executescript(_SCHEMA)
                for locator in locators:
                    summary.add(locator)
                    con.execute("INSERT OR REPLACE INTO locators VALUES (?, ?)",
                                (str(locator.get("record_id")), json.dumps(locator, ensure_ascii=False)))
                summary.seconds = time.perf_counter() - started
                con.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("stamp", json.dumps(expected, sort_keys=True)),
                    ("summary", json.dumps(summary.to_dict()))])
                con.commit()
            os.replace(staged, target)
        except (OSError, sqlite3.Error) as exc:
            raise BookAgentError("locators.build_failed", f"cannot write the verified locators to {target}: {exc}",
                                 details={"path": str(target)},
                                 remediation="make the data dir writable and free space, then `book-agent prepare BOOK`"
                                 ) from exc
        finally:
            with suppress(OSError):
                staged.unlink()
        return summary

    def open(self, runtime_dir: Path, expected: dict[str, str]) -> LocatorLookup | None:
        """The lookup reads through the connection its freshness was read by: one open, and the
        very file found fresh (a rebuild replaces the file, never this inode)."""
        path = self.path(runtime_dir)
        if not path.is_file():
            return None
        try:
            con = _connect(path)
        except sqlite3.Error:
            return None
        if not _state(path, con, expected).get("fresh"):
            con.close()
            return None
        return SqliteLocatorLookup(path, con=con)
