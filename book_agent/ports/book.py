"""Ports of one book's original and rendition, and the factory of a book's parts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.query_runtime_spec import QueryRuntimeSpecDict
from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.domain.search.page_profile import PageProfile
from book_agent.domain.sources.contents import Neighbours, TableOfContents
from book_agent.domain.sources.source_results import (
    Locator,
    MarkdownSlice,
    PageImage,
    Skill,
    SourceText,
)
from book_agent.ports.search import QueryVectorizer, Reranker
from book_agent.ports.storage import LexicalIndex, PassageTerms, RecordSource, VectorStore


@runtime_checkable
class SourceReader(Protocol):
    """The original (PDF or EPUB): where a passage is, and its text back."""

    def locate(self, hit_or_text: str | Mapping[str, object],
               hints: Mapping[str, object] | None = None) -> Locator:
        """A verified locator for a hit, a record (as a dict) or a quotation (contracts/sources.md).
        Raises BookAgentError(code='source.*') for a bad locator or hint, an unfound quotation."""
        ...
    def read_source(self, locator: Mapping[str, object], max_chars: int = 12000) -> SourceText:
        """The original's text around the locator. Raises source.wrong_book, source.locator_invalid."""
        ...
    def locate_records(self) -> Iterator[Locator]:
        """The verified locator of every record of the book, in reading order (a record not
        found is method `unverified`; an unreadable original gives `record-metadata` claims).
        Raises BookAgentError(code='source.database_unreadable')."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class PageRenderer(Protocol):
    """Page images of a fixed-layout original, cached in the runtime dir."""

    def render_page(self, page_index: int | None = None, clip: Sequence[float] | None = None,
                    scale: float | None = None, dpi: float = 150, include_image: bool = False, *,
                    page_label: str | None = None) -> PageImage:
        """The page by 0-based index or printed label. Raises BookAgentError (source.*) for an
        EPUB, a bad page, label, clip or dpi (contracts/sources.md)."""
        ...
    def render_highlights(self, targets: Sequence[str | Mapping[str, object]], page_index: int | None = None,
                          clip: Sequence[float] | None = None, dpi: float = 150, include_image: bool = False, *,
                          page_label: str | None = None) -> PageImage:
        """The page with each target ({"record_id"} or a quotation) highlighted from PDFium's
        char boxes; the page asked for, else the first target's. Raises as render_page and
        locate do (source.record_not_found, source.quote_not_found, source.highlight_invalid)."""
        ...


@runtime_checkable
class PageProfiles(Protocol):
    """What a fixed-layout original's page holds besides its text (drawn paths, images,
    maths-font lines, text in columns), for the visual-fallback advice."""

    def page_profile(self, page_index: int) -> PageProfile | None:
        """The page's profile, read on first use and kept; None when the book has no pages
        (an EPUB) or the page cannot be read. Never raises: advice must not fail a search."""
        ...


@runtime_checkable
class BookNavigation(Protocol):
    """The book's own structure: its table of contents and reading order."""

    def table_of_contents(self) -> TableOfContents: ...
    def records_around(self, record_id: str, around: int) -> Neighbours:
        """Raises source.record_not_found, source.around_invalid."""
        ...


@runtime_checkable
class MarkdownReader(Protocol):
    """The package's Markdown rendition (book.md) and its agent skill (SKILL.md)."""

    def read_markdown(self, package: PackageInfo, *, record_span: tuple[int | None, int | None] | None,
                      record_id: str | None, start: int | None, end: int | None,
                      heading: str | None, context_chars: int) -> MarkdownSlice:
        """Exactly one of a record's span, a range or a heading; raises markdown.* otherwise."""
        ...
    def read_skill(self, package: PackageInfo) -> Skill:
        """Raises BookAgentError(code='skill.missing') when the package has no SKILL.md."""
        ...


@runtime_checkable
class BookParts(Protocol):
    """Opens the adapters one registered book needs. Each is opened once per process by the
    caller (services/open_book.py) and closed by it; nothing is opened at construction."""

    def records(self, package: PackageInfo) -> RecordSource: ...
    def lexical_index(self, sidecar_path: Path) -> LexicalIndex: ...
    def vector_store(self, package: PackageInfo, runtime_dir: Path, database_sha256: str | None) -> VectorStore: ...
    def query_runtime(self, spec: QueryRuntimeSpecDict, config: RuntimeConfig, cache_dir: Path) -> QueryVectorizer: ...
    def reranker(self, config: RuntimeConfig, runtime_dir: Path) -> Reranker | None:
        """None for provider 'none'; raises BookAgentError(code='rerank.*') when it cannot load."""
        ...
    def sources(self, package: PackageInfo, runtime_dir: Path) -> SourceAndPages: ...
    def passage_terms(self) -> PassageTerms | None:
        """The reader of passages' terms a search's passage-reading step uses (one for every
        book of the process: its cache serves them all); None: no such step. By default, None."""
        return None
    def close(self) -> None:
        """Let go of what the parts keep for every book (the passage reader's cache); they
        open again on use. By default, nothing."""
        return None


@runtime_checkable
class SourceAndPages(SourceReader, PageRenderer, BookNavigation, Protocol):
    """The sources adapter serves both roles (one open document per book)."""
