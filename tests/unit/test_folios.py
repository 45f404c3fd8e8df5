"""Issue 43, item 8: printed folios read from page text (book_agent/domain/sources/folios.py)."""

from __future__ import annotations

from book_agent.domain.sources.folios import candidates, infer_folio, window_pages


def _labels(pages: dict[int, tuple[str, str]]) -> list[str | None]:
    count = max(pages) + 1
    return [infer_folio(p, {q: pages.get(q, ("", "")) for q in window_pages(p, count)}) for p in range(count)]


def test_roman_front_matter_then_arabic_with_a_chapter_opening_between() -> None:
    pages = {0: ("A Book", "Author")}
    pages.update({p: ("Preface", f"– {r} –") for p, r in zip(range(1, 5), ["i", "ii", "iii", "iv"], strict=True)})
    pages.update({p: (f"{p - 4} Chapter 1 Vectors" if p % 2 else f"Vectors {p - 4}", "and so on.") for p in range(5, 16)})
    pages[9] = ("Chapter 2", "the end of a paragraph.")  # an opening page prints no folio
    pages[12] = ("42 apples were counted", "in the orchard, 7")  # numbers in the body are not folios
    assert _labels(pages) == [None, "i", "ii", "iii", "iv", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"]


def test_restarts_and_skips_are_judged_page_by_page() -> None:
    pages = {p: ("Head", str(p + 1)) for p in range(0, 8)}
    pages.update({p: ("Head", str(p - 7)) for p in range(8, 16)})  # part two starts again at 1
    pages.update({p: ("Head", str(p + 20)) for p in range(16, 24)})  # plates skipped: 36, 37 ...
    labels = _labels(pages)
    assert labels[:8] == [str(p + 1) for p in range(8)] and labels[8:16] == [str(p - 7) for p in range(8, 16)]
    assert labels[16:] == [str(p + 20) for p in range(16, 24)]


def test_a_constant_number_is_not_a_folio() -> None:
    pages = {p: ("Chapter 3", "2026 edition") for p in range(10)}
    assert _labels(pages) == [None] * 10
    assert candidates("Chapter 3 Linear maps", "xii") == {("roman", 12, "xii")}  # 3 is not at an edge
    assert candidates("Chapter 3", "") == {("arabic", 3, "3")}
    assert candidates("Mix", "VI") == {("roman", 6, "VI")} and candidates("", "Ivy") == set()
