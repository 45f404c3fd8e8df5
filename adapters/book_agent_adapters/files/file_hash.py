"""The sha256 of a file, read in blocks: constant memory for any size (package files,
model weights, sidecars)."""

from __future__ import annotations

from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file's bytes. Raises OSError."""
    import hashlib  # when a file is hashed: OpenSSL's load is not every command's to pay

    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
