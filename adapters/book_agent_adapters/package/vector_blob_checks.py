"""Checks of every vector blob in index.sqlite, fast enough for 20,000 x 1,024 in well
under a second: blobs are read in batches, joined, and checked as one numpy array.

A vector must be `dimensions` x 4 bytes (float32, little-endian), all components finite,
and belong to a record. Records without a vector are only a warning: search can still
reach them lexically.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from book_agent.domain.diagnostics import Diagnostic, Severity

BATCH = 2048  # rows per fetch: ~8 MiB of 1,024-dim blobs, constant memory for any size
SAMPLE = 20  # record ids named in a diagnostic's details


def check_vectors(
    con: sqlite3.Connection, dims: int | None, records_ok: bool, has_manifest: bool
) -> list[Diagnostic]:
    """Diagnostics for the vectors table. `dims` from vectors.json (or meta); None if unknown."""
    n_vectors = int(con.execute("SELECT count(*) FROM vectors").fetchone()[0])
    out: list[Diagnostic] = []
    if n_vectors and not has_manifest:
        out.append(Diagnostic(
            "package.vectors_manifest_missing",
            f"index.sqlite has {n_vectors} vectors but the package has no usable vectors.json",
            "error", {"path": "vectors.json", "vectors": n_vectors},
        ))
    if n_vectors:
        out += _scan(con, dims)
    if records_ok:
        out += _orphans(con)
        if n_vectors or has_manifest:
            out += _missing(con)
    return out


def _scan(con: sqlite3.Connection, dims: int | None) -> list[Diagnostic]:
    import numpy as np

    nbytes = dims * 4 if dims else None
    bad_length: list[str] = []
    not_finite: list[str] = []
    n_bad_length = n_not_finite = 0
    cursor = con.execute("SELECT record_id, embedding FROM vectors")
    while rows := cursor.fetchmany(BATCH):
        ids: list[Any] = []
        blobs: list[bytes] = []
        for record_id, blob in rows:
            if nbytes is None and isinstance(blob, bytes) and blob and len(blob) % 4 == 0:
                nbytes = len(blob)  # no declared size: the first plausible blob sets it
            if isinstance(blob, bytes) and len(blob) == nbytes:
                ids.append(record_id)
                blobs.append(blob)
            else:
                n_bad_length += 1
                if len(bad_length) < SAMPLE:
                    bad_length.append(str(record_id))
        if not blobs or nbytes is None:
            continue
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), nbytes // 4)
        bad_rows = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
        n_not_finite += int(bad_rows.size)
        not_finite += [str(ids[i]) for i in bad_rows[: SAMPLE - len(not_finite)]]
    out: list[Diagnostic] = []
    if n_bad_length:
        expected = f"{nbytes} bytes ({nbytes // 4} x float32)" if nbytes else "a float32 vector"
        out.append(Diagnostic(
            "package.vector_length_invalid",
            f"{n_bad_length} vector(s) are not {expected}, e.g. record {bad_length[0]}",
            "error", {"count": n_bad_length, "record_ids": bad_length, "expected_bytes": nbytes,
                      "dimensions": dims},
        ))
    if n_not_finite:
        out.append(Diagnostic(
            "package.vector_not_finite",
            f"{n_not_finite} vector(s) hold NaN or infinite components, e.g. record {not_finite[0]}",
            "error", {"count": n_not_finite, "record_ids": not_finite},
        ))
    return out


def _orphans(con: sqlite3.Connection) -> list[Diagnostic]:
    return _unmatched(con, "vectors", "records", "package.vector_orphan", "vector(s) belong to no record", "error")


def _missing(con: sqlite3.Connection) -> list[Diagnostic]:
    return _unmatched(con, "records", "vectors", "package.vector_missing",
                      "record(s) have no vector (vector search cannot find them)", "warning")


def _unmatched(con: sqlite3.Connection, table: str, other: str, code: str, what: str,
               severity: Severity) -> list[Diagnostic]:
    """Rows of `table` whose record_id has no row in `other` (fixed table names, no input)."""
    where = f"FROM {table} a WHERE NOT EXISTS (SELECT 1 FROM {other} b WHERE b.record_id = a.record_id)"
    count = int(con.execute(f"SELECT count(*) {where}").fetchone()[0])
    if not count:
        return []
    sample = [str(r[0]) for r in con.execute(f"SELECT a.record_id {where} LIMIT {SAMPLE}")]
    return [Diagnostic(code, f"{count} {what}, e.g. {sample[0]!r}", severity, {"count": count, "record_ids": sample})]
