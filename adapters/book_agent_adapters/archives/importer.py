"""Safe, all-or-nothing import of a book-package archive (zip, tar, tar.gz/tgz).

    import_archive(path, managed_dir) -> managed_dir/<first 16 hex of SHA-256>/

The archive is extracted into `managed_dir/.import-tmp-*`, checked (names, member kinds,
limits; see contracts/archives.md), made read-only, handed to the caller's `verify`, and
only then renamed into place. Any failure removes the temporary folder, so the
destination either exists complete or not at all, and nothing is written outside
managed_dir. The destination is named by content, so importing again is a no-op.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import IO

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.archives.checks import checked_members, precheck
from book_agent_adapters.archives.filesystem import (
    TMP_PREFIX,
    make_read_only,
    managed_folder,
    open_archive,
    remove_tree,
    sha256_of,
    sweep_stale,
)
from book_agent_adapters.archives.limits import ArchiveLimits
from book_agent_adapters.archives.members import TarSource, ZipSource, detect_format
from book_agent_adapters.archives.writer import Extraction, writing

__all__ = ["ArchiveLimits", "TMP_PREFIX", "import_archive", "remove_tree"]

DEST_HEX_DIGITS = 16
DEFAULT_LIMITS = ArchiveLimits()

Progress = Callable[[int, int], None]


def import_archive(
    path: str | os.PathLike[str],
    managed_dir: str | os.PathLike[str],
    limits: ArchiveLimits = DEFAULT_LIMITS,
    *,
    verify: Callable[[Path], None] | None = None,
    progress: Progress | None = None,
) -> Path:
    """Extract `path` into managed_dir/<sha256[:16]>/ and return that folder.

    `verify(folder)` runs on the complete, read-only folder before it is published (and
    on an already imported one); its BookAgentError propagates unchanged.
    `progress(done, total)` reports bytes (see contracts/archives.md); it never prints.
    """
    managed = managed_folder(Path(managed_dir))
    with open_archive(Path(path)) as handle:
        digest, size = sha256_of(handle)
        dest = managed / digest[:DEST_HEX_DIGITS]
        if _is_complete(dest):
            _run_verify(verify, dest)
            return dest
        sweep_stale(managed)
        kind = detect_format(handle)
        if kind == "empty-tar":
            raise _empty()
        with writing(str(managed)):
            tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=managed))
        try:
            if _extract(handle, kind, tmp, limits, size, progress) == 0:
                raise _empty()
            make_read_only(tmp)
            _run_verify(verify, tmp)
            return _publish(tmp, dest)
        except BaseException:
            remove_tree(tmp)
            raise


def _extract(
    handle: IO[bytes],
    kind: str,
    tmp: Path,
    limits: ArchiveLimits,
    size: int,
    progress: Progress | None,
) -> int:
    source: ZipSource | TarSource = ZipSource(handle) if kind == "zip" else TarSource(handle, kind)
    with closing(source):
        # zip: the central directory gives every total up front; tar: the archive's own
        # size is the only total known before the end (progress counts archive bytes read).
        total = source.declared_total if source.declared_total is not None else size
        precheck(source.member_count, source.declared_total, limits, size)

        def report(written: int) -> None:
            if progress is not None:
                done = written if source.declared_total is not None else handle.tell()
                progress(min(done, total), total)

        extraction = Extraction(tmp, limits, size, report)
        report(0)
        checked = checked_members(source.members(), limits)
        if source.member_count is not None:
            checked = iter(list(checked))  # refuse any bad member before writing a byte
        for member, parts in checked:
            if member.kind == "dir":
                extraction.make_dir(parts)
                continue
            with closing(source.open(member)) as stream:
                extraction.write_file(parts, stream, member.size, member.compressed)
        source.finish()
        if progress is not None:
            progress(total, total)
        return extraction.files


def _empty() -> BookAgentError:
    return BookAgentError(
        "archive.empty",
        "the archive holds no files",
        remediation="package the book folder, not an empty one",
    )


def _is_complete(dest: Path) -> bool:
    # Folders are only ever renamed into place complete, so existing means complete.
    return dest.is_dir() and not dest.is_symlink()


def _run_verify(verify: Callable[[Path], None] | None, folder: Path) -> None:
    if verify is None:
        return
    try:
        verify(folder)
    except BookAgentError:
        raise
    except Exception as exc:
        raise BookAgentError(
            "archive.verify_failed",
            f"the imported folder failed its check: {exc}",
            details={"error": repr(exc)},
        ) from exc


def _publish(tmp: Path, dest: Path) -> Path:
    try:
        os.rename(tmp, dest)
    except OSError as exc:
        if _is_complete(dest):  # a concurrent import of the same archive won the race
            remove_tree(tmp)
            return dest
        raise BookAgentError(
            "archive.io_error",
            f"cannot move the import into place at {dest}: {exc}",
            details={"destination": str(dest), "error": str(exc)},
            remediation="remove whatever occupies that path and import again",
        ) from exc
    return dest
