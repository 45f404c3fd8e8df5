"""Where a book's impact file lies and what its sidecar is now: the part of book_impact.py that
every command's lexical index needs, without numpy (which building, loading and searching the
file import when they run)."""

from __future__ import annotations

import os
from pathlib import Path

FILE_NAME = "lexical.impact.npz"


def impact_path(sidecar: Path) -> Path:
    return sidecar.with_name(FILE_NAME)


def identity(path: Path) -> list[int]:
    """What the sidecar is now (a rebuild is a new inode; a rename keeps inode and mtime): the
    identity of the build it is, or a verified copy of (a copied data dir keeps its impact files:
    issue 48), else its own."""
    from book_agent_adapters.book.lexical.sidecar_checks import built_identity

    st = os.stat(path)
    built = built_identity(path)
    return built if built is not None else [st.st_ino, st.st_size, st.st_mtime_ns]
