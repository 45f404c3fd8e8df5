"""book-agent: grounded, citable answers from prebuilt book packages.

Every contract name is importable from here, lazily: `import book_agent` stays cheap so
that `book-agent --help` and a lexical search start fast; the module behind a name is
imported on first attribute access.
"""

from __future__ import annotations

from book_agent import blas as _blas
from book_agent.lazy import exported_lazily

__version__ = "0.1.0"

# Every entry point imports this package first, before numpy: the one place the BLAS
# threads policy is set (book_agent/blas.py).
_blas.configure_environment()

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "BookAgent": "book_agent.agent",
    "BookAgentError": "book_agent.domain.errors",
    "QueryRuntimeError": "book_agent.domain.errors",
    "Diagnostic": "book_agent.domain.diagnostics",
    "PackageInfo": "book_agent.domain.book.package",
    "Record": "book_agent.domain.records",
    "VectorHit": "book_agent.domain.records",
    "PackageInspector": "book_agent_adapters.package.inspector",
    "PackageValidator": "book_agent_adapters.package.inspector",
    "import_archive": "book_agent_adapters.archives.importer",
    "ArchiveLimits": "book_agent_adapters.archives.importer",
    "PrebuiltVectorStoreAdapter": "book_agent_adapters.book.vectors.sqlite_vector_store",
    "QueryRuntimeSpec": "book_agent.domain.book.query_runtime_spec",
    "resolve_query_runtime": "book_agent.domain.book.query_runtime_spec",
    "QueryRuntime": "book_agent_adapters.encoders.query_runtime",
    "SourceResolver": "book_agent_adapters.sources.resolver",
    "VisualFallbackPolicy": "book_agent.domain.search.visual_fallback",
    "create_reranker": "book_agent_adapters.rerankers",
    "ScoringReranker": "book_agent_adapters.rerankers",
    "HostAdapter": "book_agent_adapters.hosts",
    "install": "book_agent_adapters.hosts",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


__getattr__ = exported_lazily(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return __all__
