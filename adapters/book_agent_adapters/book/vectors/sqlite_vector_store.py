"""PrebuiltVectorStoreAdapter: the package's records and prebuilt vectors (the VectorStore port).

The SQLite file is opened read-only and immutable (no -wal/-shm/-journal appears, not a
byte of the package changes). Search is exact: one float32 matrix per database file and
process (see vector_matrix.py), each row's score and a partition for the top k. A large
book's top k comes from its 8-bit codes, certified exact (quantized_rows.py), once they are made
in the background from its second search; a one-shot query makes the full pass.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from book_agent.domain.book.runtime_states import RecordPlace, StoreInspection
from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.errors import BookAgentError
from book_agent.domain.providers import METRICS
from book_agent.domain.records import Record, Vector, VectorHit
from book_agent.domain.search.vector_background import Background
from book_agent.ports import VectorStore
from book_agent_adapters.book.vectors import vector_matrix
from book_agent_adapters.book.vectors.quantized_rows import QuantizedRows
from book_agent_adapters.book.vectors.sqlite_records import COLUMNS, fetch_records, record_from_row
from book_agent_adapters.book.vectors.vector_background import background_sample, query_background
from book_agent_adapters.book.vectors.vector_normalization import check_normalization
from book_agent_adapters.files.sqlite_readonly import connect_readonly

QUANTIZED_FROM_ROWS = 16_384  # below this the full pass costs ~1 ms at most: no codes (they cost 1 byte a value)

if TYPE_CHECKING:
    from book_agent_adapters.book.made_in_background import MadeInBackground

_FIX_DB = "Run `book-agent inspect` on the package; its index.sqlite is damaged or not a package database."


class PrebuiltVectorStoreAdapter(VectorStore):
    """Read-only access to index.sqlite. `manifest` is vectors.json (None: records only)."""

    def __init__(
        self,
        database_path: Path | str,
        manifest: Mapping[str, Any] | None,
        *,
        sidecar_dir: Path | str | None = None,
        database_sha256: str | None = None,
        book_id: str | None = None,
    ) -> None:
        """`sidecar_dir`: a runtime dir (never the package) for the memory-mapped matrix;
        `database_sha256`: the manifest's hash of index.sqlite, pinned into the sidecar stamp;
        `book_id`: the package's, compared with the database's meta by validate()."""
        self.database_path = Path(database_path)
        self.manifest = dict(manifest) if manifest is not None else None
        self.sidecar_dir = Path(sidecar_dir) if sidecar_dir is not None else None
        self.database_sha256 = database_sha256
        self.book_id = book_id
        self._con: sqlite3.Connection | None = None
        self._lock = threading.RLock()  # one connection, shared by MCP worker threads
        self._matrix: vector_matrix.VectorMatrix | None = None
        self._coded: vector_matrix.VectorMatrix | None = None  # the matrix searched once here ...
        self._codes: MadeInBackground[QuantizedRows] | None = None  # ... its codes, from its second search
        self._sampled: vector_matrix.VectorMatrix | None = None  # the matrix sampled for the background ...
        self._sample: vector_matrix.F32 | None = None  # ... and its sample's rows
        self.metric = str((self.manifest or {}).get("metric") or "cosine")
        dims = (self.manifest or {}).get("dimensions")
        self.dimensions = dims if isinstance(dims, int) and not isinstance(dims, bool) else None

    # -- SQLite -------------------------------------------------------------------------
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                if self._con is None:
                    self._con = connect_readonly(self.database_path, check_same_thread=False)
                return self._con.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise BookAgentError(
                    "vector.database_unreadable", f"cannot read {self.database_path}: {exc}",
                    details={"path": str(self.database_path)}, remediation=_FIX_DB,
                ) from exc

    # -- the port -----------------------------------------------------------------------
    def get_record(self, record_id: str) -> Record:
        rows = self._query(f"SELECT {COLUMNS} FROM records WHERE record_id = ?", (record_id,))
        if not rows:
            raise BookAgentError(
                "record.not_found", f"no record {record_id!r} in this book",
                details={"record_id": record_id},
                remediation="Use a record_id taken from a search hit of this book.",
            )
        record = record_from_row(rows[0])
        blob = self._query("SELECT embedding FROM vectors WHERE record_id = ?", (record_id,))
        if blob and self.dimensions and len(blob[0][0]) == self.dimensions * 4:
            record.vector = np.frombuffer(blob[0][0], dtype="<f4").astype(np.float32)
        return record

    def get_records(self, record_ids: Sequence[str]) -> dict[str, Record]:
        """The records that exist among record_ids (no vectors), keyed by id."""
        return fetch_records(self._query, record_ids)

    def iter_records(self) -> Iterator[Record]:
        """Every record in reading order, without vectors, fetched in pages of 500."""
        last = None
        while True:
            where, params = ("WHERE seq > ?", (last,)) if last is not None else ("", ())
            rows = self._query(f"SELECT {COLUMNS} FROM records {where} ORDER BY seq LIMIT 500", params)
            for row in rows:
                yield record_from_row(row)
            if len(rows) < 500:
                return
            last = rows[-1][1]

    def get_source_metadata(self, record_id: str) -> RecordPlace:
        """{record_id, seq, headings, markdown_span, source}: where the record sits in the book."""
        record = self.get_record(record_id)
        return cast(RecordPlace, {k: v for k, v in record.to_dict().items() if k != "text"})

    def search(self, query_vector: Vector | Sequence[float], top_k: int) -> list[VectorHit]:
        """Exact top-k by the manifest's metric, best first; ties go to reading order."""
        ranked = self.search_ids(query_vector, top_k)
        records = self.get_records([record_id for record_id, _ in ranked])
        return [VectorHit(records[record_id], score) for record_id, score in ranked if record_id in records]

    def search_ids(self, query_vector: Vector | Sequence[float], top_k: int) -> list[tuple[str, float]]:
        """As search, ids and scores only: no record is read (a search fetches only the hits it shows)."""
        loaded = self.load()
        query = self._prepare_query(query_vector)
        if top_k <= 0 or not loaded.ids:
            return []
        k = min(int(top_k), len(loaded.ids))
        codes = self._codes_of(loaded)
        certified = codes.top(loaded.matrix, query, k) if codes is not None else None
        if certified is not None:
            order, best = certified
        else:
            scores = vector_matrix.row_scores(loaded.matrix, query)
            if k < len(loaded.ids):
                # the k-th best score may be tied: take every row at least that good, then sort
                # (array methods, not numpy's module functions: their wrappers cost a search more)
                kth = scores.copy()
                kth.partition(len(scores) - k)
                candidates = (scores >= kth[len(scores) - k]).nonzero()[0]
            else:
                candidates = np.arange(len(loaded.ids))
            order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
            best = scores[order]
        # tolist: Python floats at once, the values float() gives one by one
        return list(zip(map(loaded.ids.__getitem__, order.tolist()), best.tolist(), strict=True))

    def background(self, query_vector: Vector | Sequence[float]) -> Background | None:
        """The query's scores against an evenly spaced sample of the book's rows (vector_background.py):
        the sample is taken once per loaded matrix, then each query costs one small product."""
        loaded = self.load()
        query = self._prepare_query(query_vector)
        with self._lock:
            sample = self._sample
            if self._sampled is not loaded or sample is None:
                sample = background_sample(loaded.matrix)
                self._sampled, self._sample = loaded, sample
        return query_background(sample, query, len(loaded.ids))

    def _codes_of(self, loaded: vector_matrix.VectorMatrix) -> QuantizedRows | None:
        """The matrix's 8-bit codes once they are made. Its second search here starts making them
        in the background (made_in_background.py; ~0.2 s at 100k rows, which no search waits
        for), so a one-shot query never pays for them, nor for importing faiss; they are made
        again for a matrix loaded again (its file changed). None for a small matrix, on its first
        searches, or without faiss: the full pass then."""
        if len(loaded.ids) < QUANTIZED_FROM_ROWS:
            return None
        with self._lock:
            if self._coded is not loaded:  # its first search here: the full pass
                self._coded, self._codes = loaded, None
                return None
            if self._codes is None:
                from book_agent_adapters.book.made_in_background import MadeInBackground

                matrix = loaded.matrix
                self._codes = MadeInBackground("book-agent-codes", lambda: _quantized(matrix))
            codes = self._codes
        return codes.value()

    def _prepare_query(self, query_vector: Vector | Sequence[float]) -> Vector:
        return prepare_query(query_vector, self.dimensions, self.metric)

    def load(self) -> vector_matrix.VectorMatrix:
        """The matrix (loaded on first use, then shared by the whole process; loaded again when
        its sidecar file was truncated under it: vector_sidecar.still_whole)."""
        if self._matrix is None or not vector_matrix.still_whole(self._matrix.matrix):
            dims, normalize = self._loadable()
            self._matrix = vector_matrix.load_matrix(
                self.database_path, dims, normalize, self.sidecar_dir, self.database_sha256)
        return self._matrix

    def rows(self) -> vector_matrix.F32:
        """The matrix's rows alone, in load()'s order, without reading its record ids when the
        sidecar is sound (for a caller that keeps its own row -> id map)."""
        if self._matrix is not None and vector_matrix.still_whole(self._matrix.matrix):
            return self._matrix.matrix
        dims, normalize = self._loadable()
        return vector_matrix.load_rows(self.database_path, dims, normalize, self.sidecar_dir, self.database_sha256)

    def _loadable(self) -> tuple[int, bool]:
        """(dimensions, normalise at load), or vector.unavailable."""
        if self.manifest is None or self.dimensions is None or self.metric not in METRICS:
            raise BookAgentError(
                "vector.unavailable",
                "this book has no usable vector manifest: vector search cannot run",
                details={"manifest": self.manifest},
                remediation="Use lexical search, or re-import a package with vectors.json.",
                available_capabilities=["lexical_search", "read_entry"],
            )
        return self.dimensions, self.metric == "cosine" and not self.manifest.get("normalized", True)

    def inspect(self) -> StoreInspection:
        meta = dict(self._query("SELECT key, value FROM meta"))
        (records,) = self._query("SELECT COUNT(*) FROM records")[0]
        (vectors,) = self._query("SELECT COUNT(*) FROM vectors")[0]
        m = self.manifest or {}
        info: StoreInspection = {
            "database_path": str(self.database_path), "meta": meta, "record_count": records,
            "vector_count": vectors, "provider": m.get("provider"), "model": m.get("model"),
            "dimensions": self.dimensions, "metric": self.metric, "normalized": m.get("normalized"),
            "matrix_loaded": self._matrix is not None,
            "sidecar_dir": str(self.sidecar_dir) if self.sidecar_dir else None,
        }
        if self._matrix is not None:
            info["searchable_vectors"] = len(self._matrix.ids)
            info["matrix_source"] = dict(self._matrix.report)
        return info

    def validate(self) -> list[Diagnostic]:
        """Database and vector checks as diagnostics (no errors: the vectors are sound).

        The package validator's checks (database_checks.check_database: schema, counts,
        blob lengths, NaN/inf, orphans; imported here: a search never runs them) plus whether
        `normalized: true` holds."""
        from book_agent_adapters.package.database_checks import check_database

        _meta, found = check_database(self.database_path, self.manifest, self.book_id)
        if any(d.code.endswith("database_unreadable") for d in found):
            return found
        return found + self._own_checks(check_normalization)

    def _own_checks(self, check: Any) -> list[Diagnostic]:
        with self._lock:
            try:
                con = connect_readonly(self.database_path)
                try:
                    return list(check(con, self.manifest))
                finally:
                    con.close()
            except sqlite3.Error as exc:
                return [Diagnostic("vector.database_unreadable",
                                   f"cannot read {self.database_path}: {exc}",
                                   details={"path": str(self.database_path)})]

    def __enter__(self) -> PrebuiltVectorStoreAdapter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # a forgotten adapter must not leak its connection (ResourceWarning under -W error)
        con = getattr(self, "_con", None)
        if con is not None:
            con.close()

    def close(self) -> None:
        """Close the connection; the process-wide matrix stays cached for the next adapter."""
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
            self._matrix = None
            self._coded, self._codes = None, None
            self._sampled, self._sample = None, None


