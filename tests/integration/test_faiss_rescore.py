"""The approximate index's exact rescoring (FaissGroupIndex._rescore) against the plain per-book
code it replaced: the same (id, score) list, bit for bit, ties included (book order, then
reading order). No faiss needed: rescoring reads only the books' rows."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent_adapters.storage.faiss_group_index import FaissGroupIndex

DIMS = 8


def reference(index: FaissGroupIndex, rows: npt.NDArray[np.int64], query: np.ndarray, depth: int
              ) -> list[tuple[str, float]]:
    """The per-book loop with a Python sort, as rescoring was first written."""
    owners = np.searchsorted(index.offsets, rows, side="right") - 1
    scored: list[tuple[float, int, int]] = []
    for book in np.unique(owners):
        mine = np.sort(rows[owners == book])
        scores = index._matrices[int(book)][mine - index.offsets[book]] @ query
        scored += [(float(s), int(book), int(r)) for s, r in zip(scores, mine, strict=True)]
    scored.sort(key=lambda item: (-item[0], item[2]))
    return [(f"{index.book_ids[book]}#{index.ids[row]}", score) for score, book, row in scored[:depth]]


def group_index(sizes: list[int], seed: int, levels: int) -> FaissGroupIndex:
    """A FaissGroupIndex over in-memory books (rows quantised to `levels` values: many ties)."""
    rng = np.random.default_rng(seed)
    index = FaissGroupIndex.__new__(FaissGroupIndex)
    index.book_ids = [f"b{i}" for i in range(len(sizes))]
    index.offsets = np.cumsum([0, *sizes])
    index.ranks = np.arange(len(sizes))  # b0..b5: id order is list order
    index.rows = int(index.offsets[-1])
    index.ids = [f"r{row:05d}" for row in range(index.rows)]  # type: ignore[assignment]
    index._matrices = {i: (rng.integers(-levels, levels + 1, size=(n, DIMS)) / levels).astype(np.float32)
                       for i, n in enumerate(sizes)}
    return index


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6), seed=st.integers(0, 2**32 - 1),
       levels=st.sampled_from([1, 2, 1000]), share=st.floats(0.0, 1.0), depth=st.integers(1, 60))
def test_rescoring_equals_the_per_book_loop(sizes, seed, levels, share, depth):
    index = group_index(sizes, seed, levels)
    rng = np.random.default_rng(seed + 1)
    count = int(round(share * index.rows))
    rows = rng.choice(index.rows, size=count, replace=False).astype(np.int64)  # faiss's order: by code distance
    query = (rng.integers(-levels, levels + 1, size=DIMS) / levels).astype(np.float32)
    got = index._rescore(rows, query, depth)
    assert got == reference(index, rows, query, depth)
    assert [type(score) for _, score in got] == [float] * len(got)
