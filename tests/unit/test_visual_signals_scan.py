"""The hit-text signals scan each text once (issue 29: one regex call per word was a third of a
warm one-book search); they must answer exactly as the per-cell code they replaced, on any text."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from book_agent.domain.search import visual_signals as signals

CELL = re.compile(r"^[-+]?(?:\d+(?:[.,]\d+)*|\d*\.\d+)(?:%|pt|mm|cm|ms|s|h|KB|MB|GB)?$")


def numeric_rows_per_cell(text: str) -> int:
    """numeric_rows as first written: one match per whitespace-separated cell."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) <= 2:
        cells = text.split()
        numbers = sum(bool(CELL.match(c)) for c in cells)
        return numbers // 3 if cells and numbers >= 0.4 * len(cells) and not signals.looks_like_code(text) else 0
    rows = 0
    for line in lines:
        cells = line.split()
        if len(cells) < 3 or signals._CODE_PUNCT.search(line) or signals._CODE_LINE.search(line):
            continue
        if sum(bool(CELL.match(c)) for c in cells) >= 2:
            rows += 1
    return rows


def caption_scanned(text: str) -> str | None:
    found = signals._CAPTION.search(text)
    return None if found is None else "table" if found.group(1) in ("表", "Table", "TABLE") else "figure"


# words, numbers of every shape the cell pattern knows (and near misses), and every kind of space
PIECES = st.sampled_from(["12", "3.5", "-4", "+7", "1,000", ".5", "5.", "12%", "3pt", "4ms", "2GB", "1.2.3", "x1",
                          "1x", "١٢", "٣.٤", "word", "Table", "Figure", "Fig.", "表", "图", "圖", "1:", "：", "2-1",
                          "(", ")", ";", "=", "{", "def f(", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003",
                          "\u3000", "\x1c", "\u200b", "\u2028", "\x85", "\v", "\f"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=60).map("".join))
@example("1 2 3 4 5 6 word")
@example("a\n1 2 3\n4 5 6\n7 8 9\n")
@example("see Table 3.2: the results")
def test_the_single_scans_answer_as_the_per_cell_code(text: str) -> None:
    assert signals.numeric_rows(text) == numeric_rows_per_cell(text)
    assert signals.caption(text) == caption_scanned(text)


def text_reasons_scanning_all(index: int, text: str, min_chars: int) -> list[str]:
    """The hit-text reasons with every scan run (no ASCII shortcut), as first written."""
    from book_agent.domain.search import visual_fallback as vf

    stripped, out = text.strip(), []
    if len(stripped) < min_chars and vf._weighted_length(stripped) < min_chars and signals.has_visual_glyph(stripped):
        out.append("hit.text_too_short")
    if "\ufffd" in text:
        out.append("hit.replacement_chars")
    if vf._PRIVATE_USE.search(text):
        out.append("hit.private_use_chars")
    if stripped and signals.broken_math(stripped):
        out.append("hit.broken_math")
    kind = caption_scanned(text)
    if kind is not None:
        out.append(f"hit.{kind}_caption")
    elif numeric_rows_per_cell(text) >= vf.TABLE_ROWS:
        out.append("hit.table_rows")
    if signals.figure_glyphs(text) >= vf.FIGURE_GLYPHS:
        out.append("hit.figure_glyphs")
    return out


GLYPHS = st.sampled_from(["√", "∑", "α", "±", "×", "→", "✲", "■", "\ufffd", "\ue000", "x", "1", "\n", " ", "表 1:"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.one_of(PIECES, GLYPHS, st.text(max_size=3)), max_size=50).map("".join))
def test_the_hit_text_reasons_are_those_of_every_scan(text: str) -> None:
    from book_agent.domain.search.visual_fallback import _text_reasons

    assert [r["code"] for r in _text_reasons(0, text, 40)] == text_reasons_scanning_all(0, text, 40)
