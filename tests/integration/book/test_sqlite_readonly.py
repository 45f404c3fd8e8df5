"""Read-only SQLite opening (files/sqlite_readonly.py): any folder name opens, nothing is written.

Only a path holding `%`, `?` or `#` is quoted for SQLite's URI (a cold search pays no
urllib.parse import for the others); both kinds must open the very file named.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from book_agent_adapters.files.sqlite_readonly import connect_readonly, readonly_uri

FOLDERS = ["plain", "with space", "ü 书 a&b=c;d+e", "p%20x", "what?", "hash#tag", "%3F%", "semi;colon?#%"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_any_folder_name_opens_the_file_it_names(tmp_path: Path, folder: str) -> None:
    database = tmp_path / folder / "index.sqlite"
    database.parent.mkdir()
    with sqlite3.connect(database) as con:
        con.execute("CREATE TABLE t (name TEXT)")
        con.execute("INSERT INTO t VALUES (?)", (folder,))
    con.close()
    before = sorted(p.name for p in database.parent.iterdir())
    for immutable in (True, False):
        read = connect_readonly(database, immutable=immutable)
        try:
            assert read.execute("SELECT name FROM t").fetchall() == [(folder,)]
            with pytest.raises(sqlite3.OperationalError):
                read.execute("INSERT INTO t VALUES ('x')")
        finally:
            read.close()
    assert sorted(p.name for p in database.parent.iterdir()) == before  # no file beside it


def test_only_the_uri_delimiters_are_quoted(tmp_path: Path) -> None:
    assert readonly_uri(tmp_path / "a b" / "ü.sqlite") == f"file:{tmp_path}/a b/ü.sqlite?mode=ro&immutable=1"
    assert readonly_uri(tmp_path / "x%?#" / "i.sqlite", immutable=False).endswith("/x%25%3F%23/i.sqlite?mode=ro")
