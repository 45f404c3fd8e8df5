"""The sha256 of a file, read in blocks: constant memory for any size (package files,
model weights, sidecars)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file's bytes. Raises OSError."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
