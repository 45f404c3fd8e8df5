"""An open approximate index of one model group: faiss for the candidates, the books' own rows
for the scores (adapters/book_agent_adapters/library/local/vectors/faiss_vector_index.py builds and opens it).

A generation is the base index and the segments added since (living_vectors.py), all encoded
with the same trained centroids and quantizer, so their 8-bit distances compare: a query probes
NPROBE lists of each (one OpenMP thread: concurrent queries must not oversubscribe the cores),
and the best max(RESCORE_MIN, OVERFETCH x depth) candidates over all of them (exactly those one
index holding every row would give) are rescored against the float32 rows of the books'
matrices (each book's VectorStore.load(), memory-mapped from its runtime dir; the candidates'
rows are read from the mapped files with pread, so the map's pages never join the resident set:
row_reader.py), scored row by row as the book's exact search scores them (vector_matrix.
row_scores), so a score is exactly, bit for bit, what the book's exact search gives. Only live
books are searched: removed ones (and, for a narrowed search, the books not asked for) are
filtered inside faiss by a bitmap of their rows (each book holds one contiguous range), so every
candidate is one the caller may see.

Segments are read into memory once per process and shared by the readers of every generation
that names them: after a book is added, a reader of the new generation reads only its segment.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import Vector
from book_agent.ports import VectorStore
from book_agent.ports.library import LibraryVectorIndex
from book_agent_adapters.book.vectors.sqlite_vector_store import prepare_query
from book_agent_adapters.book.vectors.vector_matrix import VectorMatrix, row_scores, still_whole
from book_agent_adapters.files.row_reader import RowReader
from book_agent_adapters.library.local.vectors.faiss_index_files import (
    ChainedRowIds,
    RowIds,
    file_state,
    segment_files,
)
from book_agent_adapters.library.local.vectors.faiss_training import PROBES, read_index, unreadable

NPROBE = PROBES  # lists searched per query, unless the pointer says (faiss_training.probes_for)
RESCORE_MIN = 50  # candidates rescored exactly, at least ...
OVERFETCH = 2  # ... and twice the depth asked for
QUERY_THREADS = 1  # per query
SELECTORS_KEPT = 16  # book filters kept ready per index

F32 = npt.NDArray[np.float32]


class FaissGroupIndex(LibraryVectorIndex):
    """An open group index: faiss for candidates, the books' own rows for the scores."""

    def __init__(self, faiss: Any, segments: Sequence[Any], ids: ChainedRowIds, pointer: dict[str, Any],
                 stores: Mapping[str, VectorStore], metric: str, dimensions: int, generation: str) -> None:
        self._faiss = faiss
        self.segments = list(segments)  # the base, then each added segment
        self.starts = np.cumsum([0, *(int(s.ntotal) for s in self.segments)])
        self.ids = ids  # row -> record id
        self.metric = metric
        self.dimensions = dimensions
        self.generation = generation
        self.entries: list[dict[str, Any]] = list(pointer["books"])  # row ranges in row order
        self.book_ids = [str(b["book_id"]) for b in self.entries]
        self.live = [not b.get("removed") for b in self.entries]
        self.books = {b: str(e["stamp"]) for b, e, live in zip(self.book_ids, self.entries, self.live, strict=True)
                      if live}
        order = sorted(range(len(self.book_ids)), key=lambda i: (self.book_ids[i], not self.live[i]))
        self.ranks = np.empty(len(order), dtype=np.int64)  # ties go to book order, as exact search breaks them
        self.ranks[order] = np.arange(len(order))
        self.offsets = np.cumsum([0, *(int(b["rows"]) for b in self.entries)])
        self.rows = int(self.offsets[-1])
        self.nprobe = int(pointer.get("nprobe") or NPROBE)
        self._stores = dict(stores)
        self._matrices: dict[int, F32] = {}
        self._readers: dict[int, RowReader] = {}  # book -> pread of its mapped rows (a matrix in memory: none)
        self._retired: list[RowReader] = []
        self._params: dict[frozenset[str] | None, list[tuple[Any, ...] | None]] = {}
        self._lock = threading.Lock()

    def search(self, query_vector: Vector, depth: int, book_ids: Sequence[str] | None = None
               ) -> list[tuple[str, float]]:
        query = prepare_query(query_vector, self.dimensions, self.metric)
        params = self._search_params(book_ids)
        if depth <= 0 or self.rows == 0 or all(p is None for p in params):
            return []
        k = min(max(RESCORE_MIN, OVERFETCH * int(depth)), self.rows)
        self._faiss.omp_set_num_threads(QUERY_THREADS)
        vector = np.ascontiguousarray(query[None, :], dtype=np.float32)
        near: list[np.ndarray] = []
        found: list[np.ndarray] = []
        for number, (segment, kept) in enumerate(zip(self.segments, params, strict=True)):
            if kept is None:
                continue
            try:
                distances, rows = segment.search(vector, min(k, int(segment.ntotal)), params=kept[0])
            except RuntimeError as exc:
                raise BookAgentError("vector.index_unusable", f"the approximate index could not answer: {exc}",
                                     remediation="search again (the group is searched exactly meanwhile)") from exc
            valid = rows[0] >= 0
            near.append(distances[0][valid])
            found.append(rows[0][valid].astype(np.int64) + int(self.starts[number]))
        if not found:
            return []
        candidates = np.concatenate(found)
        if len(found) > 1:  # the best k over every segment: the codes' inner products compare across them
            candidates = candidates[np.argsort(-np.concatenate(near), kind="stable")[:k]]
        return self._rescore(candidates, query, int(depth))

    def _rescore(self, rows: npt.NDArray[np.int64], query: F32, depth: int) -> list[tuple[str, float]]:
        """Exact scores against each book's own rows; ties go to book order, then reading order
        (the global row order: books hold consecutive ranges). Sorted rows put each book's
        candidates in one slice, scored by one product against its rows, and one lexsort ranks
        them all (no per-candidate Python)."""
        if len(rows) == 0:
            return []
        rows = np.sort(rows)
        owners = np.searchsorted(self.offsets, rows, side="right") - 1
        scores = np.empty(len(rows), dtype=np.float32)
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        for start, end in zip(starts, [*starts[1:], len(rows)], strict=True):
            book = int(owners[start])
            scores[start:end] = row_scores(self._rows_of(book, rows[start:end] - self.offsets[book]), query)
        best = np.lexsort((rows - self.offsets[owners], self.ranks[owners], -scores))[:depth]
        ids = self.ids.many(rows[best])
        return [(f"{self.book_ids[owner]}#{rid}", score)
                for owner, rid, score in zip(owners[best].tolist(), ids, scores[best].tolist(), strict=True)]

    def _rows_of(self, book: int, local: npt.NDArray[np.int64]) -> F32:
        """Some of the book's rows: read from its mapped file (RowReader: the map's pages never
        join the resident set), or taken from its matrix in memory. A short read (the file
        truncated in place) loads the matrix again, as a truncated map does."""
        for _ in range(2):
            matrix = self._matrix(book)
            reader = self._readers.get(book)
            if reader is None:
                return matrix[local]
            got = reader.read(local)
            if got is not None:
                return got
            with self._lock:
                self._matrices.pop(book, None)
        raise _unusable(f"book {self.book_ids[book]}'s vectors keep changing under the index")

    def _matrix(self, book: int) -> F32:
        """The book's float32 rows (mapped, its record ids not read), checked against the index."""
        loaded = self._matrices.get(book)
        if loaded is not None and still_whole(loaded):
            return loaded
        with self._lock:
            loaded = self._matrices.get(book)
            if loaded is None or not still_whole(loaded):  # truncated under us: the store loads it again
                store = self._stores.get(self.book_ids[book])
                if store is None:
                    raise _unusable(f"book {self.book_ids[book]} is not open")
                loaded = book_rows(store, self.dimensions)
                if len(loaded) != int(self.entries[book]["rows"]):
                    raise _unusable(f"book {self.book_ids[book]}'s vectors are not those it was built from")
                self._matrices[book] = loaded
                replaced = self._readers.pop(book, None)
                if replaced is not None:  # another thread may be reading through it: closed with the index
                    self._retired.append(replaced)
                reader = RowReader.of(loaded)
                if reader is not None:
                    self._readers[book] = reader
        return loaded

    def _search_params(self, book_ids: Sequence[str] | None) -> list[tuple[Any, ...] | None]:
        """Per segment: faiss search parameters (nprobe, and a selector of the live books asked
        for, with what it points to), or None when none of its rows is asked for."""
        key: frozenset[str] | None = None
        if book_ids is not None:
            wanted = frozenset(book_ids) & frozenset(self.books)
            key = None if wanted == frozenset(self.books) else wanted
        cached = self._params.get(key)
        if cached is not None:
            return cached
        chosen = np.zeros(self.rows, dtype=bool)
        for i, book_id in enumerate(self.book_ids):
            if self.live[i] and (key is None or book_id in key):
                chosen[self.offsets[i]:self.offsets[i + 1]] = True
        out: list[tuple[Any, ...] | None] = []
        for number in range(len(self.segments)):
            mine = chosen[self.starts[number]:self.starts[number + 1]]
            params = self._faiss.SearchParametersIVF()
            params.nprobe = self.nprobe
            if not mine.any():
                out.append(None)
            elif mine.all():
                out.append((params,))
            else:
                bitmap = np.packbits(mine, bitorder="little")
                selector = self._faiss.IDSelectorBitmap(len(mine), self._faiss.swig_ptr(bitmap))
                params.sel = selector
                out.append((params, selector, bitmap))  # faiss holds pointers: keep what they point to alive
        with self._lock:
            if len(self._params) >= SELECTORS_KEPT:
                self._params.clear()
            self._params[key] = out
        return out

    def close(self) -> None:
        with self._lock:
            self._matrices.clear()
            self._params.clear()
            for reader in [*self._readers.values(), *self._retired]:
                reader.close()
            self._readers.clear()
            self._retired.clear()


