"""Fusion invariants (property tests) and trust weights."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.fusion import (
    UNTRUSTED_VECTOR_WEIGHT,
    ChannelRanking,
    LanguageEvidence,
    fuse,
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


def test_lexical_trust_follows_the_top_hits_coverage():
    from book_agent.domain.fusion import lexical_trust

    assert lexical_trust(1.0)[0] == 1.0
    assert lexical_trust(0.5)[0] == 0.25
    assert lexical_trust(None)[0] == 1.0  # nothing to judge: the channel keeps its weight
    weights = [lexical_trust(c / 10)[0] for c in range(11)]
    assert weights == sorted(weights)


def test_lexical_coverage_decides_who_leads_when_the_channels_disagree():
    from book_agent.domain.fusion import lexical_trust

    lexical = ["lexical-top", "a", "b"]
    vector = ["vector-top", "c", "d"]
    weak, _ = lexical_trust(2 / 7)  # the BM25 winner holds 2 of the query's 7 terms: a near-miss
    fused = fuse([ChannelRanking("lexical", lexical, weak), ChannelRanking("vector", vector, 1.0)])
    assert fused[0].record_id == "vector-top"
    strong, _ = lexical_trust(1.0)  # it holds every term: it keeps the lead (ties go to lexical order)
    fused = fuse([ChannelRanking("lexical", lexical, strong), ChannelRanking("vector", vector, 1.0)])
    assert fused[0].record_id == "lexical-top"
