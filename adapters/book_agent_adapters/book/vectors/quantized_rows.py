"""A book's rows as 8-bit codes: an exact top k that reads a quarter of the bytes.

An exact search is one pass over the book's float32 matrix, and that pass is memory-bound: 100k
rows of 384 dimensions are 154 MB a query, ~10 ms on one core, whether the matrix is mapped or
in memory (issue 29). faiss's flat 8-bit scalar quantizer scores the same rows from a quarter of
the bytes (one range over all the book's values, in 256 steps: its decoding is the cheapest, ~2x
faster than the full pass on one core; a range per dimension halves the error but decodes
slower than the full pass gains). Its scores are approximate, but how far each can be from the
exact one is known: every row is within `error` of its decoded codes (measured at build over
every row; the range is trained on every row, so no value is clamped), so by Cauchy-Schwarz
|q.x - q.x'| <= |q| * error (at 100k rows of 384 dimensions, error ~0.014).

A top k is therefore certified: the best WIDE x k rows by code are rescored exactly (the full
pass's own scores: vector_matrix.row_scores), and when the lowest code score taken, plus that
bound and a margin for float rounding, is still below the k-th exact score, no row left out can
reach it (strictly: a tie at the cut-off is never decided by code), so the top k is the full
pass's, ties and order included. Otherwise `top` answers None and the caller makes the full pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent_adapters.book.vectors.vector_matrix import row_scores

F32 = npt.NDArray[np.float32]

WIDE = 4  # rows taken by code per row asked for (a 50-deep search rescores 200: all 300 bench queries certified at 100k)
ROUNDING = 1e-4  # relative margin for float32 sums of 384 terms (at most ~2.3e-5 of |q| |x|)
DECODE_BATCH = 8_192  # rows decoded at a time when measuring the error (two 12 MB temporaries at 384 dims)
QUERY_THREADS = 1  # the one-thread policy of every search (concurrent queries must not oversubscribe)


class QuantizedRows:
    """8-bit codes of one matrix (faiss IndexScalarQuantizer, uniform range, inner product) and their error bound."""

    def __init__(self, faiss: Any, matrix: F32) -> None:
        rows, dims = matrix.shape
        self._faiss = faiss
        self.rows = int(rows)
        self.index = faiss.IndexScalarQuantizer(int(dims), faiss.ScalarQuantizer.QT_8bit_uniform,
                                                faiss.METRIC_INNER_PRODUCT)
        source = np.ascontiguousarray(matrix, dtype=np.float32)
        self.index.train(source)  # on every row: the range covers every value
        self.index.add(source)
        error, norm = 0.0, 0.0
        for start in range(0, self.rows, DECODE_BATCH):
            part = source[start:start + DECODE_BATCH]
            off = part - self.index.reconstruct_n(start, len(part))
            error = max(error, float(np.sqrt(np.einsum("ij,ij->i", off, off).max())))
            norm = max(norm, float(np.sqrt(np.einsum("ij,ij->i", part, part).max())))
        self.error = error  # no row is farther than this from its decoded codes
        self.norm = norm  # nor longer than this

    def top(self, matrix: F32, query: F32, k: int) -> tuple[npt.NDArray[np.int64], F32] | None:
        """The full pass's top k of `matrix` (the rows these codes were made from): row numbers,
        best first (ties by row), and their exact scores; None when the codes cannot certify it."""
        wide = WIDE * k
        if k <= 0 or wide >= self.rows:
            return None  # nearly every row would be rescored: the full pass is as cheap
        self._faiss.omp_set_num_threads(QUERY_THREADS)
        coded, found = self.index.search(np.ascontiguousarray(query[None, :], dtype=np.float32), wide)
        rows = np.sort(found[0].astype(np.int64))  # wide < rows: every slot holds a row
        scores = row_scores(matrix[rows], query)
        kth = float(np.partition(scores, len(scores) - k)[len(scores) - k])
        length = float(np.sqrt(query.dot(query)))
        reach = float(coded[0][-1]) + length * (self.error + ROUNDING * (self.norm + self.error))
        if not reach < kth:  # a row left out could score as well as the k-th
            return None
        best = np.lexsort((rows, -scores))[:k]
        return rows[best], scores[best]
