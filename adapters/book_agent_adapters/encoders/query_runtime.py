"""QueryRuntime: turn a query into a vector with exactly the book's model, or say why not.

Routes, in order: a remote provider (siliconflow, openai-compatible) when the network
policy allows its endpoint; else, or when it fails, the local encoder when the book's
model is on this machine (whatever provider built the book); else `unavailable` with the
fixes. A caller-supplied vector needs no encoder: it is checked (length, finiteness),
normalised for cosine and marked `user-supplied-unverified`. There is no document API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from book_agent.domain.book.query_runtime_spec import QueryRuntimeSpec
from book_agent.domain.book.runtime_config import ConfigError, RuntimeConfig
from book_agent.domain.book.runtime_states import QueryAvailability
from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.errors import BookAgentError, QueryRuntimeError
from book_agent.domain.network import NetworkPolicy
from book_agent.domain.records import Vector
from book_agent.domain.search.query_encoding import OK, UNAVAILABLE, USER_SUPPLIED, QueryEncoding
from book_agent.ports import QueryEncoder, QueryVectorizer

if TYPE_CHECKING:
    import httpx

__all__ = ["OK", "UNAVAILABLE", "USER_SUPPLIED", "QueryEncoding", "QueryRuntime"]


def _config(config: RuntimeConfig | Mapping[str, Any] | None) -> RuntimeConfig:
    if isinstance(config, RuntimeConfig):
        return config
    try:
        return RuntimeConfig.from_dict(dict(config or {}))
    except ConfigError as exc:
        raise BookAgentError("query.config_invalid", f"invalid runtime config: {exc}",
                             details={"errors": [str(exc)]},
                             remediation="Fix the book's runtime config (`book-agent configure`).") from exc


class QueryRuntime(QueryVectorizer):
    def __init__(
        self,
        spec: QueryRuntimeSpec | Mapping[str, Any],
        config: RuntimeConfig | Mapping[str, Any] | None = None,
        *,
        encoders: Mapping[str, QueryEncoder] | None = None,
        http_client: httpx.Client | None = None,
        environ: Mapping[str, str] | None = None,
        http_options: Mapping[str, Any] | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        """`encoders`: {"remote": ..., "local": ...} overrides (tests, plug-ins);
        `http_options`: timeout, max_retries, backoff, max_retry_after for HttpQueryEncoder;
        `cache_dir`: where the local encoder remembers verified model hashes across processes."""
        self._cache_dir = cache_dir
        self.spec = spec if isinstance(spec, QueryRuntimeSpec) else QueryRuntimeSpec.from_dict(spec)
        self.config = _config(config)
        self.policy: NetworkPolicy = self.config.network
        self._encoders: dict[str, QueryEncoder] = dict(encoders or {})
        self._http_client = http_client
        self._environ = environ
        self._http_options = dict(http_options or {})

    @property
    def endpoint(self) -> str | None:
        return self.config.query.endpoint or self.spec.endpoint_hint

    def _result(self, status: str, vector: Vector | None, route: str | None,
                diagnostics: list[Diagnostic], error: BookAgentError | None = None) -> QueryEncoding:
        return QueryEncoding(status, vector, route, self.spec.model, self.spec.dimensions,
                             diagnostics, error.to_dict() if error else None)

    def encode_query(self, query: str, query_vector: Sequence[float] | Vector | None = None) -> QueryEncoding:
        if query_vector is not None:
            return self.accept_query_vector(query_vector)
        if not isinstance(query, str) or not query.strip():
            raise BookAgentError("query.empty", "the query is empty", remediation="Ask a question.")
        if not self.spec.vector_channel_available:
            error = QueryRuntimeError(
                "query.unavailable", "this book has no usable vector manifest: no query vector",
                remediation="Use lexical search; the vector channel needs vectors.json.")
            return self._result(UNAVAILABLE, None, None, [], error)
        diagnostics: list[Diagnostic] = []
        failures: list[QueryRuntimeError] = []
        for kind in self._plan(diagnostics, failures):
            try:
                encoder = self._encoder(kind)
                vector = self._finish(encoder.encode(query), encoder.route)
            except QueryRuntimeError as exc:
                failures.append(exc)
                diagnostics.append(Diagnostic("query.route_failed", exc.message, "warning",
                                              details={"route": kind, "code": exc.code}))
                continue
            return self._result(OK, vector, encoder.route, diagnostics)
        return self._result(UNAVAILABLE, None, None, diagnostics, self._unavailable(failures))

    def _plan(self, diagnostics: list[Diagnostic], failures: list[QueryRuntimeError]) -> list[str]:
        if not self.spec.is_remote:
            return ["local"]
        if "remote" in self._encoders:
            return ["remote", "local"]
        if not self.endpoint:
            failures.append(QueryRuntimeError(
                "query.endpoint_missing", f"no embeddings endpoint is known for {self.spec.provider}",
                remediation="book-agent configure BOOK --query-endpoint URL"))
            return ["local"]
        try:
            self.policy.check(self.endpoint, purpose="query encoding")
        except QueryRuntimeError as exc:  # decided here, before any request
            failures.append(exc)
            diagnostics.append(Diagnostic("query.remote_skipped", exc.message, "info",
                                          details={"code": exc.code}))
            return ["local"]
        return ["remote", "local"]

    def availability(self) -> QueryAvailability:
        """Can a query be encoded now, and by which route? Decided without encoding anything
        and without any request: the policy, the key's variable, the local model's files."""
        if not self.spec.vector_channel_available:
            return {"available": False, "routes": [], "reason": "this book has no usable vector manifest",
                    "remediation": "use lexical search or pass a query vector"}
        diagnostics: list[Diagnostic] = []
        failures: list[QueryRuntimeError] = []
        routes = []
        for kind in self._plan(diagnostics, failures):
            try:
                if kind == "remote":
                    if self.policy.api_key(self._environ) is None and self.policy.auth_env:
                        raise QueryRuntimeError(
                            "query.auth_missing", f"the variable {self.policy.auth_env} is not set",
                            remediation=f"export {self.policy.auth_env}=YOUR_KEY before starting book-agent")
                    routes.append(f"remote:{self.spec.provider}:{self.endpoint}")
                else:
                    encoder = self._encoder("local")
                    locate = getattr(encoder, "locate", None)
                    if callable(locate):
                        locate()  # finds the model's files; raises when they are missing
                    routes.append(encoder.route)
            except QueryRuntimeError as exc:
                failures.append(exc)
        if routes:
            return {"available": True, "routes": routes, "reason": None, "remediation": None}
        error = self._unavailable(failures)
        return {"available": False, "routes": [], "reason": error.message, "code": error.code,
                "remediation": error.remediation}

    def tokenizer_vocabulary(self) -> list[str] | None:
        """The local model's word pieces, or None when its files are not on this machine
        (a remote model's tokenizer cannot be seen). Reads files; makes no request."""
        if not self.spec.vector_channel_available:
            return None
        try:
            encoder = self._encoder("local")
            vocabulary = getattr(encoder, "vocabulary", None)
            return list(vocabulary()) if callable(vocabulary) else None
        except QueryRuntimeError:
            return None

    def warm_up(self) -> bool:
        """Load the local encoder when it is this book's first route, so the first query
        costs what later ones do. Never sends a request; a failure is left for the first
        query to report. True when an encoder was warmed."""
        if not self.spec.vector_channel_available or self._plan([], [])[:1] != ["local"]:
            return False
        try:
            warm = getattr(self._encoder("local"), "warm_up", None)
            if callable(warm):
                warm()
        except QueryRuntimeError:
            return False
        return True

    def _encoder(self, kind: str) -> QueryEncoder:
        if kind not in self._encoders:
            self._encoders[kind] = self._remote() if kind == "remote" else self._local()
        return self._encoders[kind]

    def _remote(self) -> QueryEncoder:
        from book_agent_adapters.encoders.http_encoder import HttpQueryEncoder

        assert self.endpoint and self.spec.model and self.spec.dimensions  # checked by _plan
        return HttpQueryEncoder(
            self.endpoint, self.spec.model, self.spec.dimensions, self.policy,
            provider=str(self.spec.provider), query_instruction=self.spec.query_instruction,
            client=self._http_client, environ=self._environ, **self._http_options)

    def _local(self) -> QueryEncoder:
        try:
            from book_agent_adapters.encoders.local import LocalQueryEncoder
            from book_agent_adapters.encoders.local.model_files import MODELS_FOLDER
        except ImportError as exc:
            raise QueryRuntimeError(
                "query.local_unavailable", f"local encoding is not installed: {exc}",
                remediation="Reinstall book-agent with its dependencies, or allow a remote provider.",
            ) from exc
        encoder = LocalQueryEncoder(
            str(self.spec.model), self.spec.dimensions,
            normalize=self.spec.metric == "cosine" or self.spec.normalized,
            query_instruction=self.spec.query_instruction, model_dir=self.config.query.model_dir,
            verify_cache_dir=self._cache_dir,
            models_dir=self._cache_dir / MODELS_FOLDER if self._cache_dir is not None else None)
        return encoder

    def _finish(self, vector: Any, route: str) -> Vector:
        """Every route's vector is checked the same way, then normalised for cosine."""
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.size != self.spec.dimensions:
            raise QueryRuntimeError(
                "query.dimension_mismatch",
                f"{route} returned {array.size} dimensions; the book needs {self.spec.dimensions}",
                details={"route": route, "got": int(array.size), "expected": self.spec.dimensions},
                remediation="Use the exact model the book was built with.")
        if not np.isfinite(array).all():
            raise QueryRuntimeError("query.bad_response", f"{route} returned non-finite values",
                                    details={"route": route})
        return self._normalised(array)

    def _normalised(self, array: Vector) -> Vector:
        if self.spec.metric == "cosine" or self.spec.normalized:
            norm = float(np.sqrt(array.dot(array)))  # np.linalg.norm's own sum for a vector, without its checks
            if norm > 0:
                array = (array / norm).astype(np.float32, copy=False)
        return array

    def _unavailable(self, failures: list[QueryRuntimeError]) -> QueryRuntimeError:
        if not failures:
            return QueryRuntimeError("query.unavailable", "no route can encode this query")
        first = failures[0]
        if len(failures) == 1:
            return first
        fixes = " OR ".join(f.remediation for f in failures if f.remediation)
        return QueryRuntimeError(
            first.code, first.message + "; " + "; ".join(f.message for f in failures[1:]),
            details={"causes": [f.to_dict() for f in failures]},
            remediation=fixes + " OR supply a query vector (--query-vector).")

    def accept_query_vector(self, query_vector: Sequence[float] | Vector) -> QueryEncoding:
        """A vector from the caller: checked and normalised, never verified against the model."""
        try:
            array = np.asarray(query_vector, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise _invalid(self.spec.dimensions, None) from exc
        if array.size != self.spec.dimensions or not np.isfinite(array).all() or (
            self.spec.metric == "cosine" and not array.any()):
            raise _invalid(self.spec.dimensions, int(array.size))
        note = Diagnostic("query.vector_unverified",
                          "The query vector was supplied by the caller; that it comes from the "
                          f"book's model ({self.spec.model}) is not verified.", "info")
        vector = self._normalised(array.astype(np.float32))
        return self._result(USER_SUPPLIED, vector, "user-supplied", [note])

    def close(self) -> None:
        for encoder in self._encoders.values():
            closer = getattr(encoder, "close", None)
            if callable(closer):
                closer()


def _invalid(expected: int | None, got: int | None) -> BookAgentError:
    return BookAgentError(
        "query.vector_invalid",
        f"the query vector must be {expected} finite numbers, not all zero (got {got})",
        details={"expected_dimensions": expected, "got_dimensions": got},
        remediation="Encode the query with the book's own model (see `book-agent status BOOK`).")
