"""Checks of a database's vectors against the vector manifest, as diagnostics.

PrebuiltVectorStoreAdapter.validate() uses package_database.check_database (the package
validator's checks) plus `check_normalization`; `check_vectors` is the self-contained
fallback used when that module cannot be imported.

The format (contracts/book-package-0.1.md) calls these validation errors: a blob that is
not dimensions x 4 bytes, a NaN or infinite component, a vector without a record, a
record_count that disagrees with the rows. Also warned: records without a vector (they
cannot be found by the vector channel) and rows that are not unit length although the
manifest says `normalized: true` (cosine would then rank them wrongly).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np

from book_agent.domain.diagnostics import Diagnostic, Severity

SAMPLE = 5  # ids named per finding; the count is always complete
NORM_TOLERANCE = 1e-3


def check_vectors(con: sqlite3.Connection, manifest: Mapping[str, Any] | None) -> list[Diagnostic]:
    """Diagnostics for the vectors table. Raises sqlite3.Error on an unreadable database."""
    out: list[Diagnostic] = []
    meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    (records,) = con.execute("SELECT COUNT(*) FROM records").fetchone()
    (vectors,) = con.execute("SELECT COUNT(*) FROM vectors").fetchone()
    _count_check(out, "meta", meta.get("record_count"), records)
    if manifest is None:
        if vectors:
            out.append(Diagnostic(
                "vector.manifest_missing",
                f"The database holds {vectors} vectors but the package has no vectors.json.",
                details={"vectors": vectors},
            ))
        return out
    _count_check(out, "vectors.json", manifest.get("record_count"), records)
    dims = manifest.get("dimensions")
    if manifest.get("dtype", "float32") != "float32" or not isinstance(dims, int) or dims <= 0:
        out.append(Diagnostic(
            "vector.manifest_invalid", "vectors.json must say dtype float32 and positive dimensions.",
            details={"dtype": manifest.get("dtype"), "dimensions": dims},
        ))
        return out
    orphans = [r for (r,) in con.execute(
        "SELECT record_id FROM vectors WHERE record_id NOT IN (SELECT record_id FROM records)")]
    _finding(out, "vector.orphan", "vectors have no record", orphans)
    missing = [r for (r,) in con.execute(
        "SELECT record_id FROM records WHERE record_id NOT IN (SELECT record_id FROM vectors)")]
    _finding(out, "vector.missing", "records have no vector (the vector channel cannot find them)",
             missing, "warning")
    wrong, non_finite, off_norm = _scan_blobs(con, dims)
    _finding(out, "vector.wrong_length", f"vectors are not {dims} x 4 bytes long", wrong,
             details={"expected_bytes": dims * 4})
    _finding(out, "vector.non_finite", "vectors hold NaN or infinite components", non_finite)
    return out + _normalization(off_norm, manifest)


def check_normalization(con: sqlite3.Connection, manifest: Mapping[str, Any] | None) -> list[Diagnostic]:
    """Only the `normalized: true` claim (what package_database.check_database leaves out)."""
    dims = (manifest or {}).get("dimensions")
    if manifest is None or not isinstance(dims, int) or dims <= 0:
        return []
    return _normalization(_scan_blobs(con, dims)[2], manifest)


def _normalization(off_norm: list[str], manifest: Mapping[str, Any]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    if manifest.get("normalized", True):
        _finding(out, "vector.not_normalized",
                 "vectors are not unit length although vectors.json says normalized: true",
                 off_norm, "warning", details={"tolerance": NORM_TOLERANCE})
    return out


def _scan_blobs(con: sqlite3.Connection, dims: int) -> tuple[list[str], list[str], list[str]]:
    wrong: list[str] = []
    non_finite: list[str] = []
    off_norm: list[str] = []
    for record_id, blob in con.execute("SELECT record_id, embedding FROM vectors"):
        if not isinstance(blob, bytes) or len(blob) != dims * 4:
            wrong.append(str(record_id))
            continue
        row = np.frombuffer(blob, dtype="<f4")
        if not np.isfinite(row).all():
            non_finite.append(str(record_id))
        elif abs(float(np.linalg.norm(row.astype(np.float64))) - 1.0) > NORM_TOLERANCE:
            off_norm.append(str(record_id))
    return wrong, non_finite, off_norm


def _count_check(out: list[Diagnostic], where: str, declared: Any, actual: int) -> None:
    if declared is None:
        return
    try:
        same = int(declared) == actual
    except (TypeError, ValueError):
        same = False
    if not same:
        out.append(Diagnostic(
            "vector.record_count_mismatch",
            f"{where} says record_count {declared!r} but the database has {actual} records.",
            details={"declared_in": where, "declared": declared, "actual": actual},
        ))


def _finding(
    out: list[Diagnostic], code: str, text: str, ids: list[str],
    severity: Severity = "error", details: dict[str, Any] | None = None,
) -> None:
    if ids:
        out.append(Diagnostic(
            code, f"{len(ids)} {text}.", severity,
            details={"count": len(ids), "record_ids": ids[:SAMPLE], **(details or {})},
        ))
