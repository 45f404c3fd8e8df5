"""The base every built-in reranker (and, if it likes, a plug-in) stands on.

A subclass supplies `score(query, texts, top_n)`: (index, raw score) pairs, best first or
not. The base does the rest of the contract: request checks, deep copies, ordering,
metadata, partial results, and the failure rule (original order plus the error, or a raised
BookAgentError in strict mode). Unexpected exceptions from `score` count as failures too,
so a plug-in bug degrades a search instead of breaking it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.search_results import (
    ProviderInfo,
    RerankHealth,
    RerankOutcome,
    SearchHit,
)
from book_agent.ports import Reranker
from book_agent_adapters.rerankers import errors, results


class ScoringReranker(Reranker):
    provider = "custom"
    model: str | None = None
    strict = False

    def score(self, query: str, texts: list[str], top_n: int) -> Sequence[tuple[int, float]]:
        """(candidate index, raw score) pairs; higher is better. Raise on failure."""
        raise NotImplementedError

    def rerank(self, query: str, candidates: Sequence[SearchHit], top_n: int) -> RerankOutcome:
        results.check_request(candidates, top_n)
        if not candidates:
            return results.result([], True, False)
        started = time.perf_counter()
        try:
            raw = self.score(query, results.texts_of(candidates), min(top_n, len(candidates)))
            scored = results.validate_scored(list(raw), len(candidates))
        except BookAgentError as exc:
            return self._fail(candidates, top_n, exc)
        except Exception as exc:  # a bug in a scorer must not break the search
            error = errors.rerank_error(
                errors.PLUGIN_FAILED,
                f"reranker {self.provider!r} raised {type(exc).__name__}: {exc}",
                errors.REMEDIATION_PLUGINS,
                provider=self.provider,
            )
            error.__cause__ = exc
            return self._fail(candidates, top_n, error)
        latency_ms = round((time.perf_counter() - started) * 1000.0, 3)
        meta = {"provider": self.provider, "model": self.model, "latency_ms": latency_ms}
        return results.applied(candidates, scored, top_n, meta)

    def _fail(
        self, candidates: Sequence[SearchHit], top_n: int, error: BookAgentError
    ) -> RerankOutcome:
        if self.strict:
            raise error
        return results.failure(candidates, top_n, error, self.provider)

    def healthcheck(self) -> RerankHealth:
        return {"ok": True, "provider": self.provider, "model": self.model, "checks": [], "error": None}

    def provider_info(self) -> ProviderInfo:
        return {
            "provider": self.provider,
            "model": self.model,
            "endpoint": None,
            "remote": False,
            "strict": self.strict,
            "score_meaning": "raw provider score, higher is better; not a probability",
        }


class NoneReranker(Reranker):
    """Keeps the original order: `rerank_requested` and `rerank_applied` are false."""

    provider = "none"

    def rerank(self, query: str, candidates: Sequence[SearchHit], top_n: int) -> RerankOutcome:
        results.check_request(candidates, top_n)
        return results.passthrough(candidates, top_n, requested=False)

    def healthcheck(self) -> RerankHealth:
        return {"ok": True, "provider": "none", "model": None, "checks": [], "error": None}

    def provider_info(self) -> ProviderInfo:
        return {"provider": "none", "model": None, "endpoint": None, "remote": False, "strict": False}
