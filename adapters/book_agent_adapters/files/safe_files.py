"""Derived files opened and allocated so that no file and no full disk can hang or kill a process.

- Opening: a derived file is used only when it is a regular file. A FIFO put in its place
  would block `open()` until a writer comes (a search hanging for ever), a device would feed
  endless bytes; so files are opened with O_NONBLOCK (which never blocks a FIFO's open) and
  refused unless fstat says S_ISREG, and SQLite files (which SQLite opens itself) are stat-ed
  first.
- Allocating: a file written through a memory map is allocated in full first. A map of a
  sparse file faults (SIGBUS, the process killed) when the disk fills while its pages are
  written; `posix_fallocate` instead fails with ENOSPC as an OSError that callers translate
  (`storage.no_space`, with the bytes needed).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from book_agent.domain.errors import BookAgentError

if TYPE_CHECKING:  # numpy is imported where arrays are made: the registry and locks need none of it
    import numpy as np

NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
SQLITE_FULL = 13
SQLITE_READONLY = 8
ZERO_CHUNK = 1 << 20


class NotRegularFile(OSError):
    """A derived file's path holds something else (a FIFO, a device, a folder)."""


def require_regular(path: Path) -> os.stat_result:
    """The file's stat when it is a regular file (following symlinks); else NotRegularFile
    (FileNotFoundError when missing)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
    return st


def open_regular(path: Path) -> IO[bytes]:
    """Open a regular file for reading without ever blocking on what the path turns out to be."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def allocate(handle: IO[bytes], size: int) -> None:
    """Reserve `size` bytes of the open file on disk (ENOSPC raised now, not as SIGBUS later)."""
    handle.flush()
    if size <= 0:
        return
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(handle.fileno(), 0, size)
            return
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):  # a file system without it: write zeros
                raise
    at = os.fstat(handle.fileno()).st_size
    handle.seek(at)
    zeros = bytes(ZERO_CHUNK)
    while at < size:
        handle.write(zeros[: min(ZERO_CHUNK, size - at)])
        at += min(ZERO_CHUNK, size - at)
    handle.flush()
    os.fsync(handle.fileno())  # a delayed-allocation file system reports a full disk here at the latest


def create_npy(path: Path, dtype: str, count: int) -> np.memmap:
    """A new .npy file of `count` items, allocated on disk, mapped for writing. An OSError
    (ENOSPC) carries `needed_bytes`; the caller removes the file."""
    import numpy as np

    with open(path, "xb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": np.dtype(dtype).str, "fortran_order": False,
                                                      "shape": (count,)})
        offset = handle.tell()
        try:
            allocate(handle, offset + count * np.dtype(dtype).itemsize)
        except OSError as exc:
            setattr(exc, "needed_bytes", offset + count * np.dtype(dtype).itemsize)  # noqa: B010
            raise
    if count == 0:  # nothing to map (a zero-length map is an error)
        return np.zeros(0, dtype).view(np.memmap)
    return np.memmap(path, dtype=dtype, mode="r+", offset=offset, shape=(count,))


def map_npy(path: Path, dtype: str, count: int) -> np.ndarray:
    """A read-only map of a 1-d .npy file that must hold exactly `count` items of `dtype`
    (ValueError otherwise; NotRegularFile for a FIFO or device)."""
    with open_regular(path) as handle:
        return map_open_npy(handle, path, dtype, count)


def map_open_npy(handle: IO[bytes], path: Path, dtype: str, count: int) -> np.ndarray:
    """map_npy of a file opened by open_regular (the caller keeps or closes the handle)."""
    import numpy as np

    handle.seek(0)
    version = np.lib.format.read_magic(handle)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, found = read_header(handle)
    offset = handle.tell()
    size = os.fstat(handle.fileno()).st_size
    if found != np.dtype(dtype) or fortran or shape != (count,):
        raise ValueError(f"{path.name} holds {found} {shape}, not {np.dtype(dtype)} ({count},)")
    if size != offset + count * found.itemsize:
        raise ValueError(f"{path.name} is {size} bytes, not {offset + count * found.itemsize}")
    if count == 0:
        return np.zeros(0, dtype)
    return np.asarray(np.memmap(handle, dtype=dtype, mode="r", offset=offset, shape=(count,)))


def portalocker_module(folder: Path) -> Any:
    """portalocker, imported where a lock is taken. Its import asks `tempfile` for a writable
    temporary folder (a default argument), which fails when no disk can be written at all."""
    try:
        import portalocker
    except OSError as exc:
        raise no_space(folder, exc, None, "a lock (no temporary folder can be written either)") from exc
    return portalocker


def free_bytes(folder: Path) -> int | None:
    import shutil  # a write's space check only: shutil imports bz2 and lzma

    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def is_no_space(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL
    return isinstance(exc, OSError) and exc.errno in NO_SPACE


def is_read_only(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", None) == SQLITE_READONLY
    return isinstance(exc, OSError) and exc.errno in READ_ONLY


def no_space(folder: Path, exc: BaseException, needed: int | None, what: str) -> BookAgentError:
    """`storage.no_space`: the disk under `folder` is full (or a quota or file-size limit hit)."""
    free = free_bytes(folder)
    details = {"path": str(folder), "needed_bytes": needed, "free_bytes": free}
    need = f" (about {needed:,} bytes needed, {free:,} free)" if needed is not None and free is not None else ""
    return BookAgentError(
        "storage.no_space", f"no space left to write {what} in {folder}{need}: {exc}", details=details,
        remediation="free disk space (or raise the quota or file-size limit) where the data dir lives, then run "
        "the command again (for the library's indexes: `book-agent prepare @all`); nothing half-written was "
        "kept, and a library search keeps serving the last good index meanwhile")


def read_only(folder: Path, exc: BaseException, what: str) -> BookAgentError:
    """`storage.read_only`: the data dir cannot be written (a read-only mount, permissions)."""
    return BookAgentError(
        "storage.read_only", f"cannot write {what} in {folder}: {exc}", details={"path": str(folder)},
        remediation="make the data dir writable, or run `book-agent prepare @all` (or `init`) where it is "
        "writable and serve the prepared copy read-only")
