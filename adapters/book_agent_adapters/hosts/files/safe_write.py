"""Writes that never leave a half-written or lost host file.

Every write goes to a temporary file beside the target, is fsynced, then `os.replace`d over
it (atomic on POSIX and Windows). Before the first change to a file that existed, its
original bytes are kept once as `<name>.book-agent.bak`; later installs never overwrite
that backup, so it always holds the file as it was before book-agent first touched it.
A symlinked config (dotfile managers) is written through to its target, not replaced.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import tempfile
from pathlib import Path

BACKUP_SUFFIX = ".book-agent.bak"
MAX_DIFF_LINES = 400


def real_target(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def atomic_write(path: Path, data: bytes) -> None:
    target = real_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix="." + target.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    # Makes the rename durable on POSIX; Windows cannot open folders, and needs no such step.
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backup_once(path: Path) -> Path | None:
    """Keep the original bytes of an existing file, once. Returns the backup's path."""
    if not path.exists():
        return None
    backup = backup_path(path)
    if not backup.exists():
        atomic_write(backup, real_target(path).read_bytes())
    return backup


def unified_diff(path: Path, old: str | None, new: str | None) -> str:
    """A unified diff of a text change (`None` means the file is absent), size-capped."""
    before = (old or "").splitlines(keepends=True)
    after = (new or "").splitlines(keepends=True)
    lines = list(
        difflib.unified_diff(
            before,
            after,
            fromfile="/dev/null" if old is None else str(path),
            tofile="/dev/null" if new is None else str(path),
        )
    )
    lines = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
    if len(lines) > MAX_DIFF_LINES:
        more = len(lines) - MAX_DIFF_LINES
        lines = lines[:MAX_DIFF_LINES] + [f"... ({more} more diff lines)\n"]
    return "".join(lines)
