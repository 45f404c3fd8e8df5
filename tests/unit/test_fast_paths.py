"""Issue 29: the one-book search's fast paths give the results of the plain code they replaced.

Each reference below is the code as it was before the speed-up, kept here to compare against
on generated inputs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain.search import visual_fallback
from book_agent.domain.search.fusion import (
    AGREEMENT_K,
    AGREEMENT_SHARE,
    TIE_TOLERANCE,
    FusedHit,
    ScoredChannel,
    _ordered,
    fuse_scores,
    normalised,
    tied_ranks,
)


def reference_fuse_scores(channels: list[ScoredChannel]) -> list[FusedHit]:
    hits: dict[str, FusedHit] = {}
    first_seen: dict[str, int] = {}
    for channel in channels:
        for position, (record_id, _) in enumerate(channel.hits, start=1):
            if record_id not in hits:
                hits[record_id] = FusedHit(record_id, 0.0)
                first_seen[record_id] = len(first_seen)
            hits[record_id].ranks.setdefault(channel.name, position)
    weighted = [c for c in channels if c.weight > 0 and c.hits]
    for channel in weighted:
        scores = normalised(channel.hits, channel.floor)
        missing = min(scores.values())
        for record_id, hit in hits.items():
            if any(c.name in hit.ranks for c in weighted):
                rank = tied_ranks(channel.hits).get(record_id)
                vote = (AGREEMENT_K + 1) / (AGREEMENT_K + rank) if rank is not None else 0.0
                hit.fused += (channel.weight * (1 - AGREEMENT_SHARE) * scores.get(record_id, missing)
                              + channel.weight * AGREEMENT_SHARE * vote)
    return _ordered(hits, first_seen, {c.name for c in weighted})


ids = st.sampled_from([f"r{i}" for i in range(12)])
channel = st.builds(ScoredChannel, name=st.sampled_from(["lexical", "vector", "quote", "title"]),
                    hits=st.lists(st.tuples(ids, st.floats(-5, 50, allow_nan=False)), max_size=10),
                    weight=st.sampled_from([0.0, 0.3, 0.7, 1.0]), floor=st.sampled_from([0.0, 0.5]))


@settings(max_examples=300, deadline=None)
@given(st.lists(channel, max_size=4, unique_by=lambda c: c.name))
def test_fuse_scores_is_the_plain_loop(channels: list[ScoredChannel]) -> None:
    got = [(h.record_id, h.fused, h.ranks) for h in fuse_scores(channels)]
    want = [(h.record_id, h.fused, h.ranks) for h in reference_fuse_scores(channels)]
    assert got == want  # bit for bit: the same additions in the same order


# Best first and none below 0, as the channels give them (fuse_scores' one-pass shares), with
# scores a tie tolerance apart, exactly equal, zero, or a record listed twice
close = [0.0, 0.5, 0.5 * (1 + TIE_TOLERANCE / 2), 0.5 * (1 - TIE_TOLERANCE / 2), 0.5 * (1 - 2 * TIE_TOLERANCE), 1.0, 7.25]
best_first = st.builds(
    ScoredChannel, name=st.sampled_from(["lexical", "vector", "quote", "title"]),
    hits=st.lists(st.tuples(ids, st.one_of(st.sampled_from(close), st.floats(0, 50))), max_size=12).map(
        lambda hits: sorted(hits, key=lambda h: -h[1])),
    weight=st.sampled_from([0.0, 0.3, 0.7, 1.0]), floor=st.sampled_from([0.0, 0.5]))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(best_first, channel), max_size=4, unique_by=lambda c: c.name), st.integers(0, 14))
def test_fusing_channels_listed_best_first_is_the_plain_loop(channels: list[ScoredChannel], limit: int) -> None:
    """A channel listed best first with no score below 0 takes a one-pass path to its shares."""
    want = [(h.record_id, repr(h.fused), h.ranks, list(h.ranks)) for h in reference_fuse_scores(channels)]
    got = [(h.record_id, repr(h.fused), h.ranks, list(h.ranks)) for h in fuse_scores(channels)]
    assert got == want
    assert [(h.record_id, repr(h.fused), h.ranks) for h in fuse_scores(channels, limit=limit)] == \
        [item[:3] for item in want[:limit]]


# The usual channel: records listed once, best first, no two scores within the tie tolerance
# (what a search fuses nearly always); a few draws land a tie or a 0 at the end on purpose
untied = st.builds(
    ScoredChannel, name=st.sampled_from(["lexical", "vector", "quote", "title"]),
    hits=st.tuples(st.lists(ids, unique=True, max_size=12),
                   st.lists(st.one_of(st.floats(0, 50), st.sampled_from(close)), min_size=12, max_size=12)).map(
        lambda drawn: list(zip(drawn[0], sorted(drawn[1], reverse=True), strict=False))),
    weight=st.sampled_from([0.0, 0.3, 0.7, 1.0]), floor=st.sampled_from([0.0, 0.5, 60.0]))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(untied, best_first), max_size=4, unique_by=lambda c: c.name), st.integers(0, 14))
def test_fusing_untied_channels_is_the_plain_loop(channels: list[ScoredChannel], limit: int) -> None:
    """Untied channels, the usual input, mixed with tied and repeating ones: the plain loop's answer."""
    want = [(h.record_id, repr(h.fused), h.ranks, list(h.ranks)) for h in reference_fuse_scores(channels)]
    assert [(h.record_id, repr(h.fused), h.ranks, list(h.ranks)) for h in fuse_scores(channels)] == want
    assert [(h.record_id, repr(h.fused), h.ranks) for h in fuse_scores(channels, limit=limit)] == \
        [item[:3] for item in want[:limit]]


