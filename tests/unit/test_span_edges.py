"""Issue 43, item 5: a normalised match cuts the record's text, not the text less its leading
minus sign, private-use bracket glyphs or control glyphs (their key form is empty)."""

from __future__ import annotations

import pytest

from book_agent.domain.sources.text_match import (
    find_normalized,
    normalize,
    normalize_key,
    widen_to_vanished,
)


@pytest.mark.parametrize(("hay", "needle"), [
    ("so x = \u22125 and", "\u22125"),                       # a minus sign
    ("set -3.2 here", "-3.2"),                               # an ASCII hyphen-minus
    ("see \ue000Smith 1990\ue001 for", "\ue000Smith 1990\ue001"),  # private-use brackets of a PDF font
    ("a\x02b\x03 c", "\x02b\x03"),                           # control glyphs (unmapped PDFium glyphs)
    ("x \u2212\u2212y\u00ad z", "\u2212\u2212y\u00ad"),      # runs of them, a soft hyphen at the end
])
def test_a_normalised_match_keeps_the_needles_own_edges(hay: str, needle: str) -> None:
    match = find_normalized(normalize(hay), normalize_key(needle))
    assert match is not None
    start, end = widen_to_vanished(hay, match.start, match.end, needle)
    assert hay[start:end] == needle


def test_it_widens_no_further_than_the_needle_and_never_onto_spacing() -> None:
    hay = "a \u2212\u2212 5 b"
    match = find_normalized(normalize(hay), normalize_key("5"))
    assert match is not None
    assert widen_to_vanished(hay, match.start, match.end, "5") == (match.start, match.end)  # the needle has none
    start, _ = widen_to_vanished(hay, match.start, match.end, "\u2212 5")
    assert hay[start:match.end] == "\u2212 5"  # one minus: the needle's own run, spacing inside it kept
    start, _ = widen_to_vanished(hay, match.start, match.end, "\u2212\u2212\u22125")
    assert hay[start:match.end] == "\u2212\u2212 5"  # the hay has only two
