"""Fusion invariants (property tests) and trust weights."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.search.fusion import (
    AGREEMENT_K,
    AGREEMENT_SHARE,
    RAGFLOW_KEYWORD_SHARE,
    TIE_TOLERANCE,
    ChannelRanking,
    ScoredChannel,
    fuse,
    fuse_minmax,
    fuse_scores,
    normalised,
    tied_ranks,
)
from book_agent.domain.search.lexical_text import cjk_share, script_letters
from book_agent.domain.search.vector_trust import (
    UNTRUSTED_VECTOR_WEIGHT,
    LanguageEvidence,
    query_vector_trust,
    vector_trust,
)

ids = st.lists(st.sampled_from([f"r{i}" for i in range(30)]), unique=True, max_size=20)
weights = st.floats(min_value=0.01, max_value=1.0)


@given(ids, ids, weights, weights)
def test_result_is_a_permutation_of_the_union(lexical, vector, wl, wv):
    fused = fuse([ChannelRanking("lexical", lexical, wl), ChannelRanking("vector", vector, wv)])
    out = [h.record_id for h in fused]
    assert sorted(out) == sorted(set(lexical) | set(vector))
    assert len(out) == len(set(out))


@given(ids, ids, weights, weights)
def test_fusion_is_deterministic_and_scores_descend(lexical, vector, wl, wv):
    rankings = [ChannelRanking("lexical", lexical, wl), ChannelRanking("vector", vector, wv)]
    first, second = fuse(rankings), fuse(rankings)
    assert [h.record_id for h in first] == [h.record_id for h in second]
    assert all(a.fused >= b.fused for a, b in zip(first, first[1:], strict=False))


@given(ids, weights)
def test_ties_keep_channel_order(lexical, w):
    fused = fuse([ChannelRanking("lexical", lexical, w), ChannelRanking("vector", [], w)])
    assert [h.record_id for h in fused] == lexical


@given(st.lists(st.sampled_from([f"r{i}" for i in range(40)]), unique=True, min_size=2, max_size=30),
       st.data(), weights, weights)
def test_found_by_both_never_ranks_below_found_by_one_with_same_rank(pool, data, wl, wv):
    both = pool[0]
    only = pool[1]
    rest = pool[2:]
    rank = data.draw(st.integers(min_value=0, max_value=len(rest)))
    lexical = rest[:rank] + [both] + rest[rank:]
    other_rest = [r for r in rest if r not in lexical]
    vector_channel = data.draw(st.permutations(other_rest + [both]))
    # `only` sits at the same lexical rank in a world where `both` is absent from the vector list
    fused_both = fuse([ChannelRanking("lexical", lexical, wl), ChannelRanking("vector", list(vector_channel), wv)])
    lexical_only = rest[:rank] + [only] + rest[rank:]
    fused_only = fuse([ChannelRanking("lexical", lexical_only, wl), ChannelRanking("vector", [r for r in vector_channel if r != both], wv)])
    pos_both = [h.record_id for h in fused_both].index(both)
    pos_only = [h.record_id for h in fused_only].index(only)
    assert pos_both <= pos_only
    # and directly: the same lexical rank plus a vector rank scores strictly higher
    by_id = {h.record_id: h for h in fused_both}
    assert by_id[both].fused > wl / (60 + rank + 1)


def test_duplicate_in_one_channel_counts_once():
    fused = fuse([ChannelRanking("lexical", ["a", "b", "a"])])
    assert [h.record_id for h in fused] == ["a", "b"]
    assert fused[0].ranks == {"lexical": 1}


def test_english_only_model_is_not_trusted_for_chinese_queries():
    weight, reason = vector_trust(1.0, LanguageEvidence(["en"], "known-model"))
    assert weight == UNTRUSTED_VECTOR_WEIGHT and "CJK" in reason
    assert vector_trust(1.0, LanguageEvidence(["zh", "en"], "declared"))[0] == 1.0
    assert vector_trust(0.0, LanguageEvidence(["en"], "known-model"))[0] == 1.0
    assert vector_trust(1.0, LanguageEvidence())[0] == 1.0  # no evidence either way: trusted


@pytest.mark.parametrize(("source", "reads", "expected"), [
    ("unknown", False, 0.0),  # measured: the model cannot read CJK: gate shut
    ("unknown", True, 1.0),
    ("known-model", True, 1.0),  # measured on this machine beats the table
    ("known-model", False, 0.0),
    ("declared", False, 1.0),  # the package's own declaration wins
])
def test_what_was_measured_decides_when_nothing_is_declared(source: str, reads: bool, expected: float):
    evidence = LanguageEvidence(["zh"] if source != "unknown" else None, source, {"cjk": reads}, "tokenizer")
    weight, reason = vector_trust(1.0, evidence)
    assert weight == expected
    assert ("tokenizer" in reason) == (source != "declared")
    assert vector_trust(0.0, evidence)[0] == 1.0  # nothing measured for Latin queries: not gated


@given(ids, ids)
def test_an_untrusted_channel_keeps_the_trusted_order_and_only_appends(lexical, vector):
    fused = fuse([ChannelRanking("lexical", lexical, 1.0), ChannelRanking("vector", vector, UNTRUSTED_VECTOR_WEIGHT)])
    assert [h.record_id for h in fused] == lexical + [v for v in vector if v not in lexical]


scored = st.lists(st.tuples(st.sampled_from([f"r{i}" for i in range(30)]),
                           st.floats(min_value=0.0, max_value=50.0)), max_size=20,
                 unique_by=lambda pair: pair[0]).map(lambda hits: sorted(hits, key=lambda h: -h[1]))
shares = st.floats(min_value=0.05, max_value=0.95)


@given(scored, scored, shares)
def test_score_fusion_is_a_permutation_of_the_union_and_deterministic(lexical, vector, share):
    channels = [ScoredChannel("lexical", lexical, 1 - share), ScoredChannel("vector", vector, share)]
    first, second = fuse_scores(channels), fuse_scores(channels)
    out = [h.record_id for h in first]
    assert sorted(out) == sorted({r for r, _ in lexical} | {r for r, _ in vector})
    assert out == [h.record_id for h in second]
    assert [h.fused for h in first] == sorted((h.fused for h in first), reverse=True)


@given(scored)
def test_one_channel_alone_keeps_its_order(lexical):
    fused = fuse_scores([ScoredChannel("lexical", lexical, 0.5), ScoredChannel("vector", [], 0.5)])
    assert [h.record_id for h in fused] == [r for r, _ in lexical]


@given(scored, scored)
def test_a_weight_zero_channel_orders_nothing_and_only_appends(lexical, vector):
    fused = fuse_scores([ScoredChannel("lexical", lexical, 0.5), ScoredChannel("vector", vector, 0.0)])
    lexical_ids = [r for r, _ in lexical]
    assert [h.record_id for h in fused] == lexical_ids + [r for r, _ in vector if r not in lexical_ids]


@given(scored, scored, shares, st.floats(min_value=0.1, max_value=10.0))
def test_raising_a_candidates_score_never_lowers_it(lexical, vector, share, boost):
    if len(lexical) < 2:
        return
    target = lexical[-1][0]
    raised = sorted([(r, s + boost if r == target else s) for r, s in lexical], key=lambda h: -h[1])
    before = [h.record_id for h in fuse_scores([ScoredChannel("lexical", lexical, 1 - share),
                                                ScoredChannel("vector", vector, share)])]
    after = [h.record_id for h in fuse_scores([ScoredChannel("lexical", raised, 1 - share),
                                               ScoredChannel("vector", vector, share)])]
    assert after.index(target) <= before.index(target)


def test_a_winner_far_ahead_keeps_the_lead_and_agreement_beats_one_channel():
    # BM25's winner is far above its runner-up; the vector channel's ranking is flat
    lexical = [("clear-winner", 30.0), ("a", 8.0), ("b", 7.5)]
    vector = [("flat-1", 0.52), ("flat-2", 0.51), ("clear-winner", 0.50), ("a", 0.49)]
    fused = [h.record_id for h in fuse_scores([ScoredChannel("lexical", lexical, 0.5),
                                               ScoredChannel("vector", vector, 0.5)])]
    assert fused[0] == "clear-winner"
    # both channels rank "both" second; it beats each channel's lone first hit when close
    lexical = [("lex-only", 10.0), ("both", 9.5), ("t1", 2.0), ("t2", 1.0)]
    vector = [("vec-only", 0.60), ("both", 0.59), ("u1", 0.2), ("u2", 0.1)]
    fused = [h.record_id for h in fuse_scores([ScoredChannel("lexical", lexical, 0.5),
                                               ScoredChannel("vector", vector, 0.5)])]
    assert fused[0] == "both"


def _channels(lexical, vector, share):
    return [ScoredChannel("lexical", lexical, 1 - share), ScoredChannel("vector", vector, share)]


@given(scored, scored, shares)
def test_without_votes_the_fusion_is_the_convex_combination_of_normalised_scores(lexical, vector, share):
    fused = {h.record_id: h.fused for h in fuse_scores(_channels(lexical, vector, share), agreement=0.0)}
    lex, vec = normalised(lexical), normalised(vector)
    for record_id, value in fused.items():
        expected = ((1 - share) * lex.get(record_id, min(lex.values())) if lex else 0.0) + (
            share * vec.get(record_id, min(vec.values())) if vec else 0.0)
        assert value == pytest.approx(expected, abs=1e-9)


distinct_scores = st.lists(st.tuples(st.sampled_from([f"r{i}" for i in range(30)]),
                                    st.floats(min_value=0.0, max_value=50.0)), max_size=20,
                          unique_by=(lambda pair: pair[0], lambda pair: pair[1])).map(
    lambda hits: sorted(hits, key=lambda h: -h[1])).filter(
    # distinct beyond the tie tolerance too (1.17549439e-38 and 1.17549435e-38 share a rank)
    lambda hits: all(abs(a - b) > TIE_TOLERANCE * max(a, b) for (_, a), (_, b) in pairwise(hits)))


@given(distinct_scores, distinct_scores, shares)
def test_with_votes_only_the_fusion_is_weighted_rrf(lexical, vector, share):
    """agreement = 1: each channel's vote (k + 1) / (k + rank), i.e. (k + 1) x weighted RRF at k
    (scores without ties: a tie shares its best rank, below)."""
    channels = _channels(lexical, vector, share)
    votes = {h.record_id: h.fused for h in fuse_scores(channels, agreement=1.0)}
    rrf = {h.record_id: h.fused for h in fuse([ChannelRanking(c.name, [r for r, _ in c.hits], c.weight)
                                               for c in channels], k=AGREEMENT_K)}
    assert votes.keys() == rrf.keys()
    for record_id, value in votes.items():
        assert value == pytest.approx((AGREEMENT_K + 1) * rrf[record_id], abs=1e-9)


@given(scored, scored, shares)
def test_the_votes_add_each_channels_rank_vote_to_its_normalised_score(lexical, vector, share):
    channels = _channels(lexical, vector, share)
    plain = {h.record_id: h.fused for h in fuse_scores(channels, agreement=0.0)}
    mixed = {h.record_id: h.fused for h in fuse_scores(channels)}
    for record_id, value in mixed.items():
        votes = sum(c.weight * (AGREEMENT_K + 1) / (AGREEMENT_K + tied_ranks(c.hits)[record_id])
                    for c in channels if record_id in tied_ranks(c.hits))
        assert value == pytest.approx((1 - AGREEMENT_SHARE) * plain[record_id] + AGREEMENT_SHARE * votes, abs=1e-9)


@given(scored, st.permutations(range(20)))
def test_a_tie_votes_alike_whatever_order_it_is_listed_in(hits, order):
    """Backends list equal scores in any order (milvus and the local index do): the votes, and so
    the fused scores, must not depend on it."""
    shuffled = sorted([hits[i] for i in order if i < len(hits)], key=lambda h: -h[1])  # stable: ties reordered
    assert tied_ranks(shuffled) == tied_ranks(hits)
    assert tied_ranks([("a", 2.0), ("b", 1.0), ("c", 1.0), ("d", 0.5)]) == {"a": 1, "b": 2, "c": 2, "d": 4}
    other = [("x", 1.0)]
    first = {h.record_id: h.fused for h in fuse_scores(_channels(hits, other, 0.5))}
    second = {h.record_id: h.fused for h in fuse_scores(_channels(shuffled, other, 0.5))}
    assert first == second


def test_agreement_lifts_a_record_both_channels_return_over_a_lone_winner():
    # BM25's winner is a little ahead of "both"; the vector list is long and flat, so the winner
    # (not returned there) loses almost nothing by the fill
    lexical = [("lex-only", 10.0), ("both", 9.0)] + [(f"l{i}", 1.0) for i in range(8)]
    vector = [("vec-only", 0.600), ("both", 0.599)] + [(f"v{i}", 0.598) for i in range(98)]
    scores_only = [h.record_id for h in fuse_scores(_channels(lexical, vector, 0.5), agreement=0.0)]
    with_votes = [h.record_id for h in fuse_scores(_channels(lexical, vector, 0.5))]
    # the vector channel's vote for "both" (its rank 2; lex-only has none there) turns it
    assert scores_only[0] == "lex-only" and with_votes[0] == "both"


@given(scored, scored)
def test_the_ragflow_rule_is_min_max_weighted_and_missing_scores_zero(lexical, vector):
    fused = {h.record_id: h.fused for h in fuse_minmax([
        ScoredChannel("lexical", lexical, RAGFLOW_KEYWORD_SHARE), ScoredChannel("vector", vector, 1 - RAGFLOW_KEYWORD_SHARE)])}
    assert fused.keys() == {r for r, _ in lexical} | {r for r, _ in vector}

    def minmax(hits):
        if not hits:
            return {}
        low, high = min(s for _, s in hits), max(s for _, s in hits)
        return {r: (s - low) / ((high - low) or 1.0) for r, s in hits}

    lex, vec = minmax(lexical), minmax(vector)
    for record_id, value in fused.items():
        assert value == pytest.approx(RAGFLOW_KEYWORD_SHARE * lex.get(record_id, 0.0)
                                      + (1 - RAGFLOW_KEYWORD_SHARE) * vec.get(record_id, 0.0), abs=1e-9)


def test_scores_are_normalised_by_the_best_one_from_zero():
    assert normalised([("a", 10.0), ("b", 5.0)]) == {"a": 1.0, "b": 0.5}
    assert normalised([("a", -0.1), ("b", -0.3)]) == {"a": 1.0, "b": 0.0}  # all below "no relevance"
    assert normalised([]) == {}


ENGLISH_ONLY = LanguageEvidence(["en"], "known-model")
latin_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzANSY", min_size=1, max_size=12)
cjk_words = st.text(alphabet="基于的桥梁有限元分析用间之法北京", min_size=1, max_size=12)
neutral = st.text(alphabet="0123456789 ,.?-()", max_size=6)


@given(st.lists(st.one_of(latin_words, cjk_words, st.text(alphabet=" ,.?-()", max_size=6)), max_size=8))
def test_a_one_script_query_keeps_the_gate_of_its_script(parts):
    """Without digits (which the old per-query rule counted as Latin letters: digits now
    carry no script, see test_digits_carry_no_script)."""
    query = " ".join(parts)
    letters = script_letters(query)
    if letters["latin"] and letters["cjk"]:
        return  # mixed: the next test
    for evidence in (ENGLISH_ONLY, LanguageEvidence(["zh"], "declared"), LanguageEvidence()):
        assert query_vector_trust(letters, evidence)[0] == vector_trust(cjk_share(query), evidence)[0]


@given(cjk_words, latin_words, neutral)
def test_a_latin_run_in_a_chinese_query_opens_the_gate_by_its_share(cjk, latin, extra):
    """An English-only model reads the Latin run of `基于ANSYS的...`: not shut, not wide open."""
    gate, reason = query_vector_trust(script_letters(f"{cjk}{latin}{extra}{cjk}"), ENGLISH_ONLY)
    assert gate == pytest.approx(len(latin) / (len(latin) + 2 * len(cjk)))
    assert "per script run" in reason
    more, _ = query_vector_trust(script_letters(f"{cjk}{latin}{latin}{cjk}"), ENGLISH_ONLY)
    assert more > gate  # more readable text, more trust; never less


def test_digits_carry_no_script():
    assert script_letters("2008年北京") == {"latin": 0, "cjk": 3}
    assert query_vector_trust(script_letters("2008年北京"), ENGLISH_ONLY)[0] == 0.0
    assert query_vector_trust(script_letters("基于ANSYS的分析"), LanguageEvidence(["zh", "en"], "declared"))[0] == 1.0
