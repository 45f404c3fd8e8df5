"""The book's background sample for the vector channel (book_agent/domain/search/vector_background.py).

Rows of the searched matrix, evenly spaced in reading order: a view chosen once per matrix (no
file, no scan of the book), scored against each query with one small matrix product.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from book_agent.domain.search.vector_background import SAMPLE_ROWS, Background

F32 = npt.NDArray[np.float32]


def sample_rows(rows: int, size: int = SAMPLE_ROWS) -> npt.NDArray[np.intp]:
    """Row indices of the background sample: every row up to `size`, else `size` evenly spaced
    (deterministic: the same book gives the same background in every process)."""
    if rows <= size:
        return np.arange(rows, dtype=np.intp)
    return np.unique(np.linspace(0, rows - 1, num=size).round().astype(np.intp))


def background_sample(matrix: F32, size: int = SAMPLE_ROWS) -> F32:
    """A copy of the sample's rows (a memory-mapped matrix is not touched again per query)."""
    return np.ascontiguousarray(matrix[sample_rows(matrix.shape[0], size)], dtype=np.float32)


def query_background(sample: F32, query: F32, records: int) -> Background | None:
    """The background of one query from the sample's rows (scaled as the search scores them).
    None when it cannot be measured: fewer than 2 rows, non-finite, or every row scoring alike."""
    if sample.shape[0] < 2 or sample.shape[1] != query.shape[0]:
        return None
    scores = (sample @ query).astype(np.float64)
    count = scores.shape[0]
    mean = float(scores.sum()) / count
    variance = float(scores.dot(scores)) / count - mean * mean  # one pass (numpy's std costs ~30x more)
    if not (math.isfinite(mean) and math.isfinite(variance) and variance > 1e-18):
        return None
    return Background(mean, math.sqrt(variance), max(int(records), 1))
