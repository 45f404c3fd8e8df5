"""SourceResolver: locate a hit in the original book, read it back, render the page.

The facade of the sources role (contract: `SourceResolver(package, runtime_dir)` with
`inspect`, `locate`, `read_source`, `render_page`). It never trusts a record's page or
offsets: the passage is looked for in the original's extracted text (see source_search)
and the locator says how it was verified. Renders go to `runtime_dir/renders/`, never into
the package. Shapes and error codes: contracts/sources.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_DPI, DEFAULT_MAX_CHARS
from book_agent.domain.search.page_profile import PageProfile
from book_agent.domain.sources.page_labels import LabelMatch, find_label
from book_agent.domain.sources.source_results import Locator, PageImage, SourceText
from book_agent.domain.sources.text_match import FUZZY_THRESHOLD, NormalizedText, normalize
from book_agent.ports import SourceAndPages
from book_agent_adapters.sources.contents import ContentsAndHighlights
from book_agent_adapters.sources.epub.reader import EpubSource
from book_agent_adapters.sources.locator_checks import (
    RecordLookup,
    check_book,
    check_max_chars,
    check_span,
    locator_error,
    optional_int,
    reading_window,
    word_window,
)
from book_agent_adapters.sources.passage_search import UnitTexts
from book_agent_adapters.sources.pdf.page_render import MAX_PIXELS
from book_agent_adapters.sources.pdf.page_render import render_page as _render
from book_agent_adapters.sources.pdf.reader import PdfSource
from book_agent_adapters.sources.verify import Claim, build_locator, read_hit, record_locators

METHODS = ("record-metadata", "exact", "normalized", "fuzzy", "unverified")


class SourceResolver(ContentsAndHighlights, SourceAndPages):
    def __init__(self, package: PackageInfo, runtime_dir: Path | str) -> None:
        self.package = package
        self.runtime_dir = Path(runtime_dir)
        self.book_id = package.book_id
        self.kind = package.original_kind
        self._lock = threading.RLock()
        self._pdf: PdfSource | None = None
        self._epub: EpubSource | None = None
        self._units: UnitTexts | None = None
        self.records = RecordLookup(package.database_path)
        self._markdown: str | None = None
        self._markdown_norm: NormalizedText | None = None
        self._record_labels: dict[int, str] | None = None
        self._labels: list[str | None] | None = None

    # -- plumbing --------------------------------------------------------------------------
    def __enter__(self) -> SourceResolver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            for source in (self._pdf, self._epub):
                if source is not None:
                    source.close()
            self._pdf = self._epub = None
            self._units = None
            self.records.close()

    def _original(self) -> Path:
        path = self.package.original_path
        if path is None or self.kind not in ("pdf", "epub") or not path.is_file():
            raise BookAgentError(
                "source.original_missing",
                "the package's original book is missing or of an unknown kind",
                details={"original_path": str(path) if path else None, "kind": self.kind},
                remediation="inspect the package (`book-agent inspect PACKAGE`); meanwhile read book.md (`book-agent markdown BOOK` / the read_markdown tool)",
            )
        return path

    def pdf(self) -> PdfSource:
        with self._lock:
            if self.kind != "pdf":
                raise self._not_renderable()
            if self._pdf is None:
                self._pdf = PdfSource(self._original())
            return self._pdf

    def epub(self) -> EpubSource:
        with self._lock:
            if self.kind != "epub":
                raise locator_error(f"this book's original is {self.kind}, not epub")
            if self._epub is None:
                self._epub = EpubSource(self._original())
            return self._epub

    def units(self) -> UnitTexts:
        """The book's pages (PDF) or spine documents (EPUB) as texts."""
        with self._lock:
            if self._units is None:
                if self.kind == "pdf":
                    pdf = self.pdf()
                    self._units = UnitTexts(pdf.page_count, pdf.page_text)
                else:
                    epub = self.epub()
                    spine = epub.spine
                    self._units = UnitTexts(len(spine), lambda i: epub.chapter(spine[i]).text)
            return self._units

    def markdown_text(self) -> str | None:
        if self._markdown is None:
            path = self.package.markdown_path
            try:
                self._markdown = path.read_text(encoding="utf-8") if path else None
            except (OSError, UnicodeDecodeError):
                return None
        return self._markdown

    def markdown_normalized(self) -> NormalizedText:
        with self._lock:
            if self._markdown_norm is None:
                self._markdown_norm = normalize(self.markdown_text() or "")
            return self._markdown_norm

    def record_page_label(self, page_index: int) -> str | None:
        """The page label the records give this page (used when the PDF has no labels)."""
        with self._lock:
            if self._record_labels is None:
                self._record_labels = self.records.page_labels()
            return self._record_labels.get(page_index)

    def page_label(self, page_index: int, claimed: Any = None) -> str | None:
        """The PDF's own label, else the caller's (a locator's), the records', the printed folio."""
        label = self.pdf().page_label(page_index)
        if label is None and isinstance(claimed, str | int) and not isinstance(claimed, bool) and str(claimed):
            label = str(claimed)
        return next((x for x in (label, self.record_page_label(page_index)) if x is not None), None) \
            or self.pdf().folio(page_index)


    def page_labels(self) -> list[str | None]:
        """Every page's label: the PDF's own, else the records' (not folios: every page's text)."""
        with self._lock:
            if self._labels is None:
                pdf = self.pdf()
                self._labels = [pdf.page_label(i) or self.record_page_label(i) for i in range(pdf.page_count)]
            return self._labels

    def page_for_label(self, label: Any) -> LabelMatch:
        """The page a printed label names (source.page_label_unknown lists the nearest)."""
        if self.kind != "pdf":
            raise locator_error(f"page labels are a PDF's; this book's original is {self.kind}",
                                {"page_label": label if isinstance(label, str) else None})
        return find_label(label, self.page_labels())

    def _page_of(self, page_index: Any, page_label: Any) -> tuple[Any, list[int] | None]:
        """The page index a render or read names by index or label (both: they must agree)."""
        if page_label is None:
            return page_index, None
        match = self.page_for_label(page_label)
        if page_index is not None and page_index != match.page_index:
            raise locator_error(f"page_index {page_index!r} and page_label {page_label!r} name different pages "
                                f"(the label is page_index {match.page_index})",
                                {"page_index": page_index, "page_label": page_label, "labelled": match.pages})
        return match.page_index, match.pages

    def _not_renderable(self) -> BookAgentError:
        return BookAgentError(
            "source.not_renderable",
            f"this book's original is {self.kind or 'unknown'}: it has no fixed pages to render",
            details={"kind": self.kind},
            remediation=("read the chapter text instead (`book-agent source BOOK --locator-json FILE` / the read_source tool);"
                         " its result lists the chapter's own images"),
        )

    # -- use cases -------------------------------------------------------------------------
    def inspect(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "book_id": self.book_id,
            "kind": self.kind,
            "original_path": str(self.package.original_path) if self.package.original_path else None,
            "readable": False,
            "renderable": False,
            "verification_methods": list(METHODS),
            "fuzzy_threshold": FUZZY_THRESHOLD,
            "host_image_support": "unknown",
        }
        try:
            if self.kind == "pdf":
                info["page_count"] = self.pdf().page_count
                info["renderable"] = True
                info["render"] = {"format": "png", "default_dpi": DEFAULT_DPI, "max_pixels": MAX_PIXELS}
            else:
                spine = self.epub().spine
                info["chapter_count"] = len(spine)
                info["chapters"] = [{"spine_index": s.index, "href": s.href} for s in spine[:1000]]
            info["readable"] = True
        except BookAgentError as exc:
            info["error"] = exc.to_dict()
        return info

    def locate(self, hit_or_text: Any, hints: Any = None) -> Locator:
        if hints is not None and not isinstance(hints, dict):
            raise locator_error(f"hints must be an object, not {type(hints).__name__}")
        hit = read_hit(hit_or_text, self.book_id, self.records)
        claim = Claim.from_sources(self, hit, hints or {})
        return cast(Locator, build_locator(self, hit, claim))

    def locate_records(self) -> Iterator[Locator]:
        """Every record's verified locator, in reading order (one pass over the book)."""
        return record_locators(self)

    def read_source(self, locator: Any, max_chars: int = DEFAULT_MAX_CHARS) -> SourceText:
        max_chars = check_max_chars(max_chars)
        if not isinstance(locator, dict):
            raise locator_error(f"a locator must be an object, not {type(locator).__name__}")
        check_book(self.book_id, locator)
        kind = locator.get("kind") or self.kind
        if kind != self.kind:
            raise locator_error(f"the locator is for a {kind} original; this book's is {self.kind}", {"kind": kind})
        out: dict[str, Any] = {"book_id": self.book_id, "kind": self.kind}
        start, end = optional_int(locator, "char_start"), optional_int(locator, "char_end")
        if self.kind == "pdf":
            pdf = self.pdf()
            by_label = locator.get("page_label") if locator.get("page_index") is None else None
            page_index, same_label = self._page_of(optional_int(locator, "page_index"), by_label)
            page = pdf.check_page(page_index)
            if same_label and len(same_label) > 1:
                out["page_label_pages"] = same_label
            text = pdf.page_text(page)
            claimed_label = locator.get("page_label") if locator.get("page_index") == page else None
            label = self.page_label(page, claimed_label)
            out.update(page_index=page, page_label=label, extracted_by="pdfium")
            if label is not None and label not in (self.pdf().page_label(page), claimed_label, self.record_page_label(page)):
                out["page_label_inferred"] = True  # the folio printed on the page (the PDF has no labels)
        else:
            epub = self.epub()
            if locator.get("epub_cfi") is not None and locator.get("href") is None and locator.get("spine_index") is None:
                item, start, end = epub.resolve_cfi(locator["epub_cfi"])  # a reader app's position
                fragment = None
            else:
                item, fragment = self._epub_item(locator)
            chapter = epub.chapter(item)
            text = chapter.text
            fragment = fragment or locator.get("fragment")
            out.update(href=item.href, spine_index=item.index if item.index >= 0 else None,
                       fragment=fragment, images=chapter.images, extracted_by="selectolax")
            if start is None and end is None and fragment in chapter.fragments:
                start = end = chapter.fragments[fragment]
        span = check_span(start, end, len(text))
        lo, hi = word_window(text, *reading_window(len(text), span, max_chars), span)
        out.update(
            text=text[lo:hi], window_start=lo, window_end=hi, text_chars=len(text),
            char_start=span[0] if span else None, char_end=span[1] if span else None,
            span_in_text={"start": span[0] - lo, "end": min(span[1], hi) - lo} if span else None,
            truncated=(hi - lo) < len(text), max_chars=max_chars, page_text_chars=len(text.strip()),
        )
        if not text.strip():
            out["note"] = "no extractable text here (a scan or a figure): render the page or use the images"
        return cast(SourceText, out)

    def _epub_item(self, locator: dict[str, Any]) -> tuple[Any, str | None]:
        epub = self.epub()
        if locator.get("href") is not None:
            return epub.resolve_href(locator["href"])
        index = optional_int(locator, "spine_index")
        spine = epub.spine
        if index is None or not 0 <= index < len(spine):
            raise locator_error("an EPUB locator needs an href (or a spine_index inside the spine)",
                                {"spine_index": index, "chapter_count": len(spine)})
        return spine[index], None

    def page_profile(self, page_index: int) -> PageProfile | None:
        """The PDF page's profile for the visual-fallback advice (PageProfiles); None for an EPUB
        or a page that cannot be read (the advice then rests on the hit's text)."""
        if self.kind != "pdf":
            return None
        try:
            return self.pdf().page_profile(page_index)
        except BookAgentError:
            return None

    def render_page(self, page_index: Any = None, clip: Any = None, scale: Any = None, dpi: Any = DEFAULT_DPI,
                    include_image: bool = False, max_pixels: int = MAX_PIXELS, *,
                    page_label: Any = None) -> PageImage:
        if self.kind != "pdf":
            raise self._not_renderable()
        pdf = self.pdf()
        page_index, same_label = self._page_of(page_index, page_label)
        files = (self.package.archive_manifest or {}).get("files") or {}
        tag = str((files.get("original") or {}).get("sha256") or "")
        if not tag:
            st = pdf.path.stat()
            tag = f"{st.st_size}-{st.st_mtime_ns}"
        renders = self.runtime_dir / "renders" / tag[:16]
        result = _render(pdf, renders, tag, page_index, clip=clip, scale=scale, dpi=dpi,
                         include_image=include_image, max_pixels=max_pixels)
        result["book_id"] = self.book_id
        if result.get("page_label") is None and isinstance(result.get("page_index"), int):
            result["page_label"] = self.record_page_label(result["page_index"])
        if same_label and len(same_label) > 1:
            result["page_label_pages"] = same_label  # the first was rendered
        return cast(PageImage, result)
