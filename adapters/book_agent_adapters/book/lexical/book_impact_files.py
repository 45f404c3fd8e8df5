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
    """What the file is now (a rebuild is a new inode; a rename keeps inode and mtime)."""
    st = os.stat(path)
    return [st.st_ino, st.st_size, st.st_mtime_ns]
