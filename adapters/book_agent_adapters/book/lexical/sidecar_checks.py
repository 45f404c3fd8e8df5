"""A book's lexical sidecar checked against what was built: size, mtime and, when either
differs, its sha256 (adapters/book_agent_adapters/book/lexical/fts_lexical_index.py builds it, runtime_store.py asks).

The check file (`lexical.check.json` in the runtime dir) maps a built file's inode to its size,
mtime and sha256. It is written before the file is renamed into place (a rename keeps the inode
and the mtime), under the runtime dir's build lock, so a reader finds its sidecar's entry both
before and after the rename; a staged sidecar published later keeps its entry too. A sidecar
whose inode has no entry, or whose size or mtime changed, is hashed: the bytes of a sidecar that
was built there (a copy of the data dir: `cp -a`, `cp -r`, rsync, tar, a restored backup) are
trusted, and the verdict remembered for the file's new state (copy_checks.py: beside it, or in
memory on a read-only data dir); other bytes are damage. A runtime dir built by an earlier
release has no check file: its sidecars are trusted as they were (the stamp inside still decides
freshness).
"""

from __future__ import annotations

import json
from pathlib import Path

from book_agent_adapters.files import copy_checks
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.file_hash import sha256_file
from book_agent_adapters.files.safe_files import open_regular, require_regular

CHECK_NAME = "lexical.check.json"
KEPT = 4  # entries: the live sidecar, a staged one, and a few earlier builds
MAX_CHECK_BYTES = 1 << 16


def _entries(folder: Path) -> dict[str, list[object]] | None:
    try:
        with open_regular(folder / CHECK_NAME) as handle:
            data = json.loads(handle.read(MAX_CHECK_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable: no entry vouches for any sidecar (they are rebuilt)
    return data if isinstance(data, dict) else {}


def record(built: Path, folder: Path) -> None:
    """Vouch for `built` (to be renamed into `folder`; call holding the build lock). Raises OSError."""
    st = require_regular(built)
    entries = {k: v for k, v in (_entries(folder) or {}).items() if k != str(st.st_ino)}
    entries[str(st.st_ino)] = [st.st_size, st.st_mtime_ns, sha256_file(built)]
    kept = dict(list(entries.items())[-KEPT:])
    write_atomic(folder / CHECK_NAME, json.dumps(kept).encode("utf-8"), prefix=".lexical-check-", suffix=".json")


def problem(sidecar: Path) -> str | None:
    """Why the sidecar is not the one that was built (None: it is, or no check was recorded)."""
    entries = _entries(sidecar.parent)
    if entries is None:
        return None
    try:
        return None if built_entry(sidecar, entries) is not None else "corrupt: not the sidecar that was built"
    except OSError as exc:
        return f"unreadable: {exc}"


def built_entry(sidecar: Path, entries: dict[str, list[object]] | None = None) -> tuple[str, list[object]] | None:
    """(inode, [size, mtime, sha256]) of the build the sidecar is, or a verified copy of; None
    when it holds other bytes. Hashes the file at most once per new file state. Raises OSError."""
    entries = _entries(sidecar.parent) if entries is None else entries
    st = require_regular(sidecar)
    entry = (entries or {}).get(str(st.st_ino))
    if _valid(entry) and [st.st_size, st.st_mtime_ns] == entry[:2]:  # type: ignore[index]
        return str(st.st_ino), entry  # type: ignore[return-value]
    candidates = [(k, e) for k, e in (entries or {}).items() if _valid(e) and e[0] == st.st_size]
    found = copy_checks.which(sidecar, [str(e[2]) for _, e in candidates], st)
    return next(((k, e) for k, e in candidates if e[2] == found), None)


def _valid(entry: object) -> bool:
    return isinstance(entry, list) and len(entry) == 3 and isinstance(entry[2], str)


def built_identity(sidecar: Path) -> list[int] | None:
    """The identity (inode, size, mtime: book_impact_files.identity) the sidecar had when it was
    built, when it is that build or a verified copy of it; None when no check vouches for it.
    An impact file made for the built sidecar then serves its copies as well."""
    try:
        found = built_entry(sidecar)
    except OSError:
        return None
    if found is None:
        return None
    key, entry = found
    return [int(key), int(entry[0]), int(entry[1])]  # type: ignore[call-overload]
