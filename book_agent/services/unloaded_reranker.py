"""A book's reranker that could not be built where the search runs (issue 44).

A custom plug-in importable in the shell that ran `configure` may not be in the server's
environment (a host starts the server without that shell's PYTHONPATH). Its load error must
not fail every search: a non-strict search answers in the fused order, with a coded warning
(`rerank.plugin_not_found: ... (reranking not applied)`) and the error in `rerank.error`; a
strict search fails with the load error's own code (book_agent/services/search/hybrid.py). The load is tried
once per opened book: the book is reopened when its config changes.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.search_results import (
    ProviderInfo,
    RerankHealth,
    RerankOutcome,
    SearchHit,
)
from book_agent.ports import Reranker


class UnloadedReranker(Reranker):
    def __init__(self, provider: str, error: BookAgentError) -> None:
        self.provider = provider or "custom"
        self.error = error

    def rerank(self, query: str, candidates: Sequence[SearchHit], top_n: int) -> RerankOutcome:
        return {"hits": [copy.deepcopy(hit) for hit in candidates[:top_n]], "rerank_requested": True,
                "rerank_applied": False, "warnings": [self.warning()], "error": self.error.to_dict()}

    def warning(self) -> str:
        return f"{self.error.code}: {self.error.message} (reranking not applied)"

    def strict_error(self) -> BookAgentError:
        """What a strict search raises: the load error's own code, before any work."""
        error = self.error
        return BookAgentError(error.code, f"strict search: the reranker could not load: {error.message}",
                              details={**error.details, "provider": self.provider}, remediation=error.remediation)

    def healthcheck(self) -> RerankHealth:
        return {"ok": False, "provider": self.provider, "model": None, "endpoint": None,
                "checks": ["load"], "error": self.error.to_dict()}

    def provider_info(self) -> ProviderInfo:
        return {"provider": self.provider, "model": None, "endpoint": None, "remote": False,
                "plugin": True, "error": self.error.code}
