"""Training and filling the library's IVF-SQ8 index, and how well its training fits rows added later.

Parameters from the scale study (contracts/scale-study.md): `IndexIVFScalarQuantizer`, 8-bit
codes, inner product, ~2*sqrt(N) lists trained by k-means on 64 sampled vectors per list
(seeded, so a rebuild of the same books gives the same index). A book added to a trained index
is encoded with the *trained* (empty) index kept beside it: its rows land in the lists of the
centroids nearest them, which is exactly what a full build would do with those centroids.

Whether the centroids still fit the data is measured by the *residual*: a row's squared
distance to its nearest centroid (what IVF's coarse step cuts off). Rows unlike those trained
on (a new topic, another language) sit far from every centroid, crowd few lists and are found
less well at the same nprobe; living_vectors.py compares their mean residual with the trained
rows' to decide when to retrain.

faiss is imported here only, when an index is built or opened.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.errors import BookAgentError
from book_agent.ports import Progress
from book_agent_adapters.book.vectors.vector_matrix import VectorMatrix

TRAIN_PER_LIST = 64  # k-means training vectors per list
MIN_TRAIN_PER_LIST = 39  # faiss's k-means wants at least this many (small groups get fewer lists)
SEED = 20_240_601  # the training sample (a rebuild of the same books gives the same index)
ADD_BATCH = 65_536  # rows added (and progress reported) at a time
BUILD_THREADS = 2  # the machines this is sized for have 2 cores
RESIDUAL_SAMPLE = 8_192  # rows whose residual is measured, per base or added segment (evenly spaced)

Books = list[tuple[str, VectorMatrix]]


def lists_for(vectors: int) -> int:
    """~2*sqrt(N) lists, fewer when k-means would have too few training vectors per list."""
    return max(1, min(round(2 * math.sqrt(vectors)), vectors // MIN_TRAIN_PER_LIST))


PROBES = 64  # lists a query searches ...
SMALL_PROBES = 128  # ... in an index trained on fewer than SMALL_INDEX vectors
SMALL_INDEX = 150_000


def probes_for(vectors: int, nlist: int) -> int:
    """Lists a query searches, fixed when the index is trained. Below SMALL_INDEX vectors, twice
    as many: at 100k (632 lists, the bench's vectors and the eval sets' real queries) 64 probes
    found .977 of exact search's top 50, 128 .992 (the library's threshold was lowered to 100k
    for that: domain/library.py); larger indexes keep 64 (.976 at 1M, 2000 lists)."""
    return min(nlist, SMALL_PROBES if vectors < SMALL_INDEX else PROBES)


def faiss_module() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise BookAgentError(
            "vector.index_unavailable", f"faiss could not be imported ({exc}): large model groups are searched exactly",
            remediation="pip install 'book-agent[faiss]' (faiss-cpu); until then these groups are searched exactly") from exc
    return faiss


@contextlib.contextmanager
def omp_threads(faiss: Any, threads: int = BUILD_THREADS) -> Iterator[None]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def read_index(faiss: Any, path: Path) -> Any:
    """Read into memory, by faiss where it can open the path, else by Python. Not memory-mapped:
    searching a mapped IVF-SQ8 index took 4.6x as long at 100k vectors and 2x at 1M (its lists
    scanned through page faults and the page cache); the codes in memory cost about one byte per
    dimension per vector (~370 MB at 1M x 384), most of which a mapped index also had resident
    once warm (tools/bench/peers/bench_peers.py measures both)."""
    try:
        return faiss.read_index(str(path))
    except RuntimeError:
        pass
    try:
        return faiss.deserialize_index(np.fromfile(path, dtype=np.uint8))
    except FileNotFoundError as exc:
        raise unreadable("its file is missing") from exc
    except (RuntimeError, OSError, ValueError) as exc:
        raise unreadable(f"faiss cannot read it ({str(exc).strip().splitlines()[0][:200]})") from exc


def trained(faiss: Any, books: Books, nlist: int, dimensions: int) -> tuple[Any, float]:
    """An empty IVF-SQ8 index trained on a seeded sample of the rows, and the sample's mean residual."""
    counts = [len(m.ids) for _, m in books]
    total = sum(counts)
    index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dimensions), dimensions, nlist,
                                          faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    sample = np.random.default_rng(SEED).choice(total, size=min(total, TRAIN_PER_LIST * nlist), replace=False)
    rows = _gather(books, np.cumsum([0, *counts]), np.sort(sample), dimensions)
    index.train(rows)
    return index, mean_residual(index, rows)


def fill(index: Any, books: Books, progress: Progress | None, done: int = 0, total: int | None = None) -> int:
    """Every row of `books` added in order (book by book); returns the rows added."""
    total = sum(len(m.ids) for _, m in books) if total is None else total
    added = 0
    for _, loaded in books:
        for start in range(0, len(loaded.ids), ADD_BATCH):
            chunk = np.ascontiguousarray(loaded.matrix[start:start + ADD_BATCH], dtype=np.float32)
            index.add(chunk)
            added += len(chunk)
            if progress:
                progress(done + added, total)
    return added


def mean_residual(index: Any, rows: npt.NDArray[np.float32]) -> float:
    """The mean squared distance of (up to RESIDUAL_SAMPLE of) `rows` to their nearest centroid."""
    if len(rows) == 0:
        return 0.0
    if len(rows) > RESIDUAL_SAMPLE:
        rows = rows[np.linspace(0, len(rows) - 1, RESIDUAL_SAMPLE).astype(np.int64)]
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    centroids = index.quantizer.reconstruct_n(0, index.nlist)
    similarity, nearest = index.quantizer.search(rows, 1)
    squared = (rows * rows).sum(axis=1) - 2 * similarity[:, 0] + (centroids[nearest[:, 0]] ** 2).sum(axis=1)
    return float(np.maximum(squared, 0.0).mean())


def books_residual(index: Any, books: Books) -> float:
    """The mean residual of the books' rows (each book sampled in proportion to its rows)."""
    total = sum(len(m.ids) for _, m in books)
    if total == 0:
        return 0.0
    parts = []
    for _, loaded in books:
        take = max(1, round(RESIDUAL_SAMPLE * len(loaded.ids) / total))
        parts.append(loaded.matrix[np.linspace(0, len(loaded.ids) - 1, min(take, len(loaded.ids))).astype(np.int64)])
    return mean_residual(index, np.concatenate(parts))


def _gather(books: Books, offsets: npt.NDArray[np.int64], rows: npt.NDArray[np.int64],
            dimensions: int) -> npt.NDArray[np.float32]:
    """The given global rows (sorted), copied out of the books' matrices."""
    out = np.empty((len(rows), dimensions), dtype=np.float32)
    owners = np.searchsorted(offsets, rows, side="right") - 1
    at = 0
    for i, (_, loaded) in enumerate(books):
        local = rows[owners == i] - offsets[i]
        out[at:at + len(local)] = loaded.matrix[local]
        at += len(local)
    return out


def unreadable(why: str) -> BookAgentError:
    return BookAgentError("vector.index_unreadable", f"the library's approximate vector index cannot be read: {why}",
                          remediation="run `book-agent prepare @all` (it is rebuilt when stale or damaged)")


def failed(exc: BaseException) -> BookAgentError:
    return BookAgentError("vector.index_build_failed", f"the library's approximate vector index could not be built: {exc}",
                          remediation="check that the data dir is writable with free space and memory")
