"""Read-only SQLite opening that leaves no trace beside the file.

`mode=ro` alone still lets SQLite create -wal/-shm files for a WAL database, and a hot
journal could be rolled back; `immutable=1` tells SQLite the file cannot change, so it
takes no locks and writes nothing. The package is read-only, so that promise holds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# SQLite's URI path ends at `?` or `#` and decodes `%HH`; every other byte is taken as it is
# (sqlite.org/uri.html), so a path without these three needs no quoting
_URI_SPECIAL = frozenset("%?#")


def readonly_uri(path: Path, immutable: bool = True) -> str:
    name = str(Path(path).resolve())
    if not _URI_SPECIAL.isdisjoint(name):  # only then: urllib.parse (with ipaddress) is ~3 ms of a cold search
        from urllib.parse import quote

        name = quote(name)
    return "file:" + name + ("?mode=ro&immutable=1" if immutable else "?mode=ro")


def connect_readonly(path: Path, check_same_thread: bool = True, immutable: bool = True) -> sqlite3.Connection:
    """Open a package's SQLite file read-only. Raises sqlite3.Error as SQLite does.

    `immutable=False` (plain `mode=ro`) is for our own runtime files, which a rebuild may
    replace while they are open."""
    return sqlite3.connect(readonly_uri(path, immutable), uri=True, check_same_thread=check_same_thread)
