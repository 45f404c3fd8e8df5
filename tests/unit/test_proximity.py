"""book_agent/domain/search/proximity.py: the passage-reading step's pure parts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.search.proximity import (
    PROXIMITY_WINDOW,
    pair_proximities,
    pair_proximity,
    proximity_order,
    with_siblings,
    within,
)

positions = st.lists(st.integers(0, 400), min_size=1, max_size=30, unique=True).map(sorted)


@given(positions, positions, st.integers(0, 40))
def test_within_is_the_brute_force_nearest_distance_against_the_window(a: list[int], b: list[int], window: int):
    assert within(a, b, window) == within(b, a, window) == (min(abs(x - y) for x in a for y in b) <= window)


def test_pairs_count_adjacent_query_terms_standing_within_the_window_in_either_order():
    where = {"acoust": [3], "wave": [40], "propag": [41]}
    # (acoust, wave) 37 apart: not together; (wave, propag) adjacent: together
    assert pair_proximity(["acoust", "wave", "propag"], where) == 0.5
    assert pair_proximity(["propag", "wave"], {"wave": [41], "propag": [40]}) == 1.0  # either order
    assert pair_proximity(["a", "b"], {"a": [0], "b": [PROXIMITY_WINDOW]}) == 1.0
    assert pair_proximity(["a", "b"], {"a": [0], "b": [PROXIMITY_WINDOW + 1]}) == 0.0


def test_a_query_of_fewer_than_two_distinct_terms_reads_nothing():
    assert pair_proximity([], {}) == 0.0
    assert pair_proximity(["war"], {"war": [1, 2]}) == 0.0
    assert pair_proximity(["war", "war", "war"], {"war": [1, 2]}) == 0.0  # repeats of one word


def test_a_repeated_term_counts_once_at_its_first_place():
    where = {"a": [0], "b": [1], "c": [100]}
    assert pair_proximity(["a", "b", "a", "c"], where) == pair_proximity(["a", "b", "c"], where) == 0.5


def test_a_term_the_passage_lacks_breaks_its_pairs():
    assert pair_proximity(["a", "b", "c"], {"a": [0], "c": [1]}) == 0.0
    assert pair_proximity(["a", "b", "c"], {"a": [0], "b": [], "c": [1]}) == 0.0


def test_siblings_are_hits_sharing_a_document_and_none_is_no_document():
    assert with_siblings([("ch1",), ("ch2",), ("ch1",), None, None]) == [True, False, True, False, False]
    assert with_siblings([]) == []


@given(st.lists(st.floats(0.01, 10), min_size=1, max_size=25).map(lambda xs: sorted(xs, reverse=True)),
       st.data())
def test_the_order_is_a_permutation_and_weight_zero_keeps_the_fused_order(fused: list[float], data):
    proximity = data.draw(st.lists(st.floats(0, 1), min_size=len(fused), max_size=len(fused)))
    order = proximity_order(fused, proximity)
    assert sorted(order) == list(range(len(fused)))
    assert proximity_order(fused, proximity, weight=0.0) == list(range(len(fused)))
    assert proximity_order(fused, [0.0] * len(fused)) == list(range(len(fused)))


def test_proximity_lifts_a_close_runner_up_but_not_a_distant_one():
    assert proximity_order([1.0, 0.9], [0.0, 1.0], weight=0.4) == [1, 0]
    assert proximity_order([1.0, 0.5], [0.0, 1.0], weight=0.4) == [0, 1]
    assert proximity_order([], []) == []


terms = st.sampled_from("abcdef")


@given(st.lists(terms, max_size=8), st.lists(st.dictionaries(terms, positions, max_size=6), max_size=6),
       st.integers(0, 20))
def test_pair_proximities_are_each_passages_pair_proximity(query: list[str], passages, window: int):
    assert pair_proximities(query, passages, window) == [pair_proximity(query, p, window) for p in passages]
    distinct = list(dict.fromkeys(query))
    pairs = list(zip(distinct, distinct[1:], strict=False))
    for passage, got in zip(passages, pair_proximities(query, passages, window), strict=True):  # by brute force
        near = [bool(passage.get(a) and passage.get(b)
                     and min(abs(x - y) for x in passage[a] for y in passage[b]) <= window) for a, b in pairs]
        assert got == (sum(near) / len(pairs) if pairs else 0.0)
