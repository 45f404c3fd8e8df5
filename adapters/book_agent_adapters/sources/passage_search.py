"""Where in the original is this passage? Search order and verification, PDF and EPUB alike.

A book is a sequence of *units* (PDF pages, EPUB spine documents). A passage is looked for
on the unit its record names first, then on neighbouring units, then in the whole book:

1. claimed unit, then neighbours (±1, ±2): exact, then normalised match;
2. every other unit: exact, then normalised (an exact or normalised match anywhere beats
   any fuzzy one: a misquote must not be pinned to an approximate look-alike when the
   passage itself is in the book);
3. fuzzy on the near units and on the few other units (trigram share >= MIN_GRAM_SHARE) whose
   5-gram share with the passage is highest (ties: the shorter unit, where the shared grams
   are denser, e.g. a chapter rather than the endnotes quoting it); the best score wins, the
   earlier candidate on a tie, and it is kept if its score >= FUZZY_THRESHOLD.

Anything else is `unverified`, reported with the best candidate score found.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from book_agent.domain.sources.text_match import (
    FUZZY_THRESHOLD,
    NormalizedText,
    TextMatch,
    find_exact,
    find_fuzzy,
    find_normalized,
    fuzzy_bound,
    gram_share,
    normalize,
)

NEIGHBOURS = 2
FUZZY_BOOK_CANDIDATES = 4
MIN_GRAM_SHARE = 0.5


@dataclass(frozen=True)
class Found:
    unit: int | None  # None: not found
    match: TextMatch | None
    best_score: float  # best candidate score, even when below the threshold
    stage: str  # claimed | neighbour | book | none


class UnitTexts:
    """Texts of a book's units with their normalised forms, computed once and cached."""

    def __init__(self, count: int, text_of: Callable[[int], str]) -> None:
        self.count = count
        self._text_of = text_of
        self._norm: dict[int, NormalizedText] = {}
        self._lock = threading.Lock()

    def text(self, unit: int) -> str:
        return self._text_of(unit)

    def normalized(self, unit: int) -> NormalizedText:
        cached = self._norm.get(unit)
        if cached is None:
            cached = normalize(self._text_of(unit))
            with self._lock:
                self._norm[unit] = cached
        return cached


def _near_units(claimed: int | None, count: int) -> list[int]:
    if claimed is None or not 0 <= claimed < count:
        return []
    out = [claimed]
    for step in range(1, NEIGHBOURS + 1):
        out.extend(u for u in (claimed - step, claimed + step) if 0 <= u < count)
    return out


def _stage(unit: int, claimed: int | None, near: list[int]) -> str:
    if unit == claimed:
        return "claimed"
    return "neighbour" if unit in near else "book"


def find_passage(units: UnitTexts, needle: str, needle_key: str, claimed: int | None, hint: int | None) -> Found:
    near = _near_units(claimed, units.count)
    for unit in near:
        unit_hint = hint if unit == claimed else None
        found = find_exact(units.text(unit), needle, unit_hint) or find_normalized(units.normalized(unit), needle_key, unit_hint)
        if found is not None:
            return Found(unit, found, 1.0, _stage(unit, claimed, near))
    near_set = set(near)
    rest = [u for u in range(units.count) if u not in near_set]
    for unit in rest:  # plain find first: C speed, no normalisation needed
        found = find_exact(units.text(unit), needle)
        if found is not None:
            return Found(unit, found, 1.0, "book")
    for unit in rest:
        found = find_normalized(units.normalized(unit), needle_key)
        if found is not None:
            return Found(unit, found, 1.0, "book")
    ranked = []
    for unit in rest:
        key = units.normalized(unit).key
        share = gram_share(key, needle_key)
        if share >= MIN_GRAM_SHARE:  # 5-grams tell a passage from a long unit that merely has its trigrams
            ranked.append((-gram_share(key, needle_key, q=5), len(key), unit))
    candidates = near + [unit for *_, unit in sorted(ranked)[:FUZZY_BOOK_CANDIDATES]]
    best = _best_fuzzy(units, list(dict.fromkeys(candidates)), needle_key)
    if best is not None and best[1].score >= FUZZY_THRESHOLD:
        return Found(best[0], best[1], best[1].score, _stage(best[0], claimed, near))
    return Found(None, None, best[1].score if best else 0.0, "none")


def _best_fuzzy(units: UnitTexts, candidates: list[int], needle_key: str) -> tuple[int, TextMatch] | None:
    """The best-scoring fuzzy match among candidates (the earlier candidate on a tie).

    A unit cannot score above fuzzy_bound (its key length against the needle's), so units are
    tried from the highest bound down and one that cannot beat the best so far is skipped:
    same answer, but a long quotation is not aligned with every short unit sharing its words.
    """
    bounds = {unit: fuzzy_bound(len(units.normalized(unit).key), len(needle_key)) for unit in candidates}
    order = {unit: index for index, unit in enumerate(candidates)}
    best: tuple[int, TextMatch] | None = None
    for unit in sorted(candidates, key=lambda u: (-bounds[u], order[u])):
        if best is not None and bounds[unit] < best[1].score:
            break  # sorted by bound: none of the rest can win either
        fuzzy = find_fuzzy(units.normalized(unit), needle_key)
        if fuzzy is None:
            continue
        if best is None or (fuzzy.score, -order[unit]) > (best[1].score, -order[best[0]]):
            best = (unit, fuzzy)
    return best