_LOADED: dict[str, dict[str, tuple[list[int], Any]]] = {}  # group -> file name -> (its state, the index read)
_LOADED_LOCK = threading.Lock()


def loaded_segments(faiss: Any, folder: Path, group: str, pointer: dict[str, Any], dimensions: int
                    ) -> tuple[list[Any], ChainedRowIds]:
    """The generation's segments (from this process's cache while their files are unchanged,
    else read) and their row ids. Raises `vector.index_unreadable`."""
    segments, ids = [], []
    with _LOADED_LOCK:
        cached = _LOADED.get(group, {})
    kept: dict[str, tuple[list[int], Any]] = {}
    for facts in segment_files(pointer):
        path = folder / facts["index"]["name"]
        try:
            state = file_state(path)
        except FileNotFoundError as exc:
            raise unreadable("its file is missing") from exc
        except OSError as exc:
            raise unreadable(f"its file cannot be read ({exc.strerror})") from exc
        hit = cached.get(path.name)
        index = hit[1] if hit is not None and hit[0] == state else read_index(faiss, path)
        if int(index.ntotal) != int(facts["rows"]) or int(index.d) != dimensions:
            raise unreadable("its size does not match its pointer")
        kept[path.name] = (state, index)
        segments.append(index)
        try:
            ids.append(RowIds(folder / facts["ids"]["name"], int(facts["rows"])))
        except (OSError, ValueError) as exc:
            raise unreadable(f"its ids file is damaged ({exc})") from exc
    with _LOADED_LOCK:
        _LOADED[group] = kept  # what older generations alone named goes with their readers
    return segments, ChainedRowIds(ids)


