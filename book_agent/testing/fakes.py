"""Fakes for tests: a reranker you can script, and candidate hits shaped like search's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.search_results import RerankOutcome, SearchHit
from book_agent_adapters.rerankers.base import ScoringReranker
from book_agent_adapters.rerankers.results import check_request


class FakeReranker(ScoringReranker):
    """Scores by `scores[record_id]` when given, else by text length (longer first).

    `fail_with` makes every call fail with that error (non-strict: the failure result);
    `calls` records (query, texts, top_n) so tests can see what the reranker was asked.
    """

    provider = "fake"
    model = "fake-model"

    def __init__(
        self,
        scores: dict[str, float] | None = None,
        fail_with: BookAgentError | None = None,
        strict: bool = False,
    ) -> None:
        self.scores = dict(scores or {})
        self.fail_with = fail_with
        self.strict = strict
        self.calls: list[tuple[str, list[str], int]] = []
        self._ids: list[str] = []

    def rerank(self, query: str, candidates: Sequence[SearchHit], top_n: int) -> RerankOutcome:
        check_request(candidates, top_n)
        self._ids = [str(c.get("record_id", i)) for i, c in enumerate(candidates)]
        return super().rerank(query, candidates, top_n)

    def score(self, query: str, texts: list[str], top_n: int) -> list[tuple[int, float]]:
        self.calls.append((query, list(texts), top_n))
        if self.fail_with is not None:
            raise self.fail_with
        return [
            (i, float(self.scores.get(self._ids[i], len(text)))) for i, text in enumerate(texts)
        ]


def sample_candidates(count: int = 5, text: str = "passage") -> list[dict[str, Any]]:
    """Hit dicts with every field search produces, ranked 1..count."""
    hits = []
    for i in range(count):
        rid = f"r{i + 1:04d}"
        hits.append({
            "rank": i + 1,
            "evidence_id": f"book:{rid}",
            "record_id": rid,
            "text": f"{text} {i + 1}: " + "rivers and terrain " * (i % 4) + "水因地而制流",
            "headings": ["Chapter 1", f"Section {i + 1}"],
            "source_locator": {"kind": "pdf", "page_index": i, "bbox": None},
            "markdown_span": {"start": i * 100, "end": i * 100 + 80},
            "scores": {"lexical": 1.0 / (i + 1), "vector": 0.5 - i * 0.01, "fused": 0.03 - i * 0.001},
            "channels": ["lexical", "vector"],
        })
    return hits
