"""Text normalisation and matching: exact, normalised, fuzzy, with offsets into the original."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain.sources.text_match import (
    FUZZY_THRESHOLD,
    find_fuzzy,
    normalize,
    normalize_key,
)
from tests.support.text_matching import match_text

PAGE = (
    "Water shapes its course according to the nature of the ground over which it flow\r\n"
    "s.\r\nThe general who wins a battle makes many calcu-\r\nlations in his temple before the b\r\n"
    "attle is fought."
)


def test_exact_match_gives_offsets_of_the_verbatim_text() -> None:
    m = match_text(PAGE, "the nature of the ground")
    assert m is not None and m.method == "exact" and m.score == 1.0
    assert PAGE[m.start : m.end] == "the nature of the ground"


def test_line_break_inside_a_word_and_line_end_hyphen_are_normalised_away() -> None:
    m = match_text(PAGE, "over which it flows. The general who wins a battle makes many calculations")
    assert m is not None and m.method == "normalized"
    assert PAGE[m.start : m.end] == "over which it flow\r\ns.\r\nThe general who wins a battle makes many calcu-\r\nlations"


def test_hyphens_vanish_from_the_key_wherever_they_are() -> None:
    # a PDF cannot tell "well-\nknown" (a hyphenated word) from "calcu-\nlations" (a word
    # hyphenated at the line end): PDFium writes U+FFFE for both, so a quote must match either way
    assert normalize_key("well-known") == normalize_key("wellknown") == normalize_key("well\ufffeknown") == "wellknown"
    assert normalize_key("calcu-\nlations") == "calculations"
    assert normalize_key("calcu- \r\n lations") == "calculations"


def test_ligatures_fullwidth_quotes_and_case_are_folded() -> None:
    hay = "The ﬁrst ＡＢＣ said “ﬂow” — ＥＮＤ"
    m = match_text(hay, 'the first abc said "flow" - end')
    assert m is not None and m.method == "normalized"
    assert (m.start, m.end) == (0, len(hay))


def test_traditional_and_simplified_chinese_stay_different() -> None:
    assert normalize_key("國之大事") != normalize_key("国之大事")
    assert match_text("兵者，國之大事", "国之大事", fuzzy=False) is None
    m = match_text("孫子曰：兵者，國之大事，死生之地", "兵者，國之大事")
    assert m is not None and m.method == "exact" and m.start == 4


def test_fullwidth_punctuation_matches_ascii_in_normalised_mode() -> None:
    m = match_text("知己知彼，百戰不殆；不知彼而知己", "知己知彼,百戰不殆;不知彼而知己")
    assert m is not None and m.method == "normalized" and (m.start, m.end) == (0, 16)


def test_fuzzy_match_scores_typos_high_and_maps_to_the_passage() -> None:
    needle = "The generel who wins a batle makes many calculations in his tempel before the battle is fought."
    m = match_text(PAGE, needle)
    assert m is not None and m.method == "fuzzy"
    assert FUZZY_THRESHOLD <= m.score < 1.0
    assert PAGE[m.start :].startswith("The general") and PAGE[: m.end].endswith("fought.")


def test_unrelated_text_scores_below_the_threshold() -> None:
    m = find_fuzzy(normalize(PAGE), normalize_key("Photosynthesis converts light energy into chemical energy."))
    assert m is None or m.score < FUZZY_THRESHOLD


def test_short_needles_never_match_fuzzily() -> None:
    assert find_fuzzy(normalize(PAGE), normalize_key("xyz")) is None


def test_hint_picks_the_nearest_of_several_occurrences() -> None:
    hay = "alpha beta. alpha beta. alpha beta."
    assert match_text(hay, "alpha beta", hint=14).start == 12  # type: ignore[union-attr]
    assert match_text(hay, "ALPHA  beta", hint=30).start == 24  # type: ignore[union-attr]


_words = st.lists(st.sampled_from(["river", "ﬁre", "Ｗall", "兵法", "calc", "tax", "“q”"]), min_size=2, max_size=12)


@settings(max_examples=60, deadline=None)
@given(words=_words, breaks=st.lists(st.sampled_from([" ", "\n", "-\n", "\r\n", "  "]), min_size=12, max_size=12))
def test_normalised_match_maps_back_to_the_reformatted_span(words: list[str], breaks: list[str]) -> None:
    """Property: re-flow a passage (any whitespace, line-end hyphens) inside other text; the
    normalised match covers exactly the re-flowed passage."""
    clean = " ".join(words)
    flowed = "".join(w + (breaks[i] if i < len(words) - 1 else "") for i, w in enumerate(words))
    hay = "PREFIX: " + flowed + " :SUFFIX"
    m = match_text(hay, clean)
    assert m is not None and m.method in ("exact", "normalized")
    assert hay[m.start : m.end] == flowed.strip()