def book_rows(store: VectorStore, dimensions: int) -> F32:
    """A book's float32 rows, without its record ids where the store can (PrebuiltVectorStoreAdapter.rows)."""
    rows = getattr(store, "rows", None)
    matrix = rows() if callable(rows) else book_matrix(store, dimensions).matrix
    if not isinstance(matrix, np.ndarray) or matrix.ndim != 2 or matrix.shape[1] != dimensions \
            or matrix.dtype != np.float32:
        raise BookAgentError("vector.index_unavailable", "a book's vector store has no float32 matrix to rescore from")
    return matrix


def book_matrix(store: VectorStore, dimensions: int) -> VectorMatrix:
    """The rows a book's vectors are searched by (its store's float32 matrix and ids)."""
    loaded = store.load()
    if not isinstance(loaded, VectorMatrix) or loaded.matrix.ndim != 2 or loaded.matrix.shape[1] != dimensions \
            or loaded.matrix.dtype != np.float32:
        raise BookAgentError("vector.index_unavailable",
                             "a book's vector store has no float32 matrix to build or rescore from")
    return loaded


def _unusable(why: str) -> BookAgentError:
    return BookAgentError("vector.index_unusable", f"the approximate index does not match its books: {why}",
                          remediation="run `book-agent prepare @all` to rebuild it")
