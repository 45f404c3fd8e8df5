"""One registered book's resources, opened lazily and once per process.

A lexical search opens only the FTS sidecar and the records table; the vector matrix,
the query encoder, the reranker and the PDF/EPUB reader load on first use. The MCP server
keeps one of these per process, so each heavy part loads once.
"""

from __future__ import annotations

import threading
from contextlib import suppress
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from book_agent.app import sidecars
from book_agent.app.config_store import load_config
from book_agent.domain.errors import BookAgentError
from book_agent.domain.fusion import LanguageEvidence
from book_agent.domain.package import PackageInfo
from book_agent.domain.runtime_config import RuntimeConfig
from book_agent.services.search import HybridSearch, SearchChannels
from book_agent.services.vector_check import measured_reads

T = TypeVar("T")


class _once(cached_property[T]):
    """cached_property created under the book's lock: the MCP server calls the book from two
    threads, and two first uses at once must not open a part twice (leaking one)."""

    def __get__(self, instance: Any, owner: type | None = None) -> T:  # type: ignore[override]
        with instance._lock:  # taken on first use only: afterwards the instance dict answers
            value: T = super().__get__(instance, owner)
            return value


class OpenBook:
    def __init__(self, entry: dict[str, Any], package: PackageInfo, runtime_dir: Path) -> None:
        self.entry = entry
        self.package = package
        self.book_id = str(package.book_id)
        self.runtime_dir = runtime_dir
        self._lock = threading.RLock()

    @_once
    def config(self) -> RuntimeConfig:
        return load_config(self.runtime_dir)

    @_once
    def records(self) -> Any:
        from book_agent.adapters.storage.sqlite_records import SqliteRecordReader

        assert self.package.database_path is not None
        return SqliteRecordReader(self.package.database_path)

    _lexical: Any = None

    def lexical_index(self) -> tuple[Any, BookAgentError | None]:
        """The FTS sidecar when fresh (kept open once found fresh), else why not."""
        if self._lexical is not None:
            return self._lexical, None
        from book_agent.adapters.storage.fts_lexical_index import FtsLexicalIndex

        expected = sidecars.lexical_stamp(str(self.entry.get("manifest_sha256") or ""), self._database_sha())
        state = sidecars.lexical_state(self.runtime_dir, expected)
        if not state["fresh"]:
            return None, BookAgentError(
                "lexical.index_stale" if state["present"] else "lexical.index_missing",
                f"the lexical index is {state['reason']}",
                remediation=f"run `book-agent prepare {self.book_id}`",
            )
        self._lexical = FtsLexicalIndex(sidecars.lexical_path(self.runtime_dir))
        return self._lexical, None

    def _database_sha(self) -> str | None:
        files = (self.package.archive_manifest or {}).get("files") or {}
        return (files.get("database") or {}).get("sha256")

    @_once
    def vector_parts(self) -> tuple[Any, Any, LanguageEvidence, BookAgentError | None]:
        """(vector store, query runtime, language evidence, problem) — loaded on first use."""
        manifest = self.package.vector_manifest
        if not manifest or self.package.database_path is None:
            return None, None, LanguageEvidence(), BookAgentError("search.no_vectors", "this package has no vectors")
        from book_agent.adapters.encoders.query_runtime import QueryRuntime
        from book_agent.adapters.storage.sqlite_vector_store import PrebuiltVectorStoreAdapter
        from book_agent.domain.query_runtime_spec import resolve_query_runtime

        store = PrebuiltVectorStoreAdapter(
            self.package.database_path, manifest, sidecar_dir=self.runtime_dir / "vectors",
            database_sha256=self._database_sha(), book_id=self.book_id)
        spec = resolve_query_runtime(self.package)
        runtime = QueryRuntime(spec, self.config.to_dict(),
                               cache_dir=self.runtime_dir.parent.parent / "cache")
        languages = spec.get("languages")
        reads, basis = measured_reads(self.vector_check(spec.get("model"), runtime))
        evidence = LanguageEvidence(list(languages) if languages else None,
                                    str(spec.get("language_coverage") or "unknown"), reads, basis)
        return store, runtime, evidence, None

    def vector_check(self, model: str | None, runtime: Any, store: Any = None) -> dict[str, Any] | None:
        """The cached language evidence for this model and route; made when missing if the
        vector store is given (at prepare time)."""
        routes = runtime.availability().get("routes") or []  # no request is made to find out
        stamp = sidecars.vector_check_stamp(self._database_sha(), model, ",".join(routes))
        cached = sidecars.read_vector_check(self.runtime_dir, stamp)
        if cached is not None or store is None:
            return cached
        from book_agent.services.vector_check import language_evidence

        result = language_evidence(store.iter_records(), runtime, store, seed=self.book_id)
        sidecars.write_vector_check(self.runtime_dir, stamp, result)
        return {**result, "stamp": stamp}

    @_once
    def reranker(self) -> Any:
        settings = self.config.reranker
        if settings.provider == "none":
            return None
        from book_agent.adapters.rerankers import create_reranker

        config = self.config.to_dict()
        return create_reranker(config, self.runtime_dir)

    def warm_up(self) -> dict[str, bool]:
        """Open and load what a search uses (the lexical index, the vector matrix, the local
        encoder), so the first search costs what later ones do. No network request."""
        with self._lock:
            lexical, _ = self.lexical_index()
            store, runtime, _, _ = self.vector_parts
            if store is not None:
                store.load()
            encoder = bool(runtime is not None and runtime.warm_up())
        if encoder or store is None:
            # Every channel is local: a dry search (no reranker: it may be remote) also
            # prepares the record statements and imports what a search imports. Its errors
            # are the first real search's to report.
            searcher = self.searcher()
            with suppress(BookAgentError):
                HybridSearch(self.book_id, replace(searcher.channels, reranker=None)).search("warm up", top_k=1)
        return {"lexical": lexical is not None, "vectors": store is not None, "encoder": encoder}

    def searcher(self) -> HybridSearch:
        with self._lock:
            lexical, lexical_problem = self.lexical_index()
            store, runtime, languages, vector_problem = self.vector_parts
            channels = SearchChannels(
                lexical=lexical,
                vector_store=store,
                query_runtime=runtime,
                records=self.records,
                language_evidence=languages,
                lexical_problem=lexical_problem,
                vector_problem=vector_problem,
                reranker=self.reranker,
            )
            return HybridSearch(self.book_id, channels)

    def close(self) -> None:
        """Close what was opened (SQLite connections, the PDF); the book may be reopened later."""
        for name in ("records", "sources"):
            part = self.__dict__.pop(name, None)
            if part is not None and hasattr(part, "close"):
                part.close()
        if self._lexical is not None:
            self._lexical.close()
            self._lexical = None
        parts = self.__dict__.pop("vector_parts", None)
        if parts and parts[0] is not None:
            parts[0].close()

    @_once
    def sources(self) -> Any:
        from book_agent.adapters.sources.resolver import SourceResolver

        return SourceResolver(self.package, self.runtime_dir)
