"""Printed page numbers (folios) read from page text, for a PDF that has no page labels.

A book's pages print their number in a header or footer: the first or last line of the page's
text, alone (`12`, `- 12 -`, `· xii ·`) or at the line's edge beside a running head
(`12 Chapter 3 Linear maps`, `Linear maps 13`). A number alone proves nothing (a body line may
start with one, a running head may carry a chapter number); a folio is a number that moves with
the page: on nearby pages the same kind (arabic or roman) at the same distance from the page
index. So a page's folio is inferred from a window of pages around it: its own candidate whose
offset (folio - page index) at least MIN_SUPPORT pages of the window share; a page without one
(a chapter opening prints none) takes the offset the nearest pages on both sides agree on.
Sequences may restart (roman front matter, then 1) or skip: each page is judged by its window.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

WINDOW = 6  # pages on each side
MIN_SUPPORT = 3  # pages (the page itself included) sharing a kind and offset
_EDGE = "-–—·•|[](){}<>*_=~.,:;'\"\u3000 \t"
_ARABIC = re.compile(r"[0-9]{1,4}")
_ROMAN = re.compile(r"(?=[ivxlcdm]+$)m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _roman(token: str) -> int | None:
    low = token.lower()
    if not low or not _ROMAN.fullmatch(low) or token not in (low, low.upper()):
        return None
    total = 0
    for a, b in zip(low, low[1:] + " ", strict=True):
        value = _ROMAN_VALUES[a]
        total += -value if b != " " and _ROMAN_VALUES[b] > value else value
    return total


def candidates(first: str, last: str) -> set[tuple[str, int, str]]:
    """(kind, value, as printed) of each number at the edge of the page's first or last line."""
    out: set[tuple[str, int, str]] = set()
    for line in (first, last):
        words = line.strip(_EDGE).split()
        for token in {words[0], words[-1]} if words else set():
            token = token.strip(_EDGE)
            if _ARABIC.fullmatch(token):
                out.add(("arabic", int(token), str(int(token))))
            elif (value := _roman(token)) is not None:
                out.add(("roman", value, token))
    return out


def edges(text: str) -> tuple[str, str]:
    """The first and last non-empty lines of a page's text."""
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[0], lines[-1]) if lines else ("", "")


def infer_folio(page: int, window: dict[int, tuple[str, str]]) -> str | None:
    """The folio of `page` from the edges (first, last line) of the pages around it, or None."""
    found = {p: candidates(*e) for p, e in window.items()}
    offsets = Counter((kind, value - p) for p, cands in found.items() for kind, value, _ in cands)
    own = [(offsets[(kind, value - page)], kind, value, printed) for kind, value, printed in found.get(page, set())
           if offsets[(kind, value - page)] >= MIN_SUPPORT]
    if own:
        _, kind, value, printed = max(own)
        return printed
    before = _nearest(found, offsets, range(page - 1, page - WINDOW - 1, -1))
    after = _nearest(found, offsets, range(page + 1, page + WINDOW + 1))
    if before is None or before != after:
        return None
    kind, offset = before
    value = page + offset
    if value < 1:
        return None
    return str(value) if kind == "arabic" else _to_roman(value)


def _nearest(found: dict[int, set[tuple[str, int, str]]], offsets: Counter[tuple[str, int]],
             pages: range) -> tuple[str, int] | None:
    for p in pages:
        supported = [(offsets[(kind, value - p)], kind, value - p) for kind, value, _ in found.get(p, set())
                     if offsets[(kind, value - p)] >= MIN_SUPPORT]
        if supported:
            _, kind, offset = max(supported)
            return kind, offset
    return None


def _to_roman(value: int) -> str:
    out = []
    for number, letters in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
                            (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
        while value >= number:
            out.append(letters)
            value -= number
    return "".join(out)


def window_pages(page: int, count: int) -> Sequence[int]:
    return range(max(0, page - WINDOW), min(count, page + WINDOW + 1))
