"""The library's vector channel in Milvus: one collection per model group (model, dimensions).

Each book's rows come from its own VectorStore (the package's vectors, unit rows for cosine,
as its exact search scores them: no re-embedding) and are searched by inner product. The
dense index is an option (`[library.milvus] index_type`, default FLAT, measured in
contracts/beyond-one-node.md): indexes that keep the float32 rows (FLAT, IVF_FLAT, HNSW, DISKANN)
return the exact inner product as the score; a quantized one (IVF_SQ8, IVF_PQ, ...) only picks
candidates, which are then rescored exactly against the books' own rows, as the local faiss
index does. `book_ids` filters in the engine. Generations: ledger.py (a build inserts the rows
of the books added and hides the removed ones, in a new generation; `compact` fills a new
collection in full). Writers are serialised by the data dir's build lock (this machine's
processes) and the writer lease (every machine's, lease.py); `wait=False`: `vector.index_busy` at
once; Milvus indexes each sealed segment itself, so no
drift is kept here (`state().drift` 0).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import VectorIndexState
from book_agent.domain.records import Vector
from book_agent.ports import Progress, VectorStore
from book_agent.ports.library import LibraryVectorIndex, LibraryVectorIndexes
from book_agent_adapters.book.runtime_files import build_lock
from book_agent_adapters.book.vectors.sqlite_vector_store import prepare_query
from book_agent_adapters.library.local.vectors.faiss_group_index import book_matrix
from book_agent_adapters.library.milvus.dense import DenseIndex
from book_agent_adapters.library.milvus.engine import MilvusEngine
from book_agent_adapters.library.milvus.lease import WriterLease
from book_agent_adapters.library.milvus.ledger import Ledger
from book_agent_adapters.library.milvus.records import (
    INSERT_BATCH,
    ChannelSpec,
    Member,
    Pointer,
    build_failed,
    stamp_sha,
)

RESCORE_MIN = 50  # a quantized index's candidates rescored exactly: at least this many ...
OVERFETCH = 2  # ... and twice the depth


def _busy() -> BookAgentError:
    return BookAgentError("vector.index_busy", "another writer is loading the library's vectors into Milvus",
                          remediation="nothing to do: searches serve the generation in place (and search the books "
                                      "it lacks exactly) until the writer is done")


def book_stamps(expected: Mapping[str, str]) -> dict[str, str]:
    """Each book's stamp, from the group stamp's `books` (`id=stamp;...`, domain/library.py),
    with the group's model and metric: a book's rows are reused only while all of these hold."""
    group = f"{expected.get('model')}|{expected.get('dimensions')}|{expected.get('metric')}"
    found: dict[str, str] = {}
    for item in str(expected.get("books") or "").split(";"):
        book_id, sep, stamp = item.partition("=")
        if sep:
            found[book_id] = f"{stamp}|{group}"
    return found


class MilvusLibraryVectors(LibraryVectorIndexes):
    def __init__(self, engine: MilvusEngine, prefix: str, min_vectors: int = 1,
                 dense: DenseIndex | None = None, lock_dir: Path | None = None,
                 lease: WriterLease | None = None) -> None:
        """`lock_dir`: where this machine's writers' build lock lives (data_dir/library; None: this
        process only); `lease`: the writer lease that serialises writers on every machine (lease.py)."""
        self.engine = engine
        self.prefix = prefix
        self.lease = lease or WriterLease(engine, prefix)  # writers on every machine, one at a time
        self.min_vectors = min_vectors
        self.dense = dense or DenseIndex()
        self.lock_dir = lock_dir
        self._lock = threading.Lock()  # one build at a time in this process (the server serialises nothing)

    def _ledger(self, model: str, dimensions: int) -> Ledger:
        dense = self.dense

        def add_field(schema: Any, data_type: Any) -> None:
            schema.add_field("vector", data_type.FLOAT_VECTOR, dim=dimensions)

        def add_index(index: Any) -> None:
            index.add_index("vector", index_type=dense.index_type, metric_type="IP", params=dense.build_params())

        return Ledger(self.engine, self.prefix, ChannelSpec(f"vectors|{model}|{dimensions}", "vec", add_field, add_index))

    def state(self, model: str, dimensions: int, expected: dict[str, str]) -> VectorIndexState:
        ledger = self._ledger(model, dimensions)
        pointer, why = ledger.pointer()
        if pointer is None:
            return VectorIndexState(present=False, fresh=False, vectors=0, reason=why)
        present = VectorIndexState(present=True, fresh=False, vectors=pointer.rows,
                                   generation=f"{pointer.collection}@{pointer.generation}")
        if why:
            return VectorIndexState(present=True, fresh=False, vectors=0, reason=why)
        if not ledger.has_collection(pointer.collection):
            return VectorIndexState(present=True, fresh=False, vectors=0, generation=present.generation,
                                    reason=f"damaged: its collection {pointer.collection} is missing")
        if pointer.stamp_sha != stamp_sha(expected):
            return VectorIndexState(present=True, fresh=False, vectors=pointer.rows, generation=present.generation,
                                    reason="stale: the group's books changed", intact=True)
        return present.__class__(present=True, fresh=True, vectors=pointer.rows, generation=present.generation,
                                 intact=True)

    def build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
              progress: Progress | None, wait: bool = True) -> int:
        """The books added inserted and the removed ones hidden, in a new generation (ledger.py)."""
        return self._write(model, dimensions, expected, stores, progress, wait, full=False)

    def compact(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
                progress: Progress | None, wait: bool = True) -> int:
        """A new collection filled with `stores` in full (what a first build gives)."""
        return self._write(model, dimensions, expected, stores, progress, wait, full=True)

    @contextlib.contextmanager
    def _locked(self, wait: bool) -> Iterator[None]:
        if not self._lock.acquire(blocking=wait):
            raise _busy()
        try:
            if self.lock_dir is None:
                yield
                return
            try:
                self.lock_dir.mkdir(parents=True, exist_ok=True)
                with build_lock(self.lock_dir, wait=wait):
                    yield
            except BookAgentError as exc:
                if exc.code == "lexical.build_busy":
                    raise _busy() from exc
                raise
            except OSError as exc:
                raise BookAgentError("vector.index_build_failed", f"the build lock cannot be made: {exc}",
                                     remediation="the data dir must be writable to load the library into Milvus") \
                    from exc
        finally:
            self._lock.release()

    def _write(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
               progress: Progress | None, wait: bool, full: bool) -> int:
        with self._locked(wait):
            try:
                with self.lease.held(wait, busy_code="vector.index_busy") as lease:
                    current = self.state(model, dimensions, expected)
                    if current.fresh and not full:  # another writer just loaded it
                        return current.vectors
                    stamps = book_stamps(expected)
                    members = [self._member(book_id, stamps.get(book_id, stamp_sha(expected)), stores[book_id],
                                            dimensions) for book_id in sorted(stores)]
                    if sum(m.count for m in members) == 0:
                        raise BookAgentError("vector.index_build_failed", "the model group has no searchable vectors",
                                             remediation="search the group exactly (it has nothing to load into "
                                                         "Milvus)")
                    return self._ledger(model, dimensions).build(members, expected, progress, full=full, lease=lease)
            except BookAgentError as exc:
                if exc.code.startswith("engine."):
                    raise build_failed("vector.index_build_failed", f"the {model} vectors", exc) from exc
                raise

    @staticmethod
    def _member(book_id: str, stamp: str, store: VectorStore, dimensions: int) -> Member:
        matrix = book_matrix(store, dimensions)

        def rows() -> Iterator[list[dict[str, Any]]]:
            for start in range(0, len(matrix.ids), INSERT_BATCH):
                block = matrix.matrix[start:start + INSERT_BATCH]
                yield [{"evidence": f"{book_id}#{rid}", "vector": row}
                       for rid, row in zip(matrix.ids[start:start + INSERT_BATCH], block, strict=True)]
        return Member(book_id, stamp, rows, len(matrix.ids))

    def open(self, model: str, dimensions: int, expected: dict[str, str],
             stores: Mapping[str, VectorStore], in_place: bool = False) -> LibraryVectorIndex:
        ledger = self._ledger(model, dimensions)
        state = self.state(model, dimensions, expected)
        if not state.present or (state.reason or "").startswith(("damaged", "of another format", "unreadable")):
            raise BookAgentError("vector.index_unreadable", f"no Milvus collection to search: {state.reason}",
                                 remediation="run `book-agent prepare @all` to load it")
        if not state.fresh and not in_place:
            raise BookAgentError("vector.index_stale", "the Milvus collection was loaded for other books",
                                 remediation="search again (a registration raced the search), or run "
                                             "`book-agent prepare @all`")
        pointer, _ = ledger.pointer()
        assert pointer is not None
        return MilvusGroupIndex(ledger, pointer, self.dense, stores, str(expected.get("metric") or "cosine"),
                                dimensions, self._held(ledger, pointer))

    @staticmethod
    def _held(ledger: Ledger, pointer: Pointer) -> dict[str, str]:
        """The books `pointer`'s generation shows, with their member stamps (the group's suffix cut)."""
        held: dict[str, str] = {}
        for row in ledger.catalog_members(pointer.collection):
            body = json.loads(row["body"])
            gone = body.get("removed_at") is not None and int(body["removed_at"]) <= pointer.generation
            if int(body["added"]) <= pointer.generation and not gone:
                held[str(body["book_id"])] = str(body["stamp"]).split("|", 1)[0]
        return held


class MilvusGroupIndex(LibraryVectorIndex):
    """One generation of a model group's collection, open. Safe to share between threads."""

    def __init__(self, ledger: Ledger, pointer: Pointer, dense: DenseIndex, stores: Mapping[str, VectorStore],
                 metric: str, dimensions: int, books: Mapping[str, str] | None = None) -> None:
        self.ledger = ledger
        self.pointer = pointer
        self.generation = f"{pointer.collection}@{pointer.generation}"
        self.books = dict(books or {})
        self.dense = dense
        self.metric = metric
        self.dimensions = dimensions
        self._stores = dict(stores)
        self._rows: dict[str, tuple[dict[str, int], np.ndarray]] = {}
        self._lock = threading.Lock()

    def search(self, query_vector: Vector, depth: int, book_ids: Sequence[str] | None = None
               ) -> list[tuple[str, float]]:
        query = prepare_query(query_vector, self.dimensions, self.metric)
        if depth <= 0 or self.pointer.rows == 0 or (book_ids is not None and not book_ids):
            return []
        limit = int(depth) if self.dense.exact_scores else max(RESCORE_MIN, OVERFETCH * int(depth))
        engine = self.ledger.engine
        try:
            found = engine.call("vector search", lambda c: c.search(
                self.pointer.collection, data=[query.astype(np.float32).tolist()], anns_field="vector",
                limit=min(limit, 16384), filter=self.ledger.visible(self.pointer, book_ids),
                output_fields=["evidence"], search_params={"metric_type": "IP",
                                                           "params": self.dense.search_params(limit)},
                consistency_level="Strong", timeout=engine.settings.timeout_s))
        except BookAgentError as exc:
            if exc.code == "engine.collection_missing":
                raise BookAgentError("vector.index_unreadable", exc.message, details=exc.details,
                                     remediation="run `book-agent prepare @all` to load it again") from exc
            raise
        hits = [(str(hit["entity"]["evidence"]), float(hit["distance"])) for hit in found[0]]
        if not self.dense.exact_scores:
            hits = self._rescored([key for key, _ in hits], query, int(depth))
        hits.sort(key=lambda pair: -pair[1])  # stable: the engine's order breaks ties
        return hits[:depth]

    def _rescored(self, keys: list[str], query: np.ndarray, depth: int) -> list[tuple[str, float]]:
        """Exact scores against each book's own rows (a quantized index's codes only chose them)."""
        scored: list[tuple[str, float]] = []
        for key in keys:
            book_id, _, record_id = key.partition("#")
            index, matrix = self._book_rows(book_id)
            row = index.get(record_id)
            if row is None:
                raise BookAgentError("vector.index_unusable", f"{key} is not among its book's vectors",
                                     remediation="run `book-agent prepare @all` to reload the group")
            scored.append((key, float(matrix[row] @ query)))
        return scored

    def _book_rows(self, book_id: str) -> tuple[dict[str, int], np.ndarray]:
        with self._lock:
            cached = self._rows.get(book_id)
            if cached is None:
                store = self._stores.get(book_id)
                if store is None:
                    raise BookAgentError("vector.index_unusable", f"book {book_id} is not open",
                                         remediation="search again")
                matrix = book_matrix(store, self.dimensions)
                cached = ({rid: i for i, rid in enumerate(matrix.ids)}, matrix.matrix)
                self._rows[book_id] = cached
        return cached

    def close(self) -> None:
        with self._lock:
            self._rows.clear()
