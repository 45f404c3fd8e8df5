"""Whether a database's vectors hold the manifest's `normalized: true` claim, as diagnostics.

PrebuiltVectorStoreAdapter.validate() runs the package validator's database checks
(adapters/package/database_checks.py: schema, counts, blob lengths, NaN/inf, orphans,
records without a vector) and adds this one, which those checks leave out: rows that are
not unit length although vectors.json says `normalized: true` (cosine would then rank them
wrongly) are a warning.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np

from book_agent.domain.diagnostics import Diagnostic

SAMPLE = 5  # ids named per finding; the count is always complete
NORM_TOLERANCE = 1e-3


def check_normalization(con: sqlite3.Connection, manifest: Mapping[str, Any] | None) -> list[Diagnostic]:
    """`vector.not_normalized` (warning) when well-formed rows are off unit length. Raises sqlite3.Error."""
    dims = (manifest or {}).get("dimensions")
    if manifest is None or not isinstance(dims, int) or dims <= 0 or not manifest.get("normalized", True):
        return []
    off_norm = _off_norm(con, dims)
    if not off_norm:
        return []
    return [Diagnostic(
        "vector.not_normalized",
        f"{len(off_norm)} vectors are not unit length although vectors.json says normalized: true.",
        "warning",
        details={"count": len(off_norm), "record_ids": off_norm[:SAMPLE], "tolerance": NORM_TOLERANCE},
    )]


def _off_norm(con: sqlite3.Connection, dims: int) -> list[str]:
    """Ids of rows of the right length, all finite, whose norm is off 1 (others are errors elsewhere)."""
    off_norm: list[str] = []
    for record_id, blob in con.execute("SELECT record_id, embedding FROM vectors"):
        if not isinstance(blob, bytes) or len(blob) != dims * 4:
            continue
        row = np.frombuffer(blob, dtype="<f4")
        if np.isfinite(row).all() and abs(float(np.linalg.norm(row.astype(np.float64))) - 1.0) > NORM_TOLERANCE:
            off_norm.append(str(record_id))
    return off_norm
