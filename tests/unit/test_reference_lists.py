"""Contents and index pages are not tables or formulas (issue 43): their numbers are the pages
they point to and their symbols are entries' samples. Variants of each form, lines kept and
whitespace collapsed, and texts that must still count (coordinates, numeric tables, prose)."""

from __future__ import annotations

import re

import pytest

from book_agent.domain.search import visual_signals as signals
from book_agent.domain.search.visual_fallback import VisualFallbackPolicy

CONTENTS_LEADERS = "\n".join(f"{c}.{s} Section title number {s} . . . . . . . . {10 * c + s}" for c in (1, 2) for s in range(1, 6))
CONTENTS_SHORT_LEADERS = "\n".join(f"4.3.{s} 指数、上下标和导数 . . . {40 + s}" for s in range(1, 10))
CONTENTS_DOTTED_NUMBERS = "\n".join(f"5.5.{s} 手动更改页眉页脚的内容 {70 + s}" for s in range(1, 10))
CONTENTS_ELLIPSIS = "\n".join(f"第{n}章 标题……………{n * 12}" for n in range(1, 10))
INDEX_LINES = "\n".join(["\\fcolorbox", "(color/xcolor), 84", "figure 环境", ", 35", ", 72", "\\frac", "(数学命令), 42",
                         "\\fill", ", 68", "float 宏包", ", 35", ", 72", "\\flushbottom", ", 72"])
INDEX_ENTRIES = "\n".join(f"term{n}, {n * 3}, {n * 7}" for n in range(1, 12))


@pytest.mark.parametrize("text", [CONTENTS_LEADERS, CONTENTS_SHORT_LEADERS, CONTENTS_DOTTED_NUMBERS,
                                  CONTENTS_ELLIPSIS, INDEX_LINES, INDEX_ENTRIES])
def test_contents_and_index_pages_are_reference_lists(text: str) -> None:
    assert signals.reference_list(text)
    assert signals.numeric_rows(text) < 3  # no row of a contents page is a table's


@pytest.mark.parametrize("text", [INDEX_LINES, INDEX_ENTRIES])
def test_a_joined_index_is_a_reference_list(text: str) -> None:
    assert signals.reference_list(re.sub(r"\s+", " ", text))


TIKZ = "\n".join(["\\begin{tikzpicture}", "\\draw (0,0) -- (1, 1) -- (2,0);", "\\draw[->] (0, 0) -- (3, 0);",
                  "\\fill (1,1) circle (2pt);", "\\node at (1, 2) {A};", "\\end{tikzpicture}", "a", "b", "c"])
NUMERIC_TABLE = "\n".join(["Year Sales Cost Profit", "2019 120 80 40", "2020 150 90 60", "2021 170 95 75",
                           "2022 160 100 60", "2023 200 110 90", "2024 210 120 90", "2025 230 130 100"])
PROSE = ("In 1865, the river rose, and in 1866, 1867 and 1868 it rose again; the town, which had 300 houses, "
         "kept 12 boats, 4 bridges and a ferry.\n") * 4


@pytest.mark.parametrize("text", [TIKZ, NUMERIC_TABLE, PROSE])
def test_coordinates_tables_and_prose_are_not_reference_lists(text: str) -> None:
    assert not signals.reference_list(text)
    assert not signals.reference_list(re.sub(r"\s+", " ", text))


def test_a_numeric_table_still_reads_as_one() -> None:
    assert signals.numeric_rows(NUMERIC_TABLE) >= 3


def test_an_index_page_with_maths_samples_gets_no_page_image() -> None:
    """An index lists maths commands beside their symbols (∑, ∂, →): neither the text's maths
    nor the page's profile sends its hit to the page."""
    from book_agent.domain.search.page_profile import PageProfile

    index = "\n".join(["\\sum", "(数学符号), 43", "∑", "\\partial", "(数学符号), 42", "∂", "\\to", ", 45", "→",
                       "\\nabla", ", 42", "∇", "\\overbrace", "(数学重音), 44", "z}|{", "\\fill", ", 68",
                       "float 宏包", ", 35", ", 72"])  # as on lshort's index: 40% to 50% of lines point at pages
    hit = {"text": index, "source_locator": {"kind": "pdf", "page_index": 3}}
    asked: list[int] = []

    def pages(h: object) -> PageProfile:
        asked.append(1)
        return PageProfile(maths_objects=10, display_maths_lines=2)

    advice = VisualFallbackPolicy().evaluate_hits("what does this say", [hit], pages=pages)
    assert advice[0]["recommended"] is False and asked == []
