"""Search ports: turning a query into a vector, and reranking."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from book_agent.domain.book.runtime_states import QueryAvailability
from book_agent.domain.records import Vector
from book_agent.domain.search.query_encoding import QueryEncoding
from book_agent.domain.search.search_results import (
    ProviderInfo,
    RerankHealth,
    RerankOutcome,
    SearchHit,
)


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
class QueryVectorizer(Protocol):
    """The query runtime as the search sees it: every route of the book's model."""

    def encode_query(self, query: str) -> QueryEncoding:
        """status 'ok' with a vector, or 'unavailable' with the error; never raises for
        an encoder failure."""
        ...
    def accept_query_vector(self, vector: Sequence[float]) -> QueryEncoding:
        """A caller's vector, checked and marked 'user-supplied-unverified'."""
        ...
    def availability(self) -> QueryAvailability:
        """{available, routes, ...}: which routes could serve now. Makes no request."""
        ...
    def tokenizer_vocabulary(self) -> list[str] | None:
        """The local model's word pieces, or None when they cannot be seen (no request made)."""
        ...
    def warm_up(self) -> bool:
        """Load a local encoder now; True when one was loaded."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders a search's hits (contracts/rerankers.md); built-ins and plug-ins alike."""

    def rerank(self, query: str, candidates: Sequence[SearchHit], top_n: int) -> RerankOutcome:
        """Returns {hits, rerank_requested, rerank_applied, warnings, error}; every candidate
        field survives; on failure the original order with rerank_applied False."""
        ...
    def healthcheck(self) -> RerankHealth: ...
    def provider_info(self) -> ProviderInfo:
        """{provider, model, endpoint, remote, strict, ...}: never a credential value."""
        ...
