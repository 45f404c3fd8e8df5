"""The library's approximate vector index: faiss IVF-SQ8 over one model group, rescored exactly.

One index per model group (books sharing a model and dimensions) holding `min_vectors`
vectors or more (domain/library.py, APPROXIMATE_MIN_VECTORS). Parameters from the scale study
(contracts/scale-study.md): `IndexIVFScalarQuantizer`, 8-bit codes, inner product, ~2*sqrt(N)
lists trained by k-means on 64 sampled vectors per list (seeded); searching and exact
rescoring: faiss_group_index.py.

Files, in data_dir/library/vectors/ (derived data, never in a package; faiss_index_files.py):

    <group>.json                the pointer: stamp, the rows of each book in index order, and
                                the generation's files with their size, hash and state
    <group>-<generation>.faiss  the index (read into memory by readers)
    <group>-<generation>.ids    row -> record id (memory-mapped)

A rebuild writes a new generation under the library's build lock and then replaces the
pointer in one rename: a reader sees the old index or the new one, never half of one. Old
generations are then deleted (a reader that opened one keeps it in memory until it closes). Row r of the
index is row r - offset[i] of book i (the books in id order, each holding its matrix's rows in
order); the books' matrices are pinned by the stamp's database hashes, and each book's row
count is checked when its matrix is first used.

faiss is imported here only, when an index is built or opened.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import APPROXIMATE_MIN_VECTORS, VectorIndexState
from book_agent.ports import Progress, VectorStore
from book_agent.ports.library import LibraryVectorIndex, LibraryVectorIndexes
from book_agent_adapters.storage.atomic_write import write_atomic
from book_agent_adapters.storage.faiss_group_index import NPROBE, FaissGroupIndex, book_matrix
from book_agent_adapters.storage.faiss_index_files import (
    FORMAT,
    RowIds,
    file_facts,
    intact,
    read_pointer,
    write_row_ids,
)
from book_agent_adapters.storage.runtime_files import build_lock
from book_agent_adapters.storage.vector_matrix import VectorMatrix

FOLDER = "vectors"
TEMP_PREFIX = ".vectors-build-"  # written only under the build lock: any found there is a dead build's
TRAIN_PER_LIST = 64  # k-means training vectors per list
MIN_TRAIN_PER_LIST = 39  # faiss's k-means wants at least this many (small groups get fewer lists)
SEED = 20_240_601  # the training sample (a rebuild of the same books gives the same index)
ADD_BATCH = 65_536  # rows added (and progress reported) at a time
BUILD_THREADS = 2  # the machines this is sized for have 2 cores


class FaissLibraryVectors(LibraryVectorIndexes):
    def __init__(self, library_dir: Path, min_vectors: int = APPROXIMATE_MIN_VECTORS) -> None:
        """`library_dir`: data_dir/library (its build lock is the library's); `min_vectors`:
        groups below it are searched exactly (tests lower it)."""
        self.library_dir = Path(library_dir)
        self.folder = self.library_dir / FOLDER
        self.min_vectors = min_vectors

    # -- state --------------------------------------------------------------------------
    def state(self, model: str, dimensions: int, expected: dict[str, str]) -> VectorIndexState:
        pointer, reason = read_pointer(self._pointer_path(model, dimensions))
        if pointer is None:
            return VectorIndexState(present=False, fresh=False, vectors=0, reason=reason)
        present = VectorIndexState(present=True, fresh=False, vectors=int(pointer.get("vectors") or 0),
                                   generation=str(pointer["files"]["index"]["name"]).removesuffix(".faiss")[-12:])
        if any(pointer["stamp"].get(k) != v for k, v in expected.items()):
            return replace(present, reason="stale: the group's books changed")
        sound, why = intact(self.folder, pointer)
        return replace(present, fresh=sound, reason=None if sound else why)

    # -- build --------------------------------------------------------------------------
    def build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
              progress: Progress | None) -> int:
        """Rebuild under the library's build lock (another process may have just done it)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _failed(exc) from exc
        with build_lock(self.library_dir):
            current = self.state(model, dimensions, expected)
            if current.fresh:
                return current.vectors
            self._sweep()
            return self._build(model, dimensions, expected, stores, progress)

    def _build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
               progress: Progress | None) -> int:
        faiss = _faiss()
        books = [(book_id, book_matrix(stores[book_id], dimensions)) for book_id in sorted(stores)]
        counts = [len(m.ids) for _, m in books]
        total = sum(counts)
        if total == 0:
            raise BookAgentError("vector.index_build_failed", "the model group has no searchable vectors",
                                 remediation="search the group exactly (it is, below the index's threshold)")
        nlist = lists_for(total)
        started = time.perf_counter()
        try:
            with _omp_threads(faiss, BUILD_THREADS):
                index = _trained_and_filled(faiss, books, nlist, dimensions, progress)
            build_s = time.perf_counter() - started
            generation = f"{group_key(model, dimensions)}-{secrets.token_hex(6)}"
            files = self._write_files(faiss, index, [i for _, m in books for i in m.ids], generation)
            pointer = {
                "format": FORMAT, "stamp": dict(expected), "model": model, "dimensions": dimensions,
                "kind": "IVF-SQ8", "nlist": nlist, "nprobe": min(NPROBE, nlist), "vectors": total,
                "books": [{"book_id": book_id, "rows": len(m.ids)} for book_id, m in books],
                "files": files, "build_s": round(build_s, 3),
            }
            write_atomic(self._pointer_path(model, dimensions), json.dumps(pointer, indent=1).encode("utf-8"),
                         prefix=TEMP_PREFIX)
        except (RuntimeError, MemoryError, OSError) as exc:
            self._drop_old_generations(model, dimensions, keep=None)  # no pointer names the new one
            raise _failed(exc) from exc
        self._drop_old_generations(model, dimensions, keep=generation)
        return total

    def _write_files(self, faiss: Any, index: Any, ids: list[str], generation: str) -> dict[str, Any]:
        """The index (serialised by faiss, written by Python: faiss's own file I/O cannot open
        every path Windows can, e.g. under a non-ASCII user name) and its row ids."""
        data = faiss.serialize_index(index)
        index_path, ids_path = self.folder / f"{generation}.faiss", self.folder / f"{generation}.ids"
        write_atomic(index_path, lambda handle: handle.write(memoryview(data)), prefix=TEMP_PREFIX, suffix="")
        write_atomic(ids_path, lambda handle: write_row_ids(handle, ids), prefix=TEMP_PREFIX, suffix="")
        return {"index": file_facts(index_path), "ids": file_facts(ids_path)}

    def _sweep(self) -> None:
        """Temp files of a build that died (only builds, under the lock, write them)."""
        for entry in self.folder.glob(f"{TEMP_PREFIX}*"):
            with contextlib.suppress(OSError):
                entry.unlink()

    def _drop_old_generations(self, model: str, dimensions: int, keep: str | None) -> None:
        """Every generation's files but `keep`'s (None: but the one the pointer names)."""
        if keep is None:
            current, _ = read_pointer(self._pointer_path(model, dimensions))
            keep = current["files"]["index"]["name"].removesuffix(".faiss") if current else ""
        generation = re.compile(re.escape(group_key(model, dimensions)) + r"-[0-9a-f]{12}")
        for old in self.folder.iterdir():
            if old.suffix in (".faiss", ".ids") and generation.fullmatch(old.stem) and old.stem != keep:
                with contextlib.suppress(OSError):  # Windows: still mapped by a reader; the next build retries
                    old.unlink()

    # -- open ---------------------------------------------------------------------------
    def open(self, model: str, dimensions: int, expected: dict[str, str],
             stores: Mapping[str, VectorStore]) -> LibraryVectorIndex:
        faiss = _faiss()
        path = self._pointer_path(model, dimensions)
        for attempt in range(2):  # a rebuild may replace the generation between pointer and file
            pointer, reason = read_pointer(path)
            if pointer is None:
                raise _unreadable(f"its pointer is {reason}")
            if any(pointer["stamp"].get(k) != v for k, v in expected.items()):
                raise BookAgentError("vector.index_stale", "the approximate index was built for other books",
                                     remediation="search again: the index is rebuilt when stale")
            sound, why = intact(self.folder, pointer)
            if not sound:
                if why == "missing" and attempt == 0:
                    continue
                raise _unreadable(why)
            try:
                index = _read_index(faiss, self.folder / pointer["files"]["index"]["name"])
                if int(index.ntotal) != int(pointer["vectors"]) or int(index.d) != dimensions:
                    raise _unreadable("its size does not match its pointer")
                ids = _row_ids(self.folder / pointer["files"]["ids"]["name"], int(pointer["vectors"]))
            except BookAgentError as exc:
                if isinstance(exc.__cause__, FileNotFoundError) and attempt == 0:
                    continue  # a rebuild dropped this generation after its pointer was read: read the new one
                self._discard(path, pointer["files"]["index"]["name"])  # the next state() asks for a rebuild
                raise
            return FaissGroupIndex(faiss, index, ids, pointer, stores, expected.get("metric", "cosine"), dimensions)
        raise _unreadable("it was replaced while being opened")

    def _discard(self, path: Path, index_file: str) -> None:
        """Forget an index faiss cannot read (its pointer goes, unless a rebuild replaced it)."""
        with build_lock(self.library_dir):
            current, _ = read_pointer(path)
            if current is not None and current["files"]["index"]["name"] == index_file:
                with contextlib.suppress(OSError):
                    path.unlink()

    def _pointer_path(self, model: str, dimensions: int) -> Path:
        return self.folder / f"{group_key(model, dimensions)}.json"


