"""Writing a file atomically: a temporary file beside the target, then `os.replace`.

A reader sees the old file or the new one, never half a file; on any failure the
temporary file is removed and the error raised as the file system gave it. `durable`
also fsyncs the data before the rename (the registry, whose loss would hurt); caches and
renders skip that. (Host config files go through adapters/book_agent_adapters/hosts/files/safe_write.py, which also
keeps their mode, writes through symlinks and keeps a backup.)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO


def write_atomic(
    path: Path,
    data: bytes | Callable[[IO[bytes]], object],
    *,
    prefix: str | None = None,
    suffix: str = ".tmp",
    durable: bool = False,
) -> None:
    """Replace `path` by `data` (bytes, or a function writing to the binary handle) in one
    rename. The folder must exist. Raises OSError."""
    import tempfile  # a write only: tempfile (random, shutil) is ~10 ms of a read-only command's start

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}." if prefix is None else prefix, suffix=suffix,
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if callable(data):
                data(handle)
            else:
                handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
