"""The vector matrix cached in a runtime dir (never the package) and memory-mapped back.

Three files: `vectors.f32.npy` (the finished float32 matrix), `vectors.ids.json` (row ->
record_id) and `vectors.stamp.json`, written last, which ties them to one database file
(path, size, mtime, sha256) and one way of loading (dims, normalisation) and records the
sha256 of the other two. A sidecar is used only when every one of those checks passes;
anything stale, truncated or altered is reported and rebuilt, never trusted.

A matrix file truncated in place under a running process would fault its memory map (SIGBUS
kills the process, every client's calls with it). So a matrix of at most `COPY_BELOW_BYTES` is
read whole on open (nothing left to fault), and a larger one is mapped and checked before
each use (`still_whole`: the mapped file, same inode, still as long as the map): a truncated
one is dropped and loaded again (from SQLite, its sidecar being corrupt now). A file replaced
by rename, as every writer here does, leaves the old mapping intact.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.file_hash import sha256_file
from book_agent_adapters.files.safe_files import require_regular

FORMAT = 2  # 2: file states hold the ctime (a write in place changes it; no user can set it back)
NPY, IDS, STAMP = "vectors.f32.npy", "vectors.ids.json", "vectors.stamp.json"
COPY_BELOW_BYTES = 32 << 20  # read whole below this (about 22k rows of 384 dims); mapped above

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Stamp:
    """What a vector sidecar was made from: it is used only while these still hold."""

    database: str
    size: int
    mtime_ns: int
    sha256: str | None  # the database's sha256 when the caller knows it (package manifest)
    dimensions: int
    normalized_at_load: bool


def _file_state(path: Path) -> list[int]:
    st = require_regular(path)  # a FIFO would hang the hash below
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def _intact(path: Path, stamp: dict[str, Any], name: str) -> bool:
    """Unchanged since written (size, mtime, inode, ctime as recorded), or else the same bytes.

    Hashing a 40 MiB matrix costs ~100 ms on every cold start, most of a memory-mapped
    load; a file whose size, mtime and inode are as recorded was not rewritten, so the hash
    is checked only when one of them differs.
    """
    if stamp.get(f"{name}_state") == _file_state(path):
        return True
    return sha256_file(path) == stamp.get(f"{name}_sha256")


def read(folder: Path, want: Stamp) -> tuple[tuple[list[str], F32] | None, str]:
    """(ids, memory-mapped matrix) when the sidecar is sound, else (None, why not)."""
    stamp, reason = _sound_stamp(folder, want)
    if stamp is None:
        return None, reason
    try:
        if not _intact(folder / IDS, stamp, "ids"):
            return None, "corrupt: ids"
        ids = json.loads((folder / IDS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, "corrupt: unreadable"
    if not isinstance(ids, list) or len(ids) != stamp.get("rows"):
        return None, "corrupt: shape"
    mapped, reason = _mapped_matrix(folder, want, stamp)
    if mapped is None:
        return None, reason
    return ([str(i) for i in ids], mapped), "ok"


def read_matrix(folder: Path, want: Stamp) -> tuple[F32 | None, str]:
    """The memory-mapped matrix alone (no ids: a caller that keeps its own row -> id map, such
    as the library's approximate vector index, need not parse them), else (None, why not)."""
    stamp, reason = _sound_stamp(folder, want)
    if stamp is None:
        return None, reason
    return _mapped_matrix(folder, want, stamp)


def _sound_stamp(folder: Path, want: Stamp) -> tuple[dict[str, Any] | None, str]:
    try:
        require_regular(folder / STAMP)
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "absent"
    except (OSError, ValueError):
        return None, "stamp unreadable"
    if not isinstance(stamp, dict) or stamp.get("format") != FORMAT:
        return None, "stamp format"
    for key, value in asdict(want).items():
        if key == "sha256":
            if value is not None and stamp.get("database_sha256") != value:
                return None, "stale: database sha256"
        elif stamp.get(key) != value:
            return None, f"stale: {key}"
    return stamp, "ok"


def _mapped_matrix(folder: Path, want: Stamp, stamp: dict[str, Any]) -> tuple[F32 | None, str]:
    try:
        if not _intact(folder / NPY, stamp, "npy"):
            return None, "corrupt: matrix"
        mapped = _open_matrix(folder / NPY)
    except (OSError, ValueError):
        return None, "corrupt: unreadable"
    rows = stamp.get("rows")
    if mapped.dtype != np.dtype("<f4") or mapped.shape != (rows, want.dimensions) or not mapped.flags.c_contiguous:
        return None, "corrupt: shape"
    return np.asarray(mapped), "ok"


def _open_matrix(path: Path) -> Any:
    if path.stat().st_size <= COPY_BELOW_BYTES:
        return np.load(path, allow_pickle=False)  # in memory: a later truncation cannot fault it
    mapped = np.load(path, mmap_mode="r", allow_pickle=False)
    mapped.book_agent_inode = os.stat(path).st_ino  # what `still_whole` compares
    return mapped


def still_whole(matrix: Any) -> bool:
    """False when `matrix` is memory-mapped from a file since truncated in place (reading it
    would fault); True for a matrix in memory, or mapped from a file replaced or removed
    since (the mapping keeps the old file alive)."""
    mapped = matrix
    while mapped is not None and not isinstance(mapped, np.memmap):
        mapped = getattr(mapped, "base", None)
    inode = getattr(mapped, "book_agent_inode", None)
    if mapped is None or inode is None or mapped.filename is None:
        return True
    try:
        st = os.stat(mapped.filename)
    except OSError:
        return True  # removed: the mapped file lives on until it is unmapped
    return st.st_ino != inode or st.st_size >= mapped.offset + mapped.nbytes


def write(folder: Path, stamp: Stamp, ids: list[str], matrix: F32) -> dict[str, Any]:
    """Write the sidecar atomically; a failure is reported, never raised (it is a cache)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            (folder / STAMP).unlink()  # no stamp may vouch for half-replaced files
        _atomic(folder, NPY, lambda handle: np.save(handle, matrix, allow_pickle=False))
        ids_bytes = json.dumps(ids, ensure_ascii=False).encode("utf-8")
        _atomic(folder, IDS, lambda handle: handle.write(ids_bytes))
        database_sha256 = stamp.sha256 or sha256_file(Path(stamp.database))
        record = {
            "format": FORMAT, **asdict(stamp), "database_sha256": database_sha256,
            "rows": len(ids), "npy_sha256": sha256_file(folder / NPY),
            "ids_sha256": sha256_file(folder / IDS),
            "npy_state": _file_state(folder / NPY), "ids_state": _file_state(folder / IDS),
        }
        record.pop("sha256")
        payload = json.dumps(record, indent=1).encode("utf-8")
        _atomic(folder, STAMP, lambda handle: handle.write(payload))
    except OSError as exc:
        return {"sidecar_written": False, "sidecar_error": f"{type(exc).__name__}: {exc.strerror}"}
    return {"sidecar_written": True, "sidecar_dir": str(folder)}


def _atomic(folder: Path, name: str, fill: Any) -> None:
    write_atomic(folder / name, fill, suffix="")
