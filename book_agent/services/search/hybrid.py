"""The hybrid search use case: lexical + vector channels, trust-weighted fusion, rerank.

Speaks only to ports. Every channel reports whether it ran and why not; when the vector
channel cannot run, a non-strict search answers from the lexical channel and says so, and
a strict search raises instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_TOP_K
from book_agent.domain.records import Record, markdown_span
from book_agent.domain.search.fusion import (
    AGREEMENT_SHARE,
    PLAIN_RRF_K,
    RAGFLOW_KEYWORD_SHARE,
    VECTOR_SHARE,
    ChannelRanking,
    FusedHit,
    ScoredChannel,
    fuse,
    fuse_minmax,
    fuse_scores,
)
from book_agent.domain.search.lexical_text import has_query_terms, script_letters
from book_agent.domain.search.proximity import PROXIMITY_TOP_N
from book_agent.domain.search.reports import HitReport, SearchReport, render_hit
from book_agent.domain.search.search_results import (
    ChannelInfo,
    ChannelRankings,
    Hints,
    PassageReading,
    QueryRepresentation,
    RerankInfo,
    SearchHit,
)
from book_agent.domain.search.vector_background import Background, vector_scale
from book_agent.domain.search.vector_trust import LanguageEvidence, query_vector_trust
from book_agent.domain.sources.locators import claimed_locator
from book_agent.domain.sources.source_results import Locator
from book_agent.ports import LexicalIndex, QueryVectorizer, RecordSource, Reranker, VectorStore
from book_agent.ports.locators import LocatorLookup
from book_agent.ports.storage import PassageTerms
from book_agent.services.search.channel_results import not_ran, scored_pairs, unique_pairs
from book_agent.services.search.checks import check_against_channels as check_channels
from book_agent.services.search.checks import check_arguments, degraded_warnings
from book_agent.services.search.passage_reading import not_read, read_first_passages, read_passages

FUSION_METHOD = "convex-normalised-scores-and-votes"  # contracts/fusion.md
CANDIDATES_MIN = 50  # each channel fetches at least this many before fusion


# (query, depth, query_vector) -> (record ids best first, their scores or None, channel info, representation,
# the query's background over the searched books or None)
VectorSearch = Callable[[str, int, Sequence[float] | None],
                        tuple[list[str], dict[str, float] | None, ChannelInfo, QueryRepresentation, Background | None]]


@dataclass
class SearchChannels:
    """What a hybrid search asks: its channels, the records, and why a channel cannot run."""

    lexical: LexicalIndex | None
    vector_store: VectorStore | None
    query_runtime: QueryVectorizer | None
    records: RecordSource
    language_evidence: LanguageEvidence = field(default_factory=LanguageEvidence)
    lexical_problem: BookAgentError | None = None  # why the lexical channel cannot run
    vector_problem: BookAgentError | None = None  # why the vector channel cannot run
    reranker: Reranker | None = None
    # A vector channel of its own (a library's: one per model group), in place of the store and runtime
    vector_search: VectorSearch | None = None
    # The hits' verified locators (by record id); a hit without one carries the record's claim
    locators: LocatorLookup | None = None
    # Reads the first hits' texts for the passage-reading step (book_agent/services/search/passage_reading.py); None: no step
    passage_terms: PassageTerms | None = None
    # The searched books' vector dimensions (a query vector must fit one; (): none has vectors; None: unknown)
    vector_dimensions: tuple[int, ...] | None = None


class HybridSearch:
    def __init__(self, book_id: str, channels: SearchChannels) -> None:
        self.book_id = book_id
        self.channels = channels

    def search(
        self,
        query: str,
        top_k: int = DEFAULT_TOP_K,
        strict: bool = False,
        query_vector: Sequence[float] | None = None,
        hints: Hints | None = None,
    ) -> SearchReport:
        """The search's report, built once (book_agent/domain/search/reports.py): the book search
        and the library add to it; `render_search` makes the contract's JSON of it."""
        check_arguments(query, top_k, query_vector, hints, strict)
        check_channels(query_vector, strict, self.channels.vector_dimensions, self.channels.reranker)
        started = time.perf_counter()
        if query_vector is None and not has_query_terms(query):
            return self._wordless(query, top_k, hints, started)
        rerank_wanted = self._rerank_wanted()
        depth = max(CANDIDATES_MIN, top_k * 5)
        lexical, lexical_scores, lexical_info = self._lexical(query, depth)
        vector_ids, vector_scores, vector_info, representation, background = self._vector(query, depth, query_vector)
        unused_vector = query_vector is not None and self.channels.vector_dimensions == ()
        warnings = degraded_warnings(strict, lexical_info, vector_info, unused_vector)
        shown = max(top_k * 3, 20) if rerank_wanted else top_k
        read = PROXIMITY_TOP_N if self.channels.passage_terms is not None else 0  # the first hits' texts
        candidates = self._fuse(query, unique_pairs(lexical, lexical_scores), scored_pairs(vector_ids, vector_scores),
                                lexical_info, vector_info, limit=max(shown, read),
                                complete=(len(lexical) < depth, len(vector_ids) < depth), background=background)
        records = self.channels.records.fetch([c.record_id for c in candidates])
        candidates, reading = read_passages(self.channels.passage_terms, query, candidates, records)
        if vector_scores is not None and representation.get("status") == "user-supplied-unverified":
            vector_info["trust"] += "; the query vector was supplied by the caller (compatibility unverified)"
        hits = self._hits(candidates[:shown], records, lexical_scores, vector_scores or {})
        rerank_info: RerankInfo = {"rerank_requested": False, "rerank_applied": False}
        if rerank_wanted and hits:
            hits, rerank_info = self._rerank(query, hits, top_k, strict, warnings)
        return self._result(query, top_k, hits[:top_k], {"lexical": lexical_info, "vector": vector_info},
                            representation, rerank_info, hints, warnings, started, reading)

    def _result(self, query: str, top_k: int, hits: list[HitReport], channels: dict[str, ChannelInfo],
                representation: QueryRepresentation, rerank: RerankInfo, hints: Hints | None,
                warnings: list[str], started: float, reading: PassageReading | None = None) -> SearchReport:
        """The search's report (contracts/search.md); fusion weights are the channels' own."""
        return SearchReport(
            book_id=self.book_id, query=query, top_k=top_k, hits=tuple(hits), channels=channels,
            query_representation=representation,
            fusion={"method": FUSION_METHOD, "vector_share": VECTOR_SHARE, "agreement_share": AGREEMENT_SHARE,
                    "weights": {name: info["weight"] for name, info in channels.items()},
                    "passage_reading": reading or not_read()},
            rerank=rerank, hints=dict(hints or {}), warnings=tuple(warnings),
            elapsed_ms=round((time.perf_counter() - started) * 1000, 2))

    def _wordless(self, query: str, top_k: int, hints: Hints | None, started: float) -> SearchReport:
        """Punctuation or emoji only: nothing to look up. An embedding of "?!" still has
        nearest neighbours, but they would be confident-looking noise, so neither runs."""
        skipped: ChannelInfo = {"ran": False, "status": "skipped", "reason": "the query has no words to search for",
                   "weight": 0.0}
        return self._result(
            query, top_k, [], {"lexical": skipped.copy(), "vector": skipped.copy()},
            {"kind": "text", "status": "not-encoded"}, {"rerank_requested": False, "rerank_applied": False},
            hints, ["the query has no words or characters to search for (only punctuation or symbols)"], started)

    def channel_rankings(self, query: str, depth: int = CANDIDATES_MIN,
                         query_vector: Sequence[float] | None = None) -> ChannelRankings:
        """Record ids per channel, the two baselines (plain RRF k=60; RAGFlow's rule, 0.7
        keyword + 0.3 vector over min-max scores, both ungated) and our fusion, best first, with
        the channels' scores (for the eval harness and the fusion study)."""
        lexical, lexical_scores, lexical_info = self._lexical(query, depth)
        lexical_ids, lexical = [record_id for record_id, _ in lexical], unique_pairs(lexical, lexical_scores)
        vector_ids, vector_scores, vector_info, _, background = self._vector(query, depth, query_vector)
        fused = self._fuse(query, lexical, scored_pairs(vector_ids, vector_scores), lexical_info, vector_info,
                           complete=(len(lexical_ids) < depth, len(vector_ids) < depth), background=background)
        fused = read_first_passages(self.channels.passage_terms, query, fused, self.channels.records)
        plain = fuse([ChannelRanking("lexical", lexical_ids), ChannelRanking("vector", vector_ids)],
                     k=PLAIN_RRF_K)
        ragflow = fuse_minmax([ScoredChannel("lexical", lexical, RAGFLOW_KEYWORD_SHARE),
                               ScoredChannel("vector", scored_pairs(vector_ids, vector_scores), 1 - RAGFLOW_KEYWORD_SHARE)])
        return {"lexical": lexical_ids, "vector": vector_ids, "plain-rrf": [h.record_id for h in plain],
                "ragflow-rule": [h.record_id for h in ragflow],
                "hybrid": [h.record_id for h in fused],
                "scores": {"lexical": lexical_scores, "vector": vector_scores or {}},
                "weights": {"lexical": lexical_info["weight"], "vector": vector_info["weight"]},
                "ran": {"lexical": lexical_info["ran"], "vector": vector_info["ran"]}}

    def _fuse(self, query: str, lexical: list[tuple[str, float]], vector: list[tuple[str, float]],
              lexical_info: ChannelInfo, vector_info: ChannelInfo, limit: int | None = None,
              complete: tuple[bool, bool] = (False, False), background: Background | None = None) -> list[FusedHit]:
        """Fuse the channels' scores, the vector channel gated by the model's reach for this
        query and scaled by its background (`vector_scale`). Records the weights and the reasons in
        the channel infos (shown in the result). `complete`: whether each channel (lexical, vector)
        returned fewer than its depth, i.e. all it found: a record it did not return then gets
        nothing from it (book_agent/domain/search/fusion.py)."""
        vector_gate, vector_reason = query_vector_trust(script_letters(query), self.channels.language_evidence)
        floor, confidence, scale_reason = vector_scale(vector[0][1] if vector else None, background)
        lexical_weight = (1.0 - VECTOR_SHARE) if lexical_info["ran"] else 0.0
        vector_weight = VECTOR_SHARE * vector_gate * confidence if vector_info["ran"] else 0.0
        lexical_info["weight"], lexical_info["trust"] = lexical_weight, "BM25, each score over the query's best"
        vector_info["weight"] = vector_weight
        vector_info["trust"] = f"{vector_reason}; {scale_reason}" if vector else vector_reason
        return fuse_scores([ScoredChannel("lexical", lexical, lexical_weight, complete=complete[0]),
                            ScoredChannel("vector", vector, vector_weight, floor=floor, complete=complete[1])],
                           limit=limit)

    # --- channels -------------------------------------------------------------------

    def _lexical(self, query: str, depth: int) -> tuple[list[tuple[str, float]], dict[str, float], ChannelInfo]:
        """(its (record id, score) pairs best first, their scores by id, the channel's info)"""
        ch = self.channels
        if ch.lexical is None:
            problem = ch.lexical_problem or BookAgentError(
                "lexical.index_missing", "the lexical index is missing",
                remediation="run `book-agent prepare BOOK`")
            return [], {}, not_ran(problem)
        try:
            found = ch.lexical.search(query, depth)
        except BookAgentError as exc:
            return [], {}, not_ran(exc, "failed")
        return (cast(list[tuple[str, float]], found), dict(found),  # a LexicalHit is a (record id, score) pair
                {"ran": True, "status": "ok", "candidates": len(found), "ranking": "bm25"})

    def _vector(
        self, query: str, depth: int, query_vector: Sequence[float] | None
    ) -> tuple[list[str], dict[str, float] | None, ChannelInfo, QueryRepresentation, Background | None]:
        """(record ids best first, their scores, the channel's info, the query's representation,
        the query's background in this book: None where it is not measured)"""
        ch = self.channels
        if ch.vector_search is not None:
            return ch.vector_search(query, depth, query_vector)
        representation: QueryRepresentation = {"kind": "text", "status": "not-encoded"}
        if ch.vector_store is None or ch.query_runtime is None:
            problem = ch.vector_problem or BookAgentError(
                "search.no_vectors", "this package has no vectors", remediation=None)
            status = "not-applicable" if problem.code == "search.no_vectors" else "unavailable"
            return [], None, not_ran(problem, status), representation, None
        try:
            if query_vector is not None:
                result = ch.query_runtime.accept_query_vector(query_vector)
            else:
                result = ch.query_runtime.encode_query(query)
        except BookAgentError as exc:
            if query_vector is not None:
                raise  # a bad caller-supplied vector is the caller's error, not a degraded channel
            return [], None, not_ran(exc), representation, None
        representation = result.to_dict(include_vector=False)
        if result.vector is None:
            error = representation.get("error")
            info: ChannelInfo = {"ran": False, "status": result.status,
                                 "reason": (error.get("message") if error else None) or "the query could not be encoded",
                                 "code": (error.get("code") if error else None),
                                 "remediation": (error.get("remediation") if error else None), "route": result.route}
            return [], None, info, representation, None
        try:
            found = ch.vector_store.search_ids(result.vector, depth)
            background = ch.vector_store.background(result.vector) if found else None
        except BookAgentError as exc:
            return [], None, not_ran(exc, "failed"), representation, None
        found_info: ChannelInfo = {"ran": True, "status": result.status, "route": result.route,
                                   "candidates": len(found)}
        return [record_id for record_id, _ in found], dict(found), found_info, representation, background

    # --- hits -----------------------------------------------------------------------

    def _hits(self, fused: list[FusedHit], records: dict[str, Record], lexical: dict[str, float],
              vector: dict[str, float]) -> list[HitReport]:
        ids = [f.record_id for f in fused]
        located = self.channels.locators.fetch([i for i in ids if i in records]) if self.channels.locators else {}
        hits: list[HitReport] = []
        for item in fused:
            record = records.get(item.record_id)
            if record is not None:
                found = located.get(item.record_id)
                # the verified locator, else the record's claim, marked unchecked
                locator = found or claimed_locator(self.book_id, record)
                hits.append(self._hit(record, item, lexical, vector, locator))
        return hits

    def _hit(self, record: Record, item: FusedHit, lexical: dict[str, float], vector: dict[str, float],
             locator: Locator) -> HitReport:
        return HitReport(
            record_id=record.record_id, book_id=self.book_id, text=record.text, headings=tuple(record.headings),
            locator=locator, markdown_span=markdown_span(record.md_start, record.md_end),
            lexical=lexical.get(record.record_id), vector=vector.get(record.record_id),
            fused=round(item.fused, 6), channel_ranks=item.ranks)

    # --- rerank ---------------------------------------------------------------------

    def rerank_configured(self) -> bool:
        return self._rerank_wanted()

    def _rerank_wanted(self) -> bool:
        reranker = self.channels.reranker
        if reranker is None:
            return False
        return str(reranker.provider_info().get("provider", "none")) != "none"

    def _rerank(self, query: str, hits: list[HitReport], top_k: int, strict: bool,
                warnings: list[str]) -> tuple[list[HitReport], RerankInfo]:
        assert self.channels.reranker is not None
        result = self.channels.reranker.rerank(query, [render_hit(hit) for hit in hits], top_k)  # the port's JSON
        # .get: a plug-in's result is checked by the guard, but a key may still be absent
        info: RerankInfo = {"rerank_requested": result.get("rerank_requested"),
                            "rerank_applied": result.get("rerank_applied"), "error": result.get("error")}
        info["provider"] = self.channels.reranker.provider_info()
        warnings.extend(str(w) for w in result.get("warnings") or [])
        if strict and result.get("rerank_requested") and not result.get("rerank_applied"):
            error = result.get("error")
            message = error.get("message", "unknown error") if error else "unknown error"
            raise BookAgentError(
                "search.rerank_failed", f"strict search: rerank failed: {message}",
                details={"rerank": info}, remediation=(error.get("remediation") if error else None))
        return _reranked(hits, result.get("hits")), info


def _reranked(hits: list[HitReport], reranked: list[SearchHit] | None) -> list[HitReport]:
    """The hits in the reranker's order, with what a rerank may add (contracts/rerankers.md: its
    score and metadata block; the guard holds every other field to the candidate's)."""
    if not reranked:
        return hits
    by_id = {hit.record_id: hit for hit in hits}
    return [by_id[out["record_id"]]._replace(rerank_score=(out.get("scores") or {}).get("rerank"), rerank=out.get("rerank"))
            for out in reranked]  # a rerank's hits only: not every search's
