"""A PDF original through PDFium (pypdfium2): page text, char boxes, page boxes, rendering.

PDFium is not thread-safe, across documents too, so every call into it holds one
process-wide lock. The document stays open for the life of a `PdfSource` (opening costs
more than a page) and page texts are cached; pages and text pages are closed as soon as
they are used, so nothing waits for the garbage collector (pytest treats the resulting
ResourceWarnings as failures). pypdfium2's exceptions become `source.original_corrupt`.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.page_profile import PageProfile

PDFIUM_LOCK = threading.RLock()


@dataclass(frozen=True)
class PageBox:
    """The page's effective box in PDF user space (origin bottom-left) and its /Rotate.

    Effective: the CropBox clipped to the MediaBox, either inherited from the page tree
    (PDF 32000 7.7.3.4) as PDFium resolves it. pypdfium2's get_cropbox() reads the page's own
    dictionary only and falls back to US letter, so an A4 book whose MediaBox sits in its
    /Pages node came out 612 x 792."""

    x0: float
    y0: float
    x1: float
    y1: float
    rotation: int

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def displayed_size(self) -> tuple[float, float]:
        """Width and height as the page is shown (and rendered): swapped by /Rotate 90 or 270."""
        return (self.height, self.width) if self.rotation in (90, 270) else (self.width, self.height)


def _corrupt(path: Path, what: str, exc: BaseException) -> BookAgentError:
    return BookAgentError(
        "source.original_corrupt",
        f"the original PDF cannot be read ({what}): {exc}",
        details={"path": str(path), "what": what},
        remediation="re-download or rebuild the package; meanwhile read book.md (`book-agent markdown BOOK` / the read_markdown tool)",
    )


def _loose_boxes(textpage: Any, count: int) -> array[float]:
    """[x0, y0, x1, y1] of each char, flat, in PDF points. Loose boxes span the font's line
    height: tight ones of some CJK fonts are 0.01 pt tall, and a readable crop wants whole lines."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    rect = pdfium_c.FS_RECTF()
    flat = array("d", bytes(8 * 4 * count))
    for i in range(count):
        if pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, i, ctypes.byref(rect)):
            flat[4 * i : 4 * i + 4] = array("d", (rect.left, rect.bottom, rect.right, rect.top))
    return flat


