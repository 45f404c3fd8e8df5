"""Long quotations locate in near-linear time, with the same verdicts (issue 13, finding 2).

Quote location was quadratic: 22 s for 20,000 characters, minutes for 100,000. The bounds
here are generous (a slow CI machine must pass), the figures are in tools/bench/search/bench_quotes.py.
"""

from __future__ import annotations

import random
import time
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.text_align import SMALL, matched, matching_blocks
from book_agent.domain.sources.text_match import (
    FUZZY_THRESHOLD,
    find_fuzzy,
    fuzzy_bound,
    normalize,
    normalize_key,
)
from book_agent_adapters.sources.passage_search import UnitTexts, find_passage
from book_agent_adapters.sources.resolver import SourceResolver
from tests.support import REPO_ROOT
from tests.support.sources_support import package_info

ROOT = REPO_ROOT
EXAMPLE = ROOT / "examples" / "art-of-war-package"
BOUND_S = 10.0  # "well under a second" on a workstation; this only catches a return to quadratic


def _mutate(text: str, rate: float, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefgh ") if rng.random() < rate else ch for ch in text)


def _prose(chars: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["the", "general", "army", "ground", "march", "enemy", "victory", "spies", "water", "fire",
             "supplies", "river", "attack", "defend", "heaven", "earth", "moral", "law", "command", "method"]
    out: list[str] = []
    total = 0
    while total < chars:
        out.append(rng.choice(words) + rng.choice(["", "", "", ",", "."]))
        total += len(out[-1]) + 1
    return " ".join(out)[:chars]


@pytest.fixture(scope="module")
def resolver() -> SourceResolver:
    return SourceResolver(package_info(EXAMPLE), Path("/nonexistent-runtime-dir"))


@pytest.mark.parametrize("kind", ["exact", "edited", "absent"])
def test_a_maximal_quotation_locates_within_the_bound(resolver: SourceResolver, kind: str) -> None:
    units = resolver.units()
    notes = max(range(units.count), key=lambda u: len(units.text(u)))  # the 285,000-character endnotes
    passage = units.text(notes)[1000:101_000]
    quote = {"exact": passage, "edited": _mutate(passage, 0.03, 1), "absent": _prose(100_000, 2)}[kind]
    started = time.perf_counter()
    try:
        loc = resolver.locate(quote)
    except BookAgentError as exc:
        assert kind == "absent" and exc.code == "source.quote_not_found"
        assert exc.details["best_score"] < FUZZY_THRESHOLD
    else:
        assert kind != "absent"
        assert loc["spine_index"] == notes
        assert loc["verification"]["method"] == ("exact" if kind == "exact" else "fuzzy")
        if kind == "edited":
            assert FUZZY_THRESHOLD <= loc["verification"]["score"] < 1.0
            # the span is the passage itself, give or take a word at each end
            assert abs(loc["char_start"] - 1000) < 40 and abs(loc["char_end"] - 101_000) < 40
    assert time.perf_counter() - started < BOUND_S


@pytest.mark.parametrize("chars", [2_000, 20_000])
def test_long_edited_quotes_keep_their_place_and_a_fair_score(chars: int) -> None:
    page = _prose(chars * 3, 7)
    quote = _mutate(page[chars : 2 * chars], 0.02, 3)
    m = find_fuzzy(normalize(page), normalize_key(quote))
    assert m is not None and FUZZY_THRESHOLD <= m.score < 1.0
    assert abs(m.start - chars) < 40 and abs(m.end - 2 * chars) < 40


def test_a_heavily_edited_long_quote_stays_below_the_threshold() -> None:
    page = _prose(60_000, 8)
    quote = _mutate(page[20_000:40_000], 0.35, 4)  # a third of the characters changed
    m = find_fuzzy(normalize(page), normalize_key(quote))
    assert m is None or m.score < FUZZY_THRESHOLD


def test_units_that_cannot_win_are_not_aligned_yet_the_verdict_is_the_same() -> None:
    # the first short unit holds part of the quotation; the long one holds all of it, edited
    long = _prose(30_000, 9)
    quote = _mutate(long[5_000:25_000], 0.02, 5)
    texts = [long[5_000:8_000], long]
    found = find_passage(UnitTexts(2, texts.__getitem__), quote, normalize_key(quote), None, None)
    assert found.unit == 1 and found.match is not None and found.match.method == "fuzzy"
    assert fuzzy_bound(3_000, 20_000) < found.best_score


# --- the aligner ------------------------------------------------------------------------

texts = st.text(alphabet="abcde .", max_size=60)


@settings(max_examples=150, deadline=None)
@given(texts, texts)
def test_small_inputs_align_exactly_as_sequence_matcher(a: str, b: str) -> None:
    expected = [(m.a, m.b, m.size) for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks() if m.size]
    assert matching_blocks(a, b) == expected


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.15))  # up to where scores cross the threshold
def test_long_inputs_align_in_order_on_equal_characters(seed: int, rate: float) -> None:
    a = _prose(1_500, seed)
    b = _mutate(a[200:1_400], rate, seed)
    assert len(a) * len(b) > SMALL  # the anchored path
    blocks = matching_blocks(a, b)
    end_a = end_b = 0
    for i, j, size in blocks:
        assert size > 0 and i >= end_a and j >= end_b and a[i : i + size] == b[j : j + size]
        end_a, end_b = i + size, j + size
    exact = matched(a[200:1_400], b) if rate == 0 else None
    assert exact in (None, len(b))
    # never far below what SequenceMatcher finds (it is a heuristic too)
    reference = sum(m.size for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    assert matched(a, b) >= 0.9 * reference - 20
