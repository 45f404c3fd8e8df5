"""File-system steps of archive import: the managed folder, reading and hashing the
archive, read-only output, and removing temp folders (also those of crashed runs)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import IO

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.archives.writer import CHUNK, writing

TMP_PREFIX = ".import-tmp-"
# A temp folder this old belongs to a run that crashed; a live import touches its own
# folder far more often than this.
STALE_TMP_SECONDS = 6 * 3600


def managed_folder(managed: Path) -> Path:
    with writing(str(managed)):
        managed.mkdir(parents=True, exist_ok=True)
    return managed.resolve()


class open_archive:  # noqa: N801 - used as a context manager, reads like a function
    def __init__(self, path: Path) -> None:
        try:
            self._handle: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed in __exit__
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise BookAgentError(
                "archive.not_found",
                f"no archive file at {path}",
                details={"path": str(path)},
                remediation="pass the path of a .zip, .tar or .tar.gz file",
            ) from exc
        except OSError as exc:
            raise BookAgentError(
                "archive.io_error",
                f"cannot read {path}: {exc}",
                details={"path": str(path), "error": str(exc)},
            ) from exc

    def __enter__(self) -> IO[bytes]:
        return self._handle

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


def sha256_of(handle: IO[bytes]) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    try:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
            size += len(block)
    except OSError as exc:
        raise BookAgentError(
            "archive.io_error", f"cannot read the archive: {exc}", details={"error": str(exc)}
        ) from exc
    return digest.hexdigest(), size


def make_read_only(root: Path) -> None:
    with writing(str(root)):
        for dirpath, _dirnames, filenames in os.walk(root, topdown=False):
            for filename in filenames:
                os.chmod(os.path.join(dirpath, filename), 0o444)
            os.chmod(dirpath, 0o555)


def remove_tree(root: Path) -> None:
    """Delete a (possibly read-only) temp folder; best effort, never raises."""
    try:
        if not root.is_dir() or root.is_symlink():
            return
        for dirpath, _dirnames, _filenames in os.walk(root):
            os.chmod(dirpath, 0o700)  # a read-only folder's entries cannot be unlinked
        shutil.rmtree(root)
    except OSError:
        pass  # a later import's stale sweep retries


def sweep_stale(managed: Path) -> None:
    now = time.time()
    try:
        entries = list(os.scandir(managed))
    except OSError:
        return
    for entry in entries:
        try:
            if (
                entry.name.startswith(TMP_PREFIX)
                and entry.is_dir(follow_symlinks=False)
                and now - entry.stat(follow_symlinks=False).st_mtime > STALE_TMP_SECONDS
            ):
                remove_tree(Path(entry.path))
        except OSError:
            continue
