"""Holds plug-ins to the contract at run time.

A third-party reranker gets deep copies (it cannot touch the caller's dicts); what it
returns is checked (adapters/rerankers/checks.py); an exception or a malformed result
becomes the ordinary failure result (original order, error, warning), or a raised
BookAgentError in strict mode. So a plug-in can never report a fake `applied`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.search_results import (
    ProviderInfo,
    RerankHealth,
    RerankOutcome,
    SearchHit,
)
from book_agent.ports import Reranker
from book_agent_adapters.rerankers import errors, results
from book_agent_adapters.rerankers.checks import result_problems


class CheckedReranker(Reranker):
    def __init__(self, inner: Any, name: str, source: str, strict: bool = False) -> None:
        self.inner = inner
        self.name = name
        self.source = source
        self.strict = strict

    def rerank(self, query: str, candidates: Sequence[SearchHit], top_n: int) -> RerankOutcome:
        results.check_request(candidates, top_n)
        try:
            out = self.inner.rerank(query, results.clone(list(candidates)), top_n)
        except BookAgentError as exc:
            return self._fail(candidates, top_n, exc)
        except Exception as exc:
            return self._fail(candidates, top_n, self._error(
                errors.PLUGIN_FAILED, f"raised {type(exc).__name__}: {exc}"), exc)
        problems = result_problems(out, candidates, top_n)
        if problems:
            return self._fail(candidates, top_n, self._error(
                errors.PLUGIN_BAD_RESULT, "returned a result that breaks the contract: "
                + "; ".join(problems[:5]), problems=problems))
        if self.strict and out["error"] is not None:
            raise BookAgentError(
                str(out["error"].get("code") or errors.PLUGIN_FAILED), str(out["error"].get("message")),
                details=out["error"].get("details") or {}, remediation=out["error"].get("remediation"),
            )
        return cast(RerankOutcome, dict(out))  # checked by result_problems above

    def _error(self, code: str, message: str, **details: Any) -> BookAgentError:
        return errors.rerank_error(
            code, f"reranker {self.name!r} {message}", errors.REMEDIATION_PLUGINS,
            provider=self.name, **details,
        )

    def _fail(
        self, candidates: Sequence[SearchHit], top_n: int, error: BookAgentError,
        cause: BaseException | None = None,
    ) -> RerankOutcome:
        if cause is not None:
            error.__cause__ = cause
        if self.strict:
            raise error
        return results.failure(candidates, top_n, error, self.name)

    def healthcheck(self) -> RerankHealth:
        try:
            health = self.inner.healthcheck()
        except Exception as exc:
            error = self._error(errors.PLUGIN_FAILED, f"healthcheck raised {type(exc).__name__}: {exc}")
            return {"ok": False, "provider": self.name, "error": error.to_dict()}
        if not isinstance(health, dict):
            return {"ok": False, "provider": self.name,
                    "error": self._error(errors.PLUGIN_BAD_RESULT, "healthcheck returned no dict").to_dict()}
        return cast(RerankHealth, {"provider": self.name, **health})  # the plug-in's own keys, as they are

    def provider_info(self) -> ProviderInfo:
        try:
            info = self.inner.provider_info()
        except Exception as exc:
            info = {"error": f"provider_info raised {type(exc).__name__}: {exc}"}
        info = dict(info) if isinstance(info, dict) else {}
        # the plug-in's own keys pass through as they are
        return cast(ProviderInfo, {"provider": self.name, **info, "plugin": True, "source": self.source,
                                   "strict": self.strict})