def lists_for(vectors: int) -> int:
    """~2*sqrt(N) lists, fewer when k-means would have too few training vectors per list."""
    return max(1, min(round(2 * math.sqrt(vectors)), vectors // MIN_TRAIN_PER_LIST))


def group_key(model: str, dimensions: int) -> str:
    """A file name for a model group: readable, and unique by a hash of model and dimensions."""
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", model).strip("-.")[:48] or "model"
    digest = hashlib.sha256(f"{model}\0{dimensions}".encode()).hexdigest()[:10]
    return f"{slug}-{dimensions}d-{digest}"


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise BookAgentError(
            "vector.index_unavailable", f"faiss could not be imported ({exc}): large model groups are searched exactly",
            remediation="pip install 'book-agent[faiss]' (faiss-cpu); until then these groups are searched exactly") from exc
    return faiss


@contextlib.contextmanager
def _omp_threads(faiss: Any, threads: int) -> Iterator[None]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _read_index(faiss: Any, path: Path) -> Any:
    """Read into memory, by faiss where it can open the path, else by Python. Not memory-mapped:
    searching a mapped IVF-SQ8 index took 4.6x as long at 100k vectors and 2x at 1M (its lists
    scanned through page faults and the page cache); the codes in memory cost about one byte per
    dimension per vector (~370 MB at 1M x 384), most of which a mapped index also had resident
    once warm (tools/bench_peers.py measures both)."""
    try:
        return faiss.read_index(str(path))
    except RuntimeError:
        pass
    try:
        return faiss.deserialize_index(np.fromfile(path, dtype=np.uint8))
    except (RuntimeError, OSError, ValueError) as exc:
        raise _unreadable(f"faiss cannot read it ({str(exc).strip().splitlines()[0][:200]})") from exc


def _row_ids(path: Path, rows: int) -> RowIds:
    try:
        return RowIds(path, rows)
    except (OSError, ValueError) as exc:
        raise _unreadable(f"its ids file is damaged ({exc})") from exc


def _trained_and_filled(faiss: Any, books: list[tuple[str, VectorMatrix]], nlist: int, dimensions: int,
                        progress: Progress | None) -> Any:
    """IVF-SQ8 trained on a seeded sample of the rows, then every row added in order."""
    counts = [len(m.ids) for _, m in books]
    total = sum(counts)
    index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dimensions), dimensions, nlist,
                                          faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    if progress:
        progress(0, total)
    sample = np.random.default_rng(SEED).choice(total, size=min(total, TRAIN_PER_LIST * nlist), replace=False)
    index.train(_gather(books, np.cumsum([0, *counts]), np.sort(sample), dimensions))
    done = 0
    for _, loaded in books:
        for start in range(0, len(loaded.ids), ADD_BATCH):
            chunk = np.ascontiguousarray(loaded.matrix[start:start + ADD_BATCH], dtype=np.float32)
            index.add(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return index


def _gather(books: list[tuple[str, VectorMatrix]], offsets: npt.NDArray[np.int64], rows: npt.NDArray[np.int64],
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


def _unreadable(why: str) -> BookAgentError:
    return BookAgentError("vector.index_unreadable", f"the library's approximate vector index cannot be read: {why}",
                          remediation="run `book-agent prepare @all` (it is rebuilt when stale or damaged)")


def _failed(exc: BaseException) -> BookAgentError:
    return BookAgentError("vector.index_build_failed", f"the library's approximate vector index could not be built: {exc}",
                          remediation="check that the data dir is writable with free space and memory")
