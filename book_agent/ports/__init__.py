"""The ports: one small Protocol per role the core calls. Each docstring is the contract.

First-party adapters subclass their port (`class JsonRegistry(Registry)`); plug-ins only need
the shape. bootstrap.py picks the adapters; values crossing a port are domain types.

    storage.py  records, lexical and vector indexes, the registry, packages, runtime dirs, the library
    search.py   query encoding and reranking
    book.py     the original (sources, pages), the Markdown rendition, one book's parts
    library.py  indexes over many books
    hosts.py    AI hosts

Importing one of them (`book_agent.ports.storage`) runs this package first: the names below
are re-exported lazily (book_agent/lazy.py), so a one-book search never defines the library's,
the hosts' or the sources' ports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from book_agent.lazy import exported_lazily

if TYPE_CHECKING:
    from book_agent.domain.book.registry_entry import RegistryEntry
    from book_agent.domain.library import LibraryMember
    from book_agent.domain.records import LexicalHit
    from book_agent.domain.search.query_encoding import QueryEncoding
    from book_agent.ports.book import (
        BookParts,
        MarkdownReader,
        PageRenderer,
        SourceAndPages,
        SourceReader,
    )
    from book_agent.ports.hosts import HostPort
    from book_agent.ports.library import (
        LibraryIndex,
        LibraryLexicalIndex,
        LibraryVectorIndex,
        LibraryVectorIndexes,
    )
    from book_agent.ports.search import QueryEncoder, QueryVectorizer, Reranker
    from book_agent.ports.storage import (
        LexicalIndex,
        PackageStore,
        PassageTerms,
        Phases,
        Progress,
        RecordSource,
        Registry,
        RuntimeStore,
        VectorStore,
    )

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "BookParts": "book_agent.ports.book",
    "HostPort": "book_agent.ports.hosts",
    "LexicalHit": "book_agent.domain.records",
    "LexicalIndex": "book_agent.ports.storage",
    "LibraryIndex": "book_agent.ports.library",
    "LibraryLexicalIndex": "book_agent.ports.library",
    "LibraryMember": "book_agent.domain.library",
    "LibraryVectorIndex": "book_agent.ports.library",
    "LibraryVectorIndexes": "book_agent.ports.library",
    "MarkdownReader": "book_agent.ports.book",
    "PackageStore": "book_agent.ports.storage",
    "PageRenderer": "book_agent.ports.book",
    "PassageTerms": "book_agent.ports.storage",
    "Phases": "book_agent.ports.storage",
    "Progress": "book_agent.ports.storage",
    "QueryEncoder": "book_agent.ports.search",
    "QueryEncoding": "book_agent.domain.search.query_encoding",
    "QueryVectorizer": "book_agent.ports.search",
    "RecordSource": "book_agent.ports.storage",
    "Registry": "book_agent.ports.storage",
    "RegistryEntry": "book_agent.domain.book.registry_entry",
    "Reranker": "book_agent.ports.search",
    "RuntimeStore": "book_agent.ports.storage",
    "SourceAndPages": "book_agent.ports.book",
    "SourceReader": "book_agent.ports.book",
    "VectorStore": "book_agent.ports.storage",
}

__all__ = [
    "BookParts", "HostPort", "LexicalHit", "LexicalIndex", "LibraryIndex", "LibraryLexicalIndex", "LibraryMember",
    "LibraryVectorIndex", "LibraryVectorIndexes", "MarkdownReader", "PackageStore",
    "PageRenderer", "PassageTerms", "Phases", "Progress", "QueryEncoder", "QueryEncoding", "QueryVectorizer",
    "RecordSource",
    "Registry", "RegistryEntry", "Reranker", "RuntimeStore", "SourceAndPages", "SourceReader", "VectorStore",
]

__getattr__ = exported_lazily(globals(), _EXPORTS)
