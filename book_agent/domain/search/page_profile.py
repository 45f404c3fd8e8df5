"""What a PDF page itself says about its content: the page objects behind the text.

A hit's extracted text loses what made its page worth seeing: a plot drawn with paths has no
text at all, a table's rules and a formula's layout are gone, and once an upstream pipeline
collapses whitespace even the broken lines of typeset maths are. The page's objects keep
them: drawn paths and images (a figure), text set in columns (a table), text
set in maths fonts (CMMI, CMSY, STIX, Cambria Math ...) on lines of their own (display
maths). An adapter reads them once per page (lazily, for a cited hit, and keeps them);
`page_signals` turns them into the visual-fallback reasons.

The thresholds were chosen on the tune half of the labelled set (tools/eval/eval_visual_fallback.py,
eval/visual_fallback/README.md) and reported on the other half.
"""

from __future__ import annotations

from dataclasses import dataclass

DRAWN_PATHS = 100  # path objects on one page: a plot or a diagram drawn in many strokes
DRAWN_SHAPES = 3  # paths with an area (not a rule) holding no text: the parts of a diagram
SHAPE_AREA = 0.25  # share of the page covered by drawn shapes: a chart's frame and fills
IMAGE_AREA = 0.05  # share of the page covered by images: a photograph, a scanned figure
DISPLAY_MATH_LINES = 1  # lines set apart in maths fonts with no words around them
COLUMN_ROWS = 4  # lines whose cells start at the same places as other lines' cells


@dataclass(frozen=True, slots=True)
class PageProfile:
    """Counts read from one page's objects (never its text's meaning)."""

    text_objects: int = 0
    path_objects: int = 0
    empty_shapes: int = 0  # paths with an area, holding no text object
    shape_area: float = 0.0  # share of the page's area those cover
    image_area: float = 0.0  # share of the page's area images cover
    picture_glyphs: int = 0  # glyphs of LaTeX's picture fonts (line, circle pieces)
    maths_objects: int = 0  # text objects in a maths font
    display_maths_lines: int = 0  # lines of maths-font text with no word of running text
    column_rows: int = 0  # lines of several cells aligned with other lines' cells


def page_signals(profile: PageProfile) -> tuple[tuple[str, str], ...]:
    """(code, detail) of each thing the page shows that its text cannot carry."""
    out: list[tuple[str, str]] = []
    if profile.image_area >= IMAGE_AREA:
        out.append(("page.images", f"images cover {profile.image_area:.0%} of the page"))
    drawn = (profile.path_objects >= DRAWN_PATHS or profile.empty_shapes >= DRAWN_SHAPES
             or profile.shape_area >= SHAPE_AREA or profile.picture_glyphs >= 3)
    if drawn:
        out.append(("page.drawing", f"the page draws a figure ({profile.path_objects} paths, "
                                    f"{profile.empty_shapes} shapes without text)"))
    if profile.display_maths_lines >= DISPLAY_MATH_LINES:
        out.append(("page.display_maths", f"{profile.display_maths_lines} lines of the page are typeset maths"))
    if profile.column_rows >= COLUMN_ROWS:
        out.append(("page.table_layout", f"the page sets text in columns ({profile.column_rows} aligned rows)"))
    return tuple(out)
