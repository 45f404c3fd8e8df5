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
import errno
import os
import stat
import tempfile
from pathlib import Path

from book_agent_adapters.hosts.errors import file_unusable

BACKUP_SUFFIX = ".book-agent.bak"
MAX_DIFF_LINES = 400
MAX_FILE_BYTES = 16 << 20  # a host config, backup or skill file is kilobytes


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    return "is a socket" if stat.S_ISSOCK(mode) else "is not a regular file"


def regular_stat(path: Path) -> os.stat_result | None:
    """The stat of what `path` names through its symlinks, None when nothing is there (a
    dangling symlink included: writing creates its target). Anything but a regular file
    is refused (host.file_unusable) before it is opened."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise file_unusable(path, "is a symlink loop") from exc
        raise
    if not stat.S_ISREG(st.st_mode):
        raise file_unusable(path, _kind(st.st_mode))
    return st


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of a regular file (through symlinks), None when absent. At most `limit`
    bytes are read (host.file_unusable past it); a FIFO, device or directory is never opened,
    and O_NONBLOCK keeps one swapped in after the check from blocking the open."""
    if regular_stat(path) is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise file_unusable(path, _kind(mode))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise file_unusable(path, f"holds more than {limit} bytes")
    return data


def real_target(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def atomic_write(path: Path, data: bytes) -> None:
    target = real_target(path)
    found = regular_stat(target)  # never replace a device, FIFO or folder a symlink names
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = found.st_mode & 0o7777 if found is not None else None
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
    data = read_regular(path)
    if data is None:
        return None
    backup = backup_path(path)
    if regular_stat(backup) is None:
        atomic_write(backup, data)
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