def test_fused_channels_need_names_of_their_own() -> None:
    with pytest.raises(ValueError, match="name of its own"):
        fuse_scores([ScoredChannel("lexical", [("a", 1.0)]), ScoredChannel("lexical", [("b", 1.0)])])


MATH = "=+-*/^_<>≤≥∑∫√∂∞±×÷"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(MATH) + list("ab 表\n\ufffd\ue000")), max_size=80),
       st.integers(1, 60))
def test_the_short_text_check_is_the_unshortened_one(text: str, min_chars: int) -> None:
    """The weighted length is only computed for a short text: the same answer as computing it
    always (the rule itself changed in issue 24: a short text must hold a maths symbol or a diagram's glyph)."""
    stripped = text.strip()
    codes = [r["code"] for r in visual_fallback._text_reasons(0, text, min_chars)]
    short = (visual_fallback._weighted_length(stripped) < min_chars
             and visual_fallback.signals.has_visual_glyph(stripped))
    assert ("hit.text_too_short" in codes) == short


@settings(max_examples=300, deadline=None)
@given(st.lists(channel, max_size=4, unique_by=lambda c: c.name), st.integers(0, 14))
def test_fusing_for_the_top_k_gives_the_first_k_of_the_full_order(channels: list[ScoredChannel], limit: int) -> None:
    """A search fuses for its top k only (a partial sort): the same hits, fused alike, in the same order."""
    got = [(h.record_id, h.fused, h.ranks) for h in fuse_scores(channels, limit=limit)]
    want = [(h.record_id, h.fused, h.ranks) for h in fuse_scores(channels)][:limit]
    assert got == want


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab the of 表示兵法 \n!?-_'\"*ｆ２") + ["\u0301", "ß"]), max_size=30))
def test_the_wordless_check_is_the_term_list_being_empty(query: str) -> None:
    """A search asks has_query_terms instead of building the term list to see it empty."""
    from book_agent.domain.search.lexical_text import has_query_terms, query_terms

    assert has_query_terms(query) == bool(query_terms(query))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_an_ascii_text_is_cut_into_the_terms_the_cjk_aware_pattern_finds(text: str) -> None:
    """An ASCII query or text skips compiling the CJK classes (issue 29): the same terms,
    letters per script and wordless verdict as the full pattern gives."""
    from book_agent.domain.search import lexical_text

    full = lexical_text._TOKEN.compiled
    assert lexical_text._token_pattern(text).findall(text) == full.findall(text)
    assert lexical_text.script_letters(text)["cjk"] == sum(len(r) for r in lexical_text.CJK_RUN.findall(text))
    assert [lexical_text.is_cjk(w) for w in text.split()] == [bool(lexical_text.CJK_RUN.fullmatch(w)) for w in text.split()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(ids, st.floats(-5, 50, allow_nan=False)), max_size=12))
def test_a_channels_own_pairs_are_the_pairs_made_of_its_ids_and_scores(pairs: list[tuple[str, float]]) -> None:
    """The lexical channel's hits go to the fusion as they are unless an id repeats (then as ever)."""
    from book_agent.services.search.channel_results import scored_pairs, unique_pairs

    scores = dict(pairs)
    assert unique_pairs(pairs, scores) == scored_pairs([record_id for record_id, _ in pairs], scores)


def test_a_record_under_another_id_is_replace_with_that_id() -> None:
    """Record.with_id (a library's evidence ids) keeps every field as dataclasses.replace does,
    whatever fields Record has."""
    from dataclasses import fields, replace

    from book_agent.domain.records import Record

    record = Record("r1", "text", {"page_index": 3}, None, 7, ["Part", "Chapter"], 10, 20)
    moved = record.with_id("book#r1")
    assert moved == replace(record, record_id="book#r1") and record.record_id == "r1"
    assert [f.name for f in fields(Record)] == ["record_id", "text", "source", "vector", "seq", "headings",
                                                "md_start", "md_end"]  # with_id names them in this order
