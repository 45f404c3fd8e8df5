"""A package's record reader is shared by the MCP server's two lanes (a `read_entry` on one
thread, a search's or `locate_source`'s fetch on another): concurrent fetches must each get
their own rows. Unlocked, Python's sqlite3 let two threads running the same statement on one
connection get SQLITE_MISUSE, missing rows or empty ones (the HTTP load test found it)."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

from book_agent_adapters.book.vectors.sqlite_records import SqliteRecordReader
from tests.support.package_builder import build_package


def test_concurrent_fetches_on_one_reader_each_get_their_records(tmp_path: Path) -> None:
    root = build_package(tmp_path / "book", book_id="threads-book")
    with closing(sqlite3.connect(root / "index.sqlite")) as con:
        ids = [str(row[0]) for row in con.execute("SELECT record_id FROM records")]
    assert len(ids) >= 5
    reader = SqliteRecordReader(root / "index.sqlite", cached=0)  # every fetch reads: the statement races
    problems: list[str] = []

    def fetch_many(offset: int) -> None:
        for n in range(1500):
            wanted = ids[(n * 7 + offset) % len(ids)]
            try:
                found = reader.fetch([wanted])  # every thread the same statement: the racy case
                if wanted not in found or found[wanted].record_id != wanted:
                    problems.append(f"missing {wanted}")
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                problems.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=fetch_many, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reader.close()
    assert problems == []