def prepare_query(query_vector: Vector | Sequence[float], dimensions: int | None, metric: str) -> Vector:
    """The query as the rows are searched: float32, `dimensions` finite numbers, unit length
    for cosine. Raises BookAgentError (`query.vector_invalid`)."""
    query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    if query.shape != (dimensions,) or not np.isfinite(query).all():
        raise BookAgentError(
            "query.vector_invalid",
            f"the query vector must be {dimensions} finite numbers (got {query.size})",
            details={"expected_dimensions": dimensions, "got_dimensions": int(query.size)},
            remediation="Encode the query with the book's own model (see `book-agent status BOOK`).",
        )
    if metric == "cosine":
        norm = float(np.sqrt(query.dot(query)))  # np.linalg.norm's own sum for a vector, without its checks
        if norm == 0.0:
            raise BookAgentError(
                "query.vector_invalid", "a zero query vector has no direction (cosine)",
                remediation="Encode the query with the book's own model.",
            )
        if norm != 1.0:  # a caller's vector is normalised already: dividing by 1.0 changes nothing
            query = query / norm
    return query


def _quantized(matrix: vector_matrix.F32) -> QuantizedRows | None:
    """Codes for `matrix`, or None (the full pass then) when faiss is not installed or fails."""
    try:
        import faiss
    except ImportError:
        return None
    try:
        return QuantizedRows(faiss, matrix)
    except (RuntimeError, MemoryError):
        return None
