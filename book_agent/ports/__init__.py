"""The ports: one small Protocol per role the core calls. Each docstring is the contract.

First-party adapters subclass their port (`class JsonRegistry(Registry)`); plug-ins only need
the shape. bootstrap.py picks the adapters; values crossing a port are domain types.

    storage.py  records, lexical and vector indexes, the registry, packages, runtime dirs, the library
    search.py   query encoding and reranking
    book.py     the original (sources, pages), the Markdown rendition, one book's parts
    library.py  indexes over many books
    hosts.py    AI hosts
"""

from book_agent.domain.library import LibraryMember
from book_agent.domain.query_encoding import QueryEncoding
from book_agent.domain.records import LexicalHit
from book_agent.domain.registry_entry import RegistryEntry
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
    Phases,
    Progress,
    RecordSource,
    Registry,
    RuntimeStore,
    VectorStore,
)

__all__ = [
    "BookParts", "HostPort", "LexicalHit", "LexicalIndex", "LibraryIndex", "LibraryLexicalIndex", "LibraryMember",
    "LibraryVectorIndex", "LibraryVectorIndexes", "MarkdownReader", "PackageStore",
    "PageRenderer", "Phases", "Progress", "QueryEncoder", "QueryEncoding", "QueryVectorizer", "RecordSource",
    "Registry", "RegistryEntry", "Reranker", "RuntimeStore", "SourceAndPages", "SourceReader", "VectorStore",
]
