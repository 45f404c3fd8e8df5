"""A PDF page's objects counted for the visual-fallback advice (book_agent/domain/search/page_profile.py).

One pass over the page's objects (forms opened): paths and images with their boxes, text
objects with their font's base name, box and text. Lines are text objects whose vertical
centres fall within one another's spans (sub- and superscripts join their line); a line's
cells are runs of its objects separated by a gap wider than CELL_GAP of the line's height.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from book_agent.domain.search.page_profile import PageProfile

# The maths fonts of TeX (Computer Modern, AMS, Latin Modern Math, the Euler and RSFS
# alphabets), STIX/XITS, Cambria Math and the TeX Gyre maths families; a subset prefix
# (ABCDEF+) is stripped first.
_MATHS_FONT = re.compile(
    r"^(?:CMMI|CMSY|CMEX|CMBSY|CMMIB|MSAM|MSBM|EUFM|EUFB|EUSM|EUEX|RSFS|STIX|XITS|LMMath|"
    r"latinmodern-math|LatinModernMath|CambriaMath|Cambria-Math|Asana|TeXGyre\w*Math|\w*[-_]Math\b|FiraMath|"
    r"NewCMMath|Libertinus\w*Math|SymbolMT$|Symbol$)",
    re.IGNORECASE,
)
_PICTURE_FONT = re.compile(r"^(?:LINE|LINEW|LCIRCLE|LCIRCLEW)10$", re.IGNORECASE)
# words of running text: three letters or more (operator names such as sin, exp, lim, max
# are set in roman inside formulas: not words), or two CJK characters
_WORD = re.compile(r"[A-Za-z]{4,}|[\u3040-\u30ff\u3400-\u9fff]{2,}")
_RULE = 1.5  # a path thinner than this (points) is a rule, not a shape
_ALIGN = 2.0  # cells starting within this many points share a column
CELL_GAP = 0.8  # a gap wider than this many line heights parts two cells
_LEADERS = re.compile(r"(?:\.\s){2,}|\.{4,}|(?:\u2026|\u00b7\s?){2,}")  # a contents line's dots
_NUMBER = re.compile(r"^(?:[-+]?\d+(?:[.,]\d+)*%?|[ivxlcdm]+|[IVXLCDM]+)$")


@dataclass
class _Line:
    bottom: float
    top: float
    items: list[_Item] = field(default_factory=list)


class _Item:
    """One text object: its box and font class; its text is read from PDFium only when a rule
    asks (a line holding maths, a line of three cells or more). Most of a page's lines are
    prose in one run, which never ask: reading every object's text was ~60% of a page's
    profile, and a profile is read on a search's path (issue 46)."""

    __slots__ = ("_obj", "_text", "_textpage", "left", "maths", "right")

    def __init__(self, left: float, right: float, maths: bool, obj: Any, textpage: Callable[[], Any]) -> None:
        self.left, self.right, self.maths, self._obj, self._textpage = left, right, maths, obj, textpage
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            if self._obj.textpage is None:
                self._obj.textpage = self._textpage()  # the page's text page, made on the first ask
            self._text = _text(self._obj)
            self._obj = None
        return self._text

    @property
    def words(self) -> int:
        """Words of running text (none in a maths font)."""
        return 0 if self.maths else len(_WORD.findall(self.text))


def profile_page(page: Any, textpage: Callable[[], Any]) -> PageProfile:
    """The counts of one open pypdfium2 page. `textpage()` gives its text page, for the objects'
    text: asked only when a rule reads some (making it is ~4 ms a page; a page of prose never
    asks)."""
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    area = max(width * height, 1.0)
    texts: list[tuple[float, float, float, float, _Item]] = []
    shapes: list[tuple[float, float, float, float]] = []
    paths = pictures = 0
    image_area = 0.0
    fonts: dict[int | None, str] = {}
    for obj in page.get_objects(max_depth=8):
        kind = obj.type
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            continue
        left, bottom, right, top = obj.get_bounds()
        if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
            image_area += (right - left) * (top - bottom)
        elif kind == pdfium_c.FPDF_PAGEOBJ_PATH:
            paths += 1
            if min(right - left, top - bottom) >= _RULE:  # a rule is no shape
                shapes.append((left, bottom, right, top))
        elif kind == pdfium_c.FPDF_PAGEOBJ_TEXT:
            font = _font_name(obj, fonts)
            if _PICTURE_FONT.match(font):
                pictures += 1
            texts.append((left, bottom, right, top, _Item(left, right, bool(_MATHS_FONT.match(font)), obj, textpage)))
    lines = _lines(texts)
    empty = _empty_shapes(shapes, texts, area)
    return PageProfile(
        text_objects=len(texts), path_objects=paths, empty_shapes=len(empty),
        shape_area=round(min(sum((s[2] - s[0]) * (s[3] - s[1]) for s in shapes) / area, 1.0), 4),
        image_area=round(min(image_area / area, 1.0), 4), picture_glyphs=pictures,
        maths_objects=sum(t[4].maths for t in texts), display_maths_lines=_display_maths(lines),
        column_rows=_column_rows(lines),
    )


