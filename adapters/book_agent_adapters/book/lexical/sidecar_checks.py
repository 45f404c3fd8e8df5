"""A book's lexical sidecar checked against what was built: size, mtime and, when either
differs, its sha256 (adapters/book_agent_adapters/book/lexical/fts_lexical_index.py builds it, runtime_store.py asks).

The check file (`lexical.check.json` in the runtime dir) maps a built file's inode to its size,
mtime and sha256. It is written before the file is renamed into place (a rename keeps the inode
and the mtime), under the runtime dir's build lock, so a reader finds its sidecar's entry both
before and after the rename; a staged sidecar published later keeps its entry too. A sidecar
whose inode has no entry was put there by something else than a build; one whose size or mtime
changed is hashed. A runtime dir built by an earlier release has no check file: its sidecars
are trusted as they were (the stamp inside still decides freshness).
"""

from __future__ import annotations

import json
from pathlib import Path

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
        st = require_regular(sidecar)
        entry = entries.get(str(st.st_ino))
        if not isinstance(entry, list) or len(entry) != 3:
            return "corrupt: not the sidecar that was built"
        if [st.st_size, st.st_mtime_ns] == entry[:2]:
            return None
        return None if sha256_file(sidecar) == entry[2] else "corrupt: changed since it was built"
    except OSError as exc:
        return f"unreadable: {exc}"