class PdfSource:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._doc: Any = None
        self._count: int | None = None
        self._texts: dict[int, str] = {}
        self._boxes: dict[int, array[float]] = {}  # per page: 4 floats a char (see bbox)
        self._labels: dict[int, str | None] = {}
        self._has_labels: bool | None = None
        self._folios: dict[int, str | None] = {}
        self._profiles: dict[int, PageProfile] = {}

    # -- document ------------------------------------------------------------------------
    def _document(self) -> Any:
        if self._doc is None:
            import pypdfium2

            try:
                self._doc = pypdfium2.PdfDocument(str(self.path))
                self._count = len(self._doc)
            except Exception as exc:  # PdfiumError, OSError: all mean "cannot read"
                self._doc = None
                raise _corrupt(self.path, "document", exc) from exc
        return self._doc

    def close(self) -> None:
        with PDFIUM_LOCK:
            if self._doc is not None:
                self._doc.close()
                self._doc = None

    @property
    def page_count(self) -> int:
        with PDFIUM_LOCK:
            self._document()
            assert self._count is not None
            return self._count

    def check_page(self, page_index: Any) -> int:
        if isinstance(page_index, bool) or not isinstance(page_index, int):
            raise BookAgentError(
                "source.page_out_of_range",
                f"page_index must be an integer, not {page_index!r}",
                details={"page_index": page_index},
                remediation="pass a 0-based page index (or a page_label, the number printed on the page)",
            )
        count = self.page_count
        if not 0 <= page_index < count:
            raise BookAgentError(
                "source.page_out_of_range",
                f"page_index {page_index} is outside the book (pages 0..{count - 1})",
                details={"page_index": page_index, "page_count": count},
                remediation=f"use a 0-based page index from 0 to {count - 1}",
            )
        return page_index

    def _page(self, page_index: int) -> Any:
        try:
            return self._document()[page_index]
        except BookAgentError:
            raise
        except Exception as exc:
            raise _corrupt(self.path, f"page {page_index}", exc) from exc

    # -- text ----------------------------------------------------------------------------
    def page_text(self, page_index: int) -> str:
        """The page's extracted text; index i of it is PDFium character i (see char_boxes)."""
        cached = self._texts.get(page_index)
        if cached is not None:
            return cached
        self.check_page(page_index)
        with self._textpage(page_index, "text") as textpage:
            text: str = textpage.get_text_range()
            if len(text) != textpage.count_chars():
                # characters outside the BMP: rebuild one PDFium char at a time so that
                # string offsets stay PDFium char indices (bbox depends on it)
                text = "".join(textpage.get_text_range(i, 1) or "\ufffd" for i in range(textpage.count_chars()))
            # the char boxes now, while the page is open: opening a page costs far more
            # (10-20 ms for a CJK page) than reading its boxes, and a locator needs them
            self._boxes[page_index] = _loose_boxes(textpage, len(text))
        self._texts[page_index] = text
        return text

    @contextmanager
    def _textpage(self, page_index: int, what: str) -> Iterator[Any]:
        """A page's PDFium text page, closed after (see _opened_page)."""
        with self._opened_page(page_index, what) as page:
            textpage = page.get_textpage()
            try:
                yield textpage
            finally:
                textpage.close()

    @contextmanager
    def _opened_page(self, page_index: int, what: str) -> Iterator[Any]:
        """A PDFium page under the PDFium lock, closed after; any failure reads as a corrupt page."""
        with PDFIUM_LOCK:
            page = self._page(page_index)
            try:
                yield page
            except Exception as exc:
                raise _corrupt(self.path, f"{what} of page {page_index}", exc) from exc
            finally:
                page.close()

    def char_boxes(self, page_index: int) -> tuple[str, array[float]]:
        """The page's text and its loose char boxes, flat (4 floats a char, see bbox)."""
        text = self.page_text(page_index)
        return text, self._boxes[page_index]

    def bbox(self, page_index: int, start: int, end: int) -> list[float] | None:
        """Union of the char boxes of text[start:end] in PDF points [x0, y0, x1, y1]."""
        text = self.page_text(page_index)
        flat = self._boxes[page_index]
        wanted = [i for i in range(max(0, start), min(end, len(text))) if not text[i].isspace()]
        boxes = [(flat[4 * i], flat[4 * i + 1], flat[4 * i + 2], flat[4 * i + 3]) for i in wanted]
        real = [b for b in boxes if b[2] > b[0] and b[3] > b[1]]
        if not real:
            return None
        return [round(min(b[0] for b in real), 2), round(min(b[1] for b in real), 2),
                round(max(b[2] for b in real), 2), round(max(b[3] for b in real), 2)]

    def page_label(self, page_index: int) -> str | None:
        if page_index not in self._labels:
            with PDFIUM_LOCK:
                try:
                    label = self._document().get_page_label(page_index)
                except Exception:  # a broken label tree must not hide the page itself
                    label = ""
            self._labels[page_index] = label or None
        return self._labels[page_index]

    def has_labels(self) -> bool:
        """Whether the PDF labels any of its pages itself."""
        if self._has_labels is None:
            self._has_labels = any(self.page_label(i) is not None for i in range(self.page_count))
        return self._has_labels

    def folio(self, page_index: int) -> str | None:
        """The page number printed on the page, read from its text and its neighbours'
        (book_agent/domain/sources/folios.py), for a PDF without labels of its own; None when it has labels or no
        consistent folio is found."""
        from book_agent.domain.sources.folios import edges, infer_folio, window_pages

        if self.has_labels():
            return None
        if page_index not in self._folios:
            pages = window_pages(page_index, self.page_count)
            self._folios[page_index] = infer_folio(page_index, {p: edges(self.page_text(p)) for p in pages})
        return self._folios[page_index]

    def page_profile(self, page_index: int) -> PageProfile:
        """The page's objects counted for the visual-fallback advice (sources/pdf/page_profile.py),
        read once a page: a cited hit's page, not the book's."""
        cached = self._profiles.get(page_index)
        if cached is None:
            from book_agent_adapters.sources.pdf.page_profile import profile_page

            self.check_page(page_index)
            with self._opened_page(page_index, "objects") as page:
                made: list[Any] = []  # the text page, made only if a rule reads text

                def textpage() -> Any:
                    if not made:
                        made.append(page.get_textpage())
                    return made[0]

                try:
                    cached = self._profiles[page_index] = profile_page(page, textpage)
                finally:
                    for each in made:
                        each.close()
        return cached

    # -- geometry and rendering ------------------------------------------------------------
    def page_box(self, page_index: int) -> PageBox:
        self.check_page(page_index)
        import ctypes

        import pypdfium2.raw as pdfium_c

        with self._opened_page(page_index, "box") as page:
            rect = pdfium_c.FS_RECTF()
            if not pdfium_c.FPDF_GetPageBoundingBox(page.raw, ctypes.byref(rect)):
                raise _corrupt(self.path, f"the box of page {page_index}", ValueError("no page box"))
            rotation = int(page.get_rotation()) % 360
        x0, x1 = sorted((float(rect.left), float(rect.right)))
        y0, y1 = sorted((float(rect.bottom), float(rect.top)))
        return PageBox(round(x0, 3), round(y0, 3), round(x1, 3), round(y1, 3), rotation)

    def render_png(self, page_index: int, scale: float, crop: tuple[float, float, float, float]) -> tuple[bytes, int, int]:
        """PNG bytes and pixel size; crop = (left, bottom, right, top) in display orientation."""
        import io

        self.check_page(page_index)
        with self._opened_page(page_index, "rendering") as page:
            bitmap = page.render(scale=scale, crop=crop)
            try:
                # encode before closing: the PIL image may share the bitmap's buffer
                image = bitmap.to_pil()
                buffer = io.BytesIO()
                image.save(buffer, format="PNG", compress_level=1)  # speed over a few % of size
                width, height = image.width, image.height
            finally:
                bitmap.close()
        return buffer.getvalue(), width, height