def _font_name(obj: Any, names: dict[int | None, str]) -> str:
    """The text object's font's base name without a subset prefix; `names` keeps each font's
    (a page's objects share a few fonts: asked once each, not once an object)."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    font = pdfium_c.FPDFTextObj_GetFont(obj.raw)
    key = ctypes.cast(font, ctypes.c_void_p).value
    if key not in names:
        size = pdfium_c.FPDFFont_GetBaseFontName(font, None, 0) if key else 0
        buffer = ctypes.create_string_buffer(max(int(size), 1))
        if size:
            pdfium_c.FPDFFont_GetBaseFontName(font, buffer, size)
        # a font PDFium cannot name counts as an ordinary one
        names[key] = buffer.value.decode("latin-1").split("+", 1)[-1]
    return names[key]


def _text(obj: Any) -> str:
    try:
        return str(obj.extract())
    except Exception:  # an object PDFium gives no text for (a Type 3 glyph): no words
        return ""


def _lines(texts: list[tuple[float, float, float, float, _Item]]) -> list[_Line]:
    """Text objects grouped into lines, top to bottom: an object joins the line above when its
    vertical span overlaps the line's by half the smaller height, or its centre lies in the
    line's span (a sub- or superscript, a bullet, joins its line)."""
    lines: list[_Line] = []
    for _, bottom, _, top, item in sorted(texts, key=lambda t: -(t[1] + t[3])):
        line = lines[-1] if lines else None
        overlap = 0.0 if line is None else min(top, line.top) - max(bottom, line.bottom)
        smaller = max(min(top - bottom, 0.0 if line is None else line.top - line.bottom), 0.1)
        if line is None or not (overlap >= 0.5 * smaller or line.bottom <= (bottom + top) / 2 <= line.top):
            line = _Line(bottom, top)
            lines.append(line)
        line.bottom, line.top = min(line.bottom, bottom), max(line.top, top)
        line.items.append(item)
    return lines


def _display_maths(lines: list[_Line]) -> int:
    """Lines of maths on their own: maths-font text, at least two characters of it, no word
    of running text, and set in from the text block's left edge (a display is centred or
    indented; a bullet or a stray symbol sits at the margin)."""
    if not lines:
        return 0
    lefts = sorted(min(i.left for i in line.items) for line in lines)
    rights = sorted(max(i.right for i in line.items) for line in lines)
    margin, width = lefts[len(lefts) // 20], rights[-1 - len(rights) // 20] - lefts[len(lefts) // 20]
    count = 0
    for line in lines:
        if not any(i.maths for i in line.items):
            continue  # no maths on it: its text is never read
        maths = sum(len(i.text.strip()) for i in line.items if i.maths)
        left = min(i.left for i in line.items)
        count += maths >= 2 and left >= margin + 0.08 * width and not any(i.words for i in line.items)
    return count


def _cells(line: _Line) -> list[tuple[float, list[_Item]]]:
    """The line's cells, where each starts and its objects: runs of objects apart by more than
    CELL_GAP of the line's height (geometry only: a cell's text is read when asked)."""
    gap = CELL_GAP * max(line.top - line.bottom, 1.0)
    cells: list[tuple[float, list[_Item]]] = []
    end = None
    for item in sorted(line.items, key=lambda i: i.left):
        if end is None or item.left - end > gap:
            cells.append((item.left, [item]))
        else:
            cells[-1][1].append(item)
        end = item.right if end is None else max(end, item.right)
    return cells


def _column_rows(lines: list[_Line]) -> int:
    """Lines of three or more cells, two of whose starts (after the first) other such lines
    share. A line with dot leaders, or ending in its only number, is a contents or index
    entry (the page it points to), not a table's row."""
    rows = []
    for line in lines:
        cells = _cells(line)
        if len(cells) < 3:
            continue  # one or two runs: prose, never a row (its text is not read)
        texts = ["".join(item.text for item in items) for _, items in cells]
        numbers = [bool(_NUMBER.match(text.strip())) for text in texts]
        leaders = any(_LEADERS.search(text) for text in texts)
        if not leaders and not (numbers[-1] and sum(numbers) == 1):
            rows.append([start for start, _ in cells])
    count = 0
    for n, starts in enumerate(rows):
        others = [c for m, other in enumerate(rows) if m != n for c in other[1:]]
        shared = sum(any(abs(start - c) <= _ALIGN for c in others) for start in starts[1:])
        count += shared >= 2
    return count


def _empty_shapes(shapes: list[tuple[float, float, float, float]],
                  texts: list[tuple[float, float, float, float, _Item]], area: float) -> list[tuple[float, ...]]:
    """Shapes of some size with no text object's centre inside: the parts of a drawing (a
    box around a code listing or a shaded table cell holds its text)."""
    centres = [((t[0] + t[2]) / 2, (t[1] + t[3]) / 2) for t in texts]
    return [s for s in shapes if (s[2] - s[0]) * (s[3] - s[1]) >= 0.0005 * area
            and not any(s[0] <= x <= s[2] and s[1] <= y <= s[3] for x, y in centres)]
