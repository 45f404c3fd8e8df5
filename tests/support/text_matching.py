"""The text-match stages composed as the sources use them, for tests of the matcher."""

from __future__ import annotations

from book_agent.domain.sources.text_match import (
    NormalizedText,
    TextMatch,
    find_exact,
    find_fuzzy,
    find_normalized,
    normalize,
    normalize_key,
)


def match_text(hay: str | NormalizedText, needle: str, hint: int | None = None, fuzzy: bool = True) -> TextMatch | None:
    """The stages in the order the sources use them (adapters/sources/passage_search.py):
    exact, then normalised, then fuzzy when asked."""
    norm = hay if isinstance(hay, NormalizedText) else normalize(hay)
    found = find_exact(norm.original, needle, hint)
    if found is None:
        found = find_normalized(norm, normalize_key(needle), hint)
    return found if found is not None or not fuzzy else find_fuzzy(norm, normalize_key(needle))
