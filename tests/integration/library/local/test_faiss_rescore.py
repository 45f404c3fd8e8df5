"""The approximate index's exact rescoring (FaissGroupIndex._rescore) against the plain per-book
code it replaced: the same (id, score) list, bit for bit, ties included (book order, then
reading order); the rows read from mapped files with pread as from memory, leaving no page of
the map resident, and a file truncated under the index loaded again. No faiss needed:
rescoring reads only the books' rows."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent_adapters.book.vectors.vector_matrix import row_scores
from book_agent_adapters.library.local.vectors.faiss_group_index import FaissGroupIndex

DIMS = 8


def reference(index: FaissGroupIndex, rows: npt.NDArray[np.int64], query: np.ndarray, depth: int
              ) -> list[tuple[str, float]]:
    """The per-book loop with a Python sort, as rescoring was first written."""
    owners = np.searchsorted(index.offsets, rows, side="right") - 1
    scored: list[tuple[float, int, int]] = []
    for book in np.unique(owners):
        mine = np.sort(rows[owners == book])
        scores = row_scores(index._matrices[int(book)][mine - index.offsets[book]], query)
        scored += [(float(s), int(book), int(r)) for s, r in zip(scores, mine, strict=True)]
    scored.sort(key=lambda item: (-item[0], item[2]))
    return [(f"{index.book_ids[book]}#{index.ids[row]}", score) for score, book, row in scored[:depth]]


class ListIds(list[str]):
    """Row ids in memory, read as ChainedRowIds reads its files (tests/integration/library/local/test_row_ids.py)."""

    def many(self, rows: npt.NDArray[np.int64]) -> list[str]:
        return [self[int(row)] for row in rows]


def group_index(sizes: list[int], seed: int, levels: int) -> FaissGroupIndex:
    """A FaissGroupIndex over in-memory books (rows quantised to `levels` values: many ties)."""
    rng = np.random.default_rng(seed)
    index = FaissGroupIndex.__new__(FaissGroupIndex)
    index.book_ids = [f"b{i}" for i in range(len(sizes))]
    index.offsets = np.cumsum([0, *sizes])
    index.ranks = np.arange(len(sizes))  # b0..b5: id order is list order
    index.rows = int(index.offsets[-1])
    index.ids = ListIds(f"r{row:05d}" for row in range(index.rows))  # type: ignore[assignment]
    index._matrices = {i: (rng.integers(-levels, levels + 1, size=(n, DIMS)) / levels).astype(np.float32)
                       for i, n in enumerate(sizes)}
    index._readers, index._retired, index._lock = {}, [], threading.Lock()
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


# -- rows read from the mapped files with pread (row_reader.py) ----------------------------------

class MappedStore:
    """A book's store as the sidecar gives it: its rows mapped from a file (in memory once the
    file is found truncated, as the real store then loads them from SQLite)."""

    def __init__(self, path: Path, rows: np.ndarray) -> None:
        self.path, self.copy = path, rows.copy()

    def rows(self) -> np.ndarray:
        if self.path.stat().st_size < self.copy.nbytes:
            return self.copy
        mapped = np.load(self.path, mmap_mode="r", allow_pickle=False)
        mapped.book_agent_inode = os.stat(self.path).st_ino
        return np.asarray(mapped)


def mapped_index(tmp_path: Path, sizes: list[int], seed: int) -> tuple[FaissGroupIndex, list[MappedStore]]:
    memory = group_index(sizes, seed, 1000)
    index = FaissGroupIndex.__new__(FaissGroupIndex)
    vars(index).update({k: v for k, v in vars(memory).items() if k != "_matrices"})
    stores = []
    for i, book_id in enumerate(index.book_ids):
        np.save(tmp_path / f"{book_id}.npy", memory._matrices[i])
        stores.append(MappedStore(tmp_path / f"{book_id}.npy", memory._matrices[i]))
    index._stores = dict(zip(index.book_ids, stores, strict=True))
    index.entries = [{"book_id": b, "rows": n} for b, n in zip(index.book_ids, sizes, strict=True)]
    index.dimensions = DIMS
    index._matrices, index._params = {}, {}
    return index, stores


def test_rows_read_with_pread_score_as_the_matrix_in_memory(tmp_path: Path) -> None:
    sizes = [3000, 1, 2500]
    index, _ = mapped_index(tmp_path, sizes, seed=5)
    memory = group_index(sizes, 5, 1000)
    rng = np.random.default_rng(6)
    for _ in range(20):
        rows = np.r_[3000, rng.choice(np.r_[0:3000, 3001:index.rows], size=99, replace=False)].astype(np.int64)
        query = rng.standard_normal(DIMS).astype(np.float32)
        assert index._rescore(rows, query, 10) == memory._rescore(rows, query, 10)
    assert sorted(index._readers) == [0, 1, 2]  # every book's rows were read from its file
    index.close()


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="resident pages per mapping: Linux only")
def test_rescoring_leaves_no_page_of_the_mapped_rows_resident(tmp_path: Path) -> None:
    index, _ = mapped_index(tmp_path, [40_000], seed=7)  # 1.3 MB of rows: 300+ pages
    rng = np.random.default_rng(8)
    for _ in range(50):
        index._rescore(rng.choice(index.rows, size=100, replace=False).astype(np.int64),
                       rng.standard_normal(DIMS).astype(np.float32), 10)
    assert index._readers and _resident_kb(tmp_path / "b0.npy") == 0
    index.close()


def _resident_kb(path: Path) -> int:
    """Resident kB of this process's mappings of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


def test_a_file_truncated_under_the_index_is_loaded_again(tmp_path: Path) -> None:
    index, stores = mapped_index(tmp_path, [500, 400], seed=9)
    memory = group_index([500, 400], 9, 1000)
    rows, query = np.arange(0, 900, 7, dtype=np.int64), np.ones(DIMS, dtype=np.float32)
    assert index._rescore(rows, query, 10) == memory._rescore(rows, query, 10)
    with open(stores[1].path, "r+b") as handle:
        handle.truncate(1000)  # a pread past it is short, never a fault
    assert index._rescore(rows, query, 10) == memory._rescore(rows, query, 10)
    assert 1 not in index._readers and 0 in index._readers  # book 1 now in memory
    index.close()
