"""A quote a reader copies locates exactly or normalised, whatever the typography of the page.

The page text is generated the way PDFium and EPUB readers give it: PDFium's line-end hyphen
mark U+FFFE (lines joined around it), hyphens and soft hyphens before line breaks, line breaks
inside words, no-break and thin spaces, word joiners and zero-width spaces, ligatures (ﬁ ﬂ ﬀ ﬃ),
full-width letters and digits, typographic quotes and dashes, private-use glyphs and control
characters between words. The reader's quote is the clean text of some of its words.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from book_agent.domain.sources.text_match import normalize_key
from tests.support.text_matching import match_text

WORD = st.text(alphabet="abcdefilnorstuxyzABCFT0123456789", min_size=1, max_size=9)
COMPOUND = st.tuples(WORD, WORD).map(lambda p: f"{p[0]}-{p[1]}")
QUOTED = WORD.map(lambda w: f'"{w}"') | WORD.map(lambda w: f"'{w}'")
TOKEN = st.one_of(WORD, WORD, WORD, COMPOUND, QUOTED)

SPACES = [" ", "\u00a0", "\r\n", " \r\n", "\u2009", "\u200a", "\u202f", "\n", " \u2060", "\u3000"]
# inside a word: where a line may break, and the invisible marks typesetters leave
WORD_BREAKS = ["\ufffe", "-\r\n", "\u00ad", "\u00ad\r\n", "\r\n", "\u2060", "\u200b", "\ufeff", "\u200d"]
LIGATURES = {"ffi": "\ufb03", "ffl": "\ufb04", "ff": "\ufb00", "fi": "\ufb01", "fl": "\ufb02"}
BETWEEN_WORDS = ["\ue000 ", " \uf8ff", "\x10", " \x7f "]  # private-use glyphs, unmapped control glyphs
QUOTES = {'"': ["\u201c", "\u201d", "\u201e", '"'], "'": ["\u2018", "\u2019", "'"], "-": ["\u2010", "\u2011", "\ufffe", "-\r\n", "\u2013", "-"]}


def _fullwidth(ch: str) -> str:
    return chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch


@st.composite
def rendered_word(draw: st.DrawFn, word: str) -> str:
    """One word as a page's text layer may hold it."""
    out, i = "", 0
    while i < len(word):
        lig = next((k for k in LIGATURES if word.startswith(k, i)), None)
        if lig is not None and draw(st.booleans()):
            out += LIGATURES[lig]
            i += len(lig)
        else:
            ch = word[i]
            if ch in QUOTES:
                out += draw(st.sampled_from(QUOTES[ch]))
            else:
                out += _fullwidth(ch) if draw(st.integers(0, 5)) == 0 else ch
            i += 1
        if 0 < i < len(word) and draw(st.integers(0, 6)) == 0:
            out += draw(st.sampled_from(WORD_BREAKS))
    return out


@st.composite
def page_and_quote(draw: st.DrawFn) -> tuple[str, str, str]:
    """(page text, the reader's clean quote, the same words copied verbatim from the page)."""
    words = draw(st.lists(TOKEN, min_size=6, max_size=40))
    lo = draw(st.integers(0, len(words) - 3))
    hi = draw(st.integers(lo + 2, min(len(words), lo + 15)))
    pieces: list[str] = []
    for index, word in enumerate(words):
        if index:
            pieces.append(draw(st.sampled_from(SPACES)))
            if draw(st.integers(0, 8)) == 0 and not lo < index < hi:
                pieces.append(draw(st.sampled_from(BETWEEN_WORDS)))
        pieces.append(draw(rendered_word(word)))
    # where the quoted words start and end in the page (word pieces sit at even positions)
    start = sum(len(p) for p in pieces[: 2 * lo])
    end = sum(len(p) for p in pieces[: 2 * (hi - 1) + 1])
    page = "".join(pieces)
    return page, " ".join(words[lo:hi]), page[start:end]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page_and_quote())
def test_a_clean_quote_of_a_typeset_page_locates_exactly_or_normalised(case: tuple[str, str, str]) -> None:
    page, quote, copied = case
    assume(len(normalize_key(quote)) >= 2)
    found = match_text(page, quote, fuzzy=False)
    assert found is not None, (page, quote)
    assert found.method in ("exact", "normalized")
    assert normalize_key(page[found.start : found.end]) == normalize_key(quote)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page_and_quote())
def test_a_quote_copied_verbatim_from_the_page_locates_exactly(case: tuple[str, str, str]) -> None:
    page, _, copied = case
    assume(copied.strip())
    found = match_text(page, copied, fuzzy=False)
    assert found is not None and found.method == "exact"
    assert page[found.start : found.end] == copied


CJK = st.text(alphabet="孫子曰兵者國之大事死生地存亡道不可察也知己彼百戰殆", min_size=2, max_size=12)
CJK_PUNCT = {"，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "！": "!", "？": "?"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(CJK, st.sampled_from(sorted(CJK_PUNCT))), min_size=2, max_size=8), st.data())
def test_chinese_with_full_width_punctuation_and_line_breaks_locates(runs: list[tuple[str, str]], data: st.DataObject) -> None:
    page = ""
    for text, punct in runs:
        for ch in text:
            page += ch + (data.draw(st.sampled_from(["", "", "\r\n", "\u3000", "\u200b"])))
        page += punct
    quote_full = "".join(text + punct for text, punct in runs)
    quote_ascii = "".join(text + CJK_PUNCT[punct] for text, punct in runs)  # a reader's half-width keyboard
    for quote in (quote_full, quote_ascii):
        found = match_text(page, quote, fuzzy=False)
        assert found is not None and found.method in ("exact", "normalized")
        assert (found.start, found.end) == (0, len(page.rstrip("\r\n\u3000\u200b")) or len(page))


def test_each_kind_of_mark_vanishes_from_the_key() -> None:
    for mark in ["\ufffe", "\u00ad", "\u2060", "\u200b", "\u200d", "\ufeff", "\ue000", "\U000f0000", "\x10",
                 "\ufffd", "\ufe0f", "\u2013", "\u2014", "\u2212", "\u00a0", "\u3000", "\u202f"]:
        assert normalize_key(f"ab{mark}cd") == "abcd", repr(mark)
    assert normalize_key("\ufb01\ufb02\ufb00\ufb03 ＡＢＣ１２３") == "fiflffffiabc123"
    assert normalize_key("“It’s”") == normalize_key('"It\'s"')
