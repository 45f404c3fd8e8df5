"""The search result and its parts (contracts/search.md, contracts/rerankers.md) as typed shapes.

TypedDicts rather than dataclasses: the CLI prints these dicts as they are and the MCP
server returns them, so the JSON stays byte-identical (key order is the order the search
builds them in); the types name the keys a caller or driver may read.
"""

# No `from __future__ import annotations`: a TypedDict reads Required/NotRequired at class
# creation, and a string annotation would hide them from __required_keys__.
from typing import NotRequired, Required, TypedDict

from book_agent.domain.errors import ErrorInfo
from book_agent.domain.records import MarkdownSpan
from book_agent.domain.search.visual_fallback import VisualFallback
from book_agent.domain.sources.source_results import Locator

# Caller-supplied hints (`--hint k=v`, the MCP `hints` object): free JSON, echoed back.
Hints = dict[str, object]


class HitScores(TypedDict):
    lexical: float | None  # the negated BM25 score; None when the channel did not find the hit
    vector: float | None
    fused: float
    rerank: NotRequired[float]  # the reranker's raw score, after an applied rerank


class RerankBlock(TypedDict, total=False):
    """What an applied rerank adds to a hit: the provider's metadata and the hit's old rank."""

    provider: str
    model: str | None
    latency_ms: float
    original_rank: int | None
    reranked: bool


class SearchHit(TypedDict):
    rank: int
    evidence_id: str  # BOOK_ID#RECORD_ID
    record_id: str
    text: str
    headings: list[str]
    source_locator: Locator
    markdown_span: MarkdownSpan | None
    scores: HitScores
    channel_ranks: dict[str, int]
    channels: list[str]
    book_id: NotRequired[str]  # a library search says each hit's book
    rerank: NotRequired[RerankBlock]


class GroupRun(TypedDict):
    """One model group a library's vector channel searched."""

    model: str
    candidates: int
    route: str | None
    search: str  # approximate | exact


class ChannelInfo(TypedDict, total=False):
    """Whether a channel ran and why not: {ran, status, reason, code, remediation} when it did
    not; the weight and trust are set by the fusion."""

    ran: Required[bool]
    status: Required[str]  # ok | unavailable | failed | not-applicable | skipped | user-supplied-unverified
    reason: str | None
    code: str | None
    remediation: str | None
    route: str | None
    candidates: int
    ranking: str
    groups: list[GroupRun]
    weight: float
    trust: str


class QueryRepresentation(TypedDict, total=False):
    """QueryEncoding.to_dict(include_vector=False), or {kind: text, status: not-encoded}."""

    kind: str
    status: Required[str]
    route: str | None
    model: str | None
    dimensions: int | None
    diagnostics: list[dict[str, object]]
    error: ErrorInfo | None
    vector: list[float] | None


class ProviderInfo(TypedDict, total=False):
    """A reranker's description (no credential value: `auth_env` is a variable's name).
    A plug-in's own keys pass through the guard as they are."""

    provider: Required[str]
    model: str | None
    endpoint: str | None
    remote: bool
    strict: bool
    score_meaning: str
    auth_env: str | None
    api: str
    plugin: bool
    source: str
    error: str


class RerankHealth(TypedDict, total=False):
    ok: bool
    provider: str
    model: str | None
    endpoint: str | None
    checks: list[str]
    error: ErrorInfo | None


class RerankOutcome(TypedDict):
    """What `Reranker.rerank` returns: the hits (deep copies, at most top_n), whether a rerank
    was asked for and applied, warnings, and the error of a failed one (original order kept)."""

    hits: list[SearchHit]
    rerank_requested: bool
    rerank_applied: bool
    warnings: list[str]
    error: ErrorInfo | None


class RerankInfo(TypedDict, total=False):
    """The result's `rerank` block."""

    rerank_requested: Required[bool]
    rerank_applied: Required[bool]
    error: ErrorInfo | None
    provider: ProviderInfo


class PassageReading(TypedDict):
    """The passage-reading step (book_agent/domain/search/proximity.py, contracts/fusion.md)."""

    applied: bool  # whether any hit was re-scored (siblings read, a query of two terms or more)
    passages_read: int  # first hits that share their document with another (the ones read)
    window: int
    weight: float
    top_n: int


class FusionInfo(TypedDict, total=False):
    method: Required[str]
    vector_share: Required[float]
    agreement_share: Required[float]  # the rank votes' share beside the normalised scores (contracts/fusion.md)
    weights: Required[dict[str, float]]
    passage_reading: PassageReading


class LibraryBookRow(TypedDict, total=False):
    """One book a library search names: searched, or skipped with the reason."""

    book_id: Required[str]
    searched: Required[bool]
    code: str
    reason: str
    remediation: str | None
    vector: str  # why its vector channel did not serve it


class LibraryIndexInfo(TypedDict, total=False):
    records: Required[int]
    rebuilt: Required[bool]  # brought up to date by this call (books added or removed, or compacted)
    generation: str | None  # the generation the search read (the backend's name for it)
    compacted: bool  # this call wrote the exact rebuild (prepare --full, or drift past COMPACT_DRIFT)
    drift: float  # (prepare) share of records added or removed since the last exact build
    stale: dict[str, str | None]  # why the generation served is not up to date (a writer has yet to bring it)
    pending_books: list[str]  # searched books the generation served does not hold yet (no lexical hits of theirs)


class LibraryIndexVectors(TypedDict, total=False):
    vectors: Required[int]
    rebuilt: Required[bool]
    generation: str | None  # the vector generation served (a replica says which it sees)
    stale: dict[str, str | None]  # {code, reason, remediation}: served in place while it cannot be brought up to date
    exact_books: list[str]  # books it does not hold yet, searched exactly and merged
    compacted: bool  # prepare retrained it
    drift: float  # prepare: how far it is from a retrain


class ModelGroupRow(TypedDict, total=False):
    model: Required[str]
    dimensions: Required[int]
    books: list[str]
    search: str  # approximate | exact | none
    note: str  # why the group is searched exactly
    vector_index: LibraryIndexVectors


class LibraryInfo(TypedDict):
    books_searched: int
    generation: str | None  # the lexical index generation served (a replica says which it sees)
    lexical_index: LibraryIndexInfo
    model_groups: list[ModelGroupRow]


class SearchResult(TypedDict):
    book_id: str  # the book, or the library reference searched
    query: str
    top_k: int
    hits: list[SearchHit]
    channels: dict[str, ChannelInfo]  # lexical, vector
    query_representation: QueryRepresentation
    fusion: FusionInfo
    rerank: RerankInfo
    hints: Hints
    warnings: list[str]
    elapsed_ms: float
    visual_fallback: NotRequired[VisualFallback]
    books: NotRequired[list[LibraryBookRow]]
    library: NotRequired[LibraryInfo]


class Scores(TypedDict):
    lexical: dict[str, float]
    vector: dict[str, float]


# Record ids per channel, the baselines (plain RRF, RAGFlow's rule) and the hybrid fusion,
# best first (the eval harness); functional form: "plain-rrf" is no identifier.
ChannelRankings = TypedDict("ChannelRankings", {
    "lexical": list[str], "vector": list[str], "plain-rrf": list[str], "ragflow-rule": list[str],
    "hybrid": list[str],
    "scores": Scores, "weights": dict[str, float], "ran": dict[str, bool],
})
