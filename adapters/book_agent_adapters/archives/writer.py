"""Writing members under the temporary folder, counting every byte that comes out.

Declared sizes can lie, so the limits are enforced on the bytes actually read from the
decompressor, chunk by chunk, before each chunk is written. Files are created with
O_CREAT|O_EXCL|O_NOFOLLOW after checking the real parent folder lies inside the root.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.archives.limits import ArchiveLimits
from book_agent_adapters.archives.members import reading

CHUNK = 1 << 20
_NO_SPACE = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
_OPEN_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


@contextmanager
def writing(target: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise BookAgentError(
                "archive.no_space",
                f"ran out of disk space (or file-size quota) while writing {target!r}",
                details={"member": target, "errno": exc.errno, "error": str(exc)},
                remediation="free disk space in the data directory and import again",
            ) from exc
        raise BookAgentError(
            "archive.io_error",
            f"could not write {target!r}: {exc}",
            details={"member": target, "errno": exc.errno, "error": str(exc)},
            remediation="check the data directory is writable",
        ) from exc


class Extraction:
    """The running totals of one import and the only code that writes under `root`."""

    def __init__(
        self,
        root: Path,
        limits: ArchiveLimits,
        archive_size: int,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.root = root
        self._real_root = os.path.realpath(root)
        self.limits = limits
        self.archive_size = max(archive_size, 1)
        self.total_written = 0
        self.files = 0
        self._dirs: set[tuple[str, ...]] = {()}
        self._progress = progress

    def make_dir(self, parts: tuple[str, ...]) -> None:
        for depth in range(1, len(parts) + 1):
            prefix = parts[:depth]
            if prefix in self._dirs:
                continue
            path = self.root.joinpath(*prefix)
            with writing("/".join(prefix)):
                try:
                    os.mkdir(path, 0o700)
                except FileExistsError:
                    # Only this import writes here; still, never follow what we did not make.
                    if not stat.S_ISDIR(os.lstat(path).st_mode):
                        raise
            self._dirs.add(prefix)

    def write_file(
        self, parts: tuple[str, ...], stream: IO[bytes], declared: int, compressed: int | None
    ) -> None:
        name = "/".join(parts)
        self.make_dir(parts[:-1])
        target = self.root.joinpath(*parts)
        parent = os.path.realpath(target.parent)
        if os.path.commonpath([parent, self._real_root]) != self._real_root:
            raise BookAgentError(
                "archive.path_traversal",
                "member would land outside the extraction folder",
                details={"member": name},
            )
        with writing(name):
            fd = os.open(target, _OPEN_FLAGS, 0o600)
        try:
            written = 0
            while True:
                with reading(f"decompressing {name!r}"):
                    chunk = stream.read(CHUNK)
                if not chunk:
                    break
                written += len(chunk)
                self._check(name, written, len(chunk), declared, compressed)
                with writing(name):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                self.total_written += len(chunk)
                if self._progress is not None:
                    self._progress(self.total_written)
        finally:
            with writing(name):
                os.close(fd)
        if written != declared:
            raise _size_mismatch(name, declared, written)
        self.files += 1

    def _check(
        self, name: str, written: int, chunk: int, declared: int, compressed: int | None
    ) -> None:
        limits = self.limits
        if written > declared:
            raise _size_mismatch(name, declared, written)
        if written > limits.max_member_bytes:
            raise _limit("archive.member_too_large", name, written, limits.max_member_bytes)
        total = self.total_written + chunk
        if total > limits.max_total_bytes:
            raise _limit("archive.too_large", name, total, limits.max_total_bytes)
        if written > limits.ratio_floor_bytes and compressed is not None:
            ratio = written / max(compressed, 1)
            if ratio > limits.max_ratio:
                raise _ratio(name, ratio, limits.max_ratio)
        if total > limits.ratio_floor_bytes:
            ratio = total / self.archive_size
            if ratio > limits.max_ratio:
                raise _ratio(name, ratio, limits.max_ratio)


def _size_mismatch(name: str, declared: int, actual: int) -> BookAgentError:
    return BookAgentError(
        "archive.size_mismatch",
        f"member {name!r} declares {declared} bytes but holds {'more' if actual > declared else actual}",
        details={"member": name, "declared": declared, "actual_at_least": actual},
        remediation="the archive headers are forged or damaged; rebuild the archive",
    )


def _limit(code: str, name: str, size: int, limit: int) -> BookAgentError:
    what = f"member {name!r}" if code == "archive.member_too_large" else "the archive's content"
    return BookAgentError(
        code,
        f"{what} exceeds the size limit ({size} > {limit} bytes)",
        details={"member": name, "bytes": size, "limit": limit},
        remediation="raise the limit with ArchiveLimits(...) if the archive is trusted",
    )


def _ratio(name: str, ratio: float, limit: float) -> BookAgentError:
    return BookAgentError(
        "archive.ratio_exceeded",
        f"compression ratio {ratio:.0f}:1 exceeds the limit {limit:.0f}:1 (a zip bomb?)",
        details={"member": name, "ratio": round(ratio, 1), "limit": limit},
        remediation="raise ArchiveLimits(max_ratio=...) only if the archive is trusted",
    )
