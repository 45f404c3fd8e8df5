"""The package's vectors as one float32 matrix, loaded once per process.

Rows follow the records' reading order (`seq`), which also breaks score ties. Rows that
cannot be searched (wrong blob length, NaN/inf, no record) are left out here and reported
by validation. For cosine the rows are normalised at load when the manifest says they are
not. With a sidecar dir the finished matrix is cached there as .npy and memory-mapped by
later processes (see vector_sidecar.py).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.book.vectors import vector_sidecar
from book_agent_adapters.files.sqlite_readonly import connect_readonly

F32 = npt.NDArray[np.float32]

ROWS_SQL = (
    "SELECT r.record_id, v.embedding FROM records AS r "
    "JOIN vectors AS v ON v.record_id = r.record_id ORDER BY r.seq"
)


@dataclass
class VectorMatrix:
    """A book's vectors as searched: each row's record id and the float32 rows."""

    ids: list[str]
    matrix: F32  # (rows, dims), C-contiguous; possibly a read-only memory map
    skipped: int = 0  # rows left out (bad length or non-finite)
    report: dict[str, Any] = field(default_factory=dict)


still_whole = vector_sidecar.still_whole  # for holders of a loaded matrix: check before each use

_CACHE: dict[tuple[Any, ...], VectorMatrix] = {}
_ROWS: dict[tuple[Any, ...], F32] = {}  # matrices mapped without their ids (load_rows)
_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget every loaded matrix (tests; a long-lived process after package removal)."""
    with _LOCK:
        _CACHE.clear()
        _ROWS.clear()


def load_matrix(
    database_path: Path,
    dimensions: int,
    normalize_at_load: bool,
    sidecar_dir: Path | None = None,
    database_sha256: str | None = None,
) -> VectorMatrix:
    """The matrix for this database file, from the process cache, the sidecar or SQLite."""
    path, key, stamp = _identity(database_path, dimensions, normalize_at_load, sidecar_dir, database_sha256)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None and vector_sidecar.still_whole(cached.matrix):
            return cached
        _ROWS.pop(key, None)  # truncated under us (or not loaded yet): load again
        loaded = _load_uncached(path, stamp, sidecar_dir)
        _CACHE[key] = loaded
        return loaded


def load_rows(
    database_path: Path,
    dimensions: int,
    normalize_at_load: bool,
    sidecar_dir: Path | None = None,
    database_sha256: str | None = None,
) -> F32:
    """The matrix alone, as load_matrix would give it, without parsing its record ids when the
    sidecar is sound (a million ids cost ~0.4 s to read); else load_matrix's."""
    path, key, stamp = _identity(database_path, dimensions, normalize_at_load, sidecar_dir, database_sha256)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None and vector_sidecar.still_whole(cached.matrix):
            return cached.matrix
        rows = _ROWS.get(key)
        if rows is not None and vector_sidecar.still_whole(rows):
            return rows
        _CACHE.pop(key, None)
        _ROWS.pop(key, None)
        if sidecar_dir is not None:
            rows, _ = vector_sidecar.read_matrix(Path(sidecar_dir), stamp)
            if rows is not None:
                _ROWS[key] = rows
                return rows
    return load_matrix(database_path, dimensions, normalize_at_load, sidecar_dir, database_sha256).matrix


def _identity(database_path: Path, dimensions: int, normalize_at_load: bool, sidecar_dir: Path | None,
              database_sha256: str | None) -> tuple[Path, tuple[Any, ...], vector_sidecar.Stamp]:
    """(resolved path, process cache key, sidecar stamp) of the database file as it is now."""
    path = Path(database_path).resolve()
    try:
        st = path.stat()
    except OSError as exc:
        raise BookAgentError(
            "vector.database_unreadable", f"cannot read the database {path}: {exc.strerror}",
            details={"path": str(path)},
            remediation="Re-import the book package; its index.sqlite is missing.",
        ) from exc
    key = (str(path), st.st_size, st.st_mtime_ns, dimensions, normalize_at_load,
           str(sidecar_dir) if sidecar_dir else None, database_sha256)
    stamp = vector_sidecar.Stamp(
        database=str(path), size=st.st_size, mtime_ns=st.st_mtime_ns,
        sha256=database_sha256, dimensions=dimensions, normalized_at_load=normalize_at_load,
    )
    return path, key, stamp


def _load_uncached(path: Path, stamp: vector_sidecar.Stamp, sidecar_dir: Path | None) -> VectorMatrix:
    reason = "no sidecar dir"
    if sidecar_dir is not None:
        found, reason = vector_sidecar.read(Path(sidecar_dir), stamp)
        if found is not None:
            ids, matrix = found
            return VectorMatrix(ids, matrix,
                                report={"source": "sidecar", "sidecar": "ok",
                                        "sidecar_dir": str(sidecar_dir)})
    ids, matrix, skipped = read_from_sqlite(path, stamp.dimensions)
    if stamp.normalized_at_load:
        normalize_in_place(matrix)
    report: dict[str, Any] = {"source": "sqlite", "sidecar": reason}
    if sidecar_dir is not None:
        report.update(vector_sidecar.write(Path(sidecar_dir), stamp, ids, matrix))
    return VectorMatrix(ids, matrix, skipped, report)


def read_from_sqlite(path: Path, dimensions: int) -> tuple[list[str], F32, int]:
    """Rows in reading order. One preallocated matrix: no list of blobs held at once."""
    width = dimensions * 4
    try:
        con = connect_readonly(path)
        try:
            (count,) = con.execute(
                "SELECT COUNT(*) FROM records AS r JOIN vectors AS v ON v.record_id = r.record_id"
            ).fetchone()
            matrix = np.empty((int(count), dimensions), dtype=np.float32)
            ids: list[str] = []
            skipped = 0
            for record_id, blob in con.execute(ROWS_SQL):
                if not isinstance(blob, bytes) or len(blob) != width:
                    skipped += 1
                    continue
                row = matrix[len(ids)]
                row[:] = np.frombuffer(blob, dtype="<f4")
                if not np.isfinite(row).all():
                    skipped += 1
                    continue
                ids.append(str(record_id))
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise BookAgentError(
            "vector.database_unreadable", f"cannot read vectors from {path}: {exc}",
            details={"path": str(path)},
            remediation="Run `book-agent inspect` on the package; its index.sqlite is damaged.",
        ) from exc
    if skipped:
        matrix = np.ascontiguousarray(matrix[: len(ids)])
    return ids, matrix, skipped


def row_scores(rows: F32, query: F32) -> F32:
    """Each row's inner product with the query, one dot product a row. A row's score is then the
    same bits whichever rows it is scored with: a matrix product's kernel scores rows in blocks
    and rounds a block's remainder differently, so a candidate rescored with a few others could
    differ in its last bit from the same row in a pass over the whole matrix (~0.7% of rows did)."""
    return np.asarray(np.vecdot(rows, query), dtype=np.float32)


def normalize_in_place(matrix: F32) -> None:
    """Unit rows; an all-zero row stays zero (it then scores 0 against everything)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
