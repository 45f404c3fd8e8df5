"""The ports: one small Protocol per role. Each docstring is the contract.

Adapters (in `adapters/`, imported as `book_agent.adapters`) implement these; the core
(`book_agent.domain`, `book_agent.services`) speaks only to them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from book_agent.domain.records import Record, Vector, VectorHit


@dataclass(frozen=True)
class LexicalHit:
    record_id: str
    score: float  # higher is better (negated BM25)


@runtime_checkable
class VectorStore(Protocol):
    """The package's prebuilt vectors. Read-only: never writes a byte of the package."""

    def inspect(self) -> dict[str, Any]: ...
    def validate(self) -> list[Any]: ...
    def get_record(self, record_id: str) -> Record:
        """Raises BookAgentError(code='record.not_found') for an unknown id."""
        ...
    def iter_records(self) -> Iterator[Record]: ...
    def get_source_metadata(self, record_id: str) -> dict[str, Any]: ...
    def search(self, query_vector: Vector, top_k: int) -> list[VectorHit]:
        """Exact top-k by the manifest's metric, best first."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class LexicalIndex(Protocol):
    """A full-text index over the records, kept in the book's runtime dir."""

    def search(self, query: str, top_k: int) -> list[LexicalHit]:
        """Best first. Query text is never parsed as query syntax: any string is safe."""
        ...


@runtime_checkable
class QueryEncoder(Protocol):
    """Turns query text into a vector with exactly the package's model."""

    @property
    def route(self) -> str:
        """How queries are encoded, e.g. `local:numpy:/path` or `remote:siliconflow:URL`."""
        ...

    def encode(self, text: str) -> Vector:
        """Raises QueryRuntimeError when the model or provider cannot serve the query."""
        ...


@runtime_checkable
class Reranker(Protocol):
    def rerank(self, query: str, candidates: Sequence[dict[str, Any]], top_n: int) -> dict[str, Any]:
        """Returns {hits, rerank_requested, rerank_applied, warnings, error}; every candidate
        field survives; on failure the original order with rerank_applied False."""
        ...
    def healthcheck(self) -> dict[str, Any]: ...
    def provider_info(self) -> dict[str, Any]: ...


@runtime_checkable
class Registry(Protocol):
    """Registered books, persisted atomically under a cross-process lock."""

    def get(self, book_id: str) -> dict[str, Any]:
        """Raises BookAgentError(code='book.not_registered') for an unknown id."""
        ...
    def put(self, entry: dict[str, Any], replace: bool = False) -> dict[str, Any]: ...
    def list(self) -> list[dict[str, Any]]: ...
    def remove(self, book_id: str) -> None: ...


@runtime_checkable
class RecordSource(Protocol):
    def fetch(self, record_ids: Sequence[str]) -> dict[str, Record]:
        """The records with these ids (unknown ids are simply absent)."""
        ...


@runtime_checkable
class QueryVectorizer(Protocol):
    """The query runtime as the search sees it. Results carry .vector (or None), .status
    ('ok' | 'unavailable' | 'user-supplied-unverified'), .route and .to_dict(include_vector=False)."""

    def encode_query(self, query: str) -> Any: ...
    def accept_query_vector(self, vector: Sequence[float]) -> Any: ...
    def tokenizer_vocabulary(self) -> list[str] | None:
        """The local model's word pieces, or None when they cannot be seen (no request made)."""
        ...
