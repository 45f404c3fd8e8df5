"""BM25 split in two halves: a document side stored with each posting, a query side applied at search.

FTS5's `bm25()` scores a record for one term as

    idf(N, n) * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl))

with f the term's (weighted) count in the record, D the record's length, N the records and n
the records holding the term. Only `idf` depends on the whole library's term statistics: the
rest is the record's own, given one number of the library, `avgdl`. So a library that changes
keeps, per posting, the *document weight* `f (k1 + 1) / (f + norm)` computed with an average
length frozen for its generation, and multiplies by the idf of the moment when it searches, from
N and a small table of document frequencies (records and df summed over what is live):

    impact = idf(N, n) * document_weight(f, D, avgdl)     (exactly FTS5's per-term share)

Adding a book then writes its own postings only, removing one subtracts its df; what drifts is
`avgdl`, frozen until a compaction writes every weight again with the library's exact average
(then scores equal a full rebuild's). Any library backend stores these weights: the local impact
index as float32 posting arrays, an engine as sparse vectors (weights as values, idf applied to
the query's terms: a dot product then sums impacts).

Constants are FTS5's (sqlite/ext/fts5/fts5_aux.c): k1 1.2, b 0.75, and a non-positive idf (a
term in over half the records) floored at 1e-6, not 0, so every matching term still counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6

FloatArray = npt.NDArray[np.floating[Any]]


def length_norm(lengths: npt.ArrayLike, average: float) -> FloatArray:
    """The length part of BM25's denominator, per record: k1 * (1 - b + b * D / avgdl) (float64).
    An empty library's average (0) counts as 1, so no division by zero."""
    return K1 * (1 - B + B * np.asarray(lengths, dtype=np.float64) / (average or 1.0))


def document_weights(freqs: npt.ArrayLike, norms: npt.ArrayLike) -> FloatArray:
    """The document side of each posting: f (k1 + 1) / (f + norm) (float64; stored as float32).
    `norms` are `length_norm` of each posting's record, under the generation's frozen average."""
    f = np.asarray(freqs, dtype=np.float64)
    return f * (K1 + 1) / (f + np.asarray(norms, dtype=np.float64))


def frequencies(weights: npt.ArrayLike, norms: npt.ArrayLike) -> FloatArray:
    """`document_weights` inverted: each posting's count from its weight and record's norm (a
    prefix query sums the counts of every term it starts before weighing them once)."""
    w = np.asarray(weights, dtype=np.float64)
    return w * np.asarray(norms, dtype=np.float64) / np.maximum((K1 + 1) - w, 1e-12)


def idf(records: int, df: npt.ArrayLike) -> FloatArray:
    """The query side: FTS5's idf log((N - n + 0.5) / (n + 0.5)), floored at MIN_IDF (float64)."""
    n = np.asarray(df, dtype=np.float64)
    value = np.log((records - n + 0.5) / (n + 0.5))
    return np.where(value > 0, value, MIN_IDF)


def average_length(total_length: float, records: int) -> float:
    """avgdl as frozen into a generation (0 for an empty library)."""
    return float(total_length) / records if records else 0.0
