"""The vector channel measured against the book's background (issue 41): any model's scale."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.search.fusion import ScoredChannel, fuse_scores
from book_agent.domain.search.vector_background import (
    FLOOR_SD,
    Background,
    noise_level,
    vector_scale,
    z_confidence,
)

# Two real models' shapes (measured on cmdd-im dev, tools/study/fusion_background.py): MiniLM's
# background sits near 0.48 +- 0.09, multilingual-e5-small's near 0.88 +- 0.015 (bunched).
MINILM = Background(0.48, 0.09, 2000)
E5 = Background(0.88, 0.015, 2000)


def _as_model(zs: list[float], model: Background) -> list[float]:
    """Cosines a model of that background gives hits of these z-scores."""
    return [model.mean + z * model.sd for z in zs]


def _fused(lexical: list[tuple[str, float]], vector: list[tuple[str, float]], background: Background | None,
           share: float = 0.5) -> list[str]:
    return list(_fused_scores(lexical, vector, background, share))


def _fused_scores(lexical: list[tuple[str, float]], vector: list[tuple[str, float]], background: Background | None,
                  share: float = 0.5) -> dict[str, float]:
    floor, sure, _ = vector_scale(vector[0][1] if vector else None, background)
    return {h.record_id: h.fused for h in fuse_scores([ScoredChannel("lexical", lexical, 1 - share),
                                                       ScoredChannel("vector", vector, share * sure, floor=floor)])}


# The lexical channel slightly prefers a; the vector channel is sure of b (z 6 against a's 1)
LEXICAL = [("a", 10.0), ("b", 9.0), ("c", 8.0), ("d", 1.0)]
VECTOR_Z = [("b", 6.0), ("c", 1.5), ("a", 1.0), ("e", 0.8)]


def _vector(model: Background) -> list[tuple[str, float]]:
    return list(zip([r for r, _ in VECTOR_Z], _as_model([z for _, z in VECTOR_Z], model), strict=True))


def test_a_bunched_model_keeps_its_say_as_a_spread_one_does() -> None:
    """The same evidence in e5's bunched cosines and in MiniLM's spread ones fuses alike; measured
    from 0, e5's channel was flat (b at 0.97 of the best, a at 0.91 ... all within 10%) and lost it."""
    assert _fused(LEXICAL, _vector(E5), E5) == _fused(LEXICAL, _vector(MINILM), MINILM)
    assert _fused(LEXICAL, _vector(E5), E5)[0] == "b"
    assert _fused(LEXICAL, _vector(E5), None)[0] == "a"  # before issue 41: the floor of 0 flattens e5


def test_a_channel_whose_best_sits_in_the_background_weighs_nothing() -> None:
    flat = [(r, E5.mean - 0.001 * i) for i, r in enumerate(["e", "d", "c", "b"])]
    _, sure, reason = vector_scale(flat[0][1], E5)
    assert sure == 0.0 and "confidence 0.00" in reason
    assert _fused(LEXICAL, flat, E5) == ["a", "b", "c", "d", "e"]  # the lexical order stands
    barely = [(r, E5.mean + 0.5 * E5.sd - 0.001 * i) for i, r in enumerate(["e", "d", "c", "b"])]
    assert 0.0 < vector_scale(barely[0][1], E5)[1] < 0.2  # half a deviation above: a fifth of its share at most


def test_a_confident_channel_keeps_its_whole_weight() -> None:
    best = E5.mean + (noise_level(E5.records) + 0.5) * E5.sd
    assert z_confidence(best, E5) == 1.0
    assert z_confidence(E5.mean + 10 * E5.sd, E5) == 1.0


def test_a_weaker_best_hit_weighs_less() -> None:
    sures = [z_confidence(E5.mean + z * E5.sd, E5) for z in (-1.0, 0.0, 1.0, 2.0, 3.0)]
    assert sures[0] == sures[1] == 0.0
    assert sures == sorted(sures) and sures[2] < sures[3] < sures[4] <= 1.0


def test_without_a_background_the_fusion_measures_from_zero_at_full_weight() -> None:
    assert vector_scale(0.6, None)[:2] == (0.0, 1.0)
    assert vector_scale(None, E5)[:2] == (0.0, 1.0)


def test_the_floor_is_the_low_edge_of_the_background() -> None:
    assert math.isclose(vector_scale(0.95, E5)[0], E5.mean - FLOOR_SD * E5.sd)


def test_noise_reaches_further_in_a_larger_book() -> None:
    levels = [noise_level(n) for n in (1, 2, 10, 380, 2000, 100_000, 10_000_000)]
    assert levels[0] == 0.0 and levels == sorted(levels) and len(set(levels)) == len(levels)
    assert 2.8 < noise_level(380) < 3.0 and 4.2 < noise_level(100_000) < 4.5  # Phi^-1(0.5 ** (1/n))


def test_a_one_record_book_is_sure_of_any_hit_above_its_background() -> None:
    one = Background(0.5, 0.1, 1)
    assert z_confidence(0.6, one) == 1.0 and z_confidence(0.4, one) == 0.0


# z-scores on a grid of eighths: a z of 1e-170 above the mean is not a hit the sum shift + scale x z can hold
zs = st.lists(st.integers(min_value=-24, max_value=96).map(lambda i: i / 8), min_size=1, max_size=12)
lexical_scores = st.lists(st.floats(min_value=0.1, max_value=30.0, allow_nan=False), min_size=0, max_size=12)


@given(zs, lexical_scores, st.floats(min_value=1e-3, max_value=100.0), st.floats(min_value=-50.0, max_value=50.0),
       st.integers(min_value=1, max_value=10**7))
def test_the_fusion_is_invariant_to_the_models_scale(z_list, lex, scale, shift, records):
    """A model whose cosines are a x + b of another's (a > 0), background and all, fuses alike."""
    vector_z = sorted(z_list, reverse=True)
    ids = [f"v{i}" for i in range(len(vector_z))]
    lexical = sorted(zip([f"v{i}" if i % 2 else f"l{i}" for i in range(len(lex))], lex, strict=True),
                     key=lambda p: -p[1])
    unit = Background(0.0, 1.0, records)
    moved = Background(shift, scale, records)
    first = _fused_scores(lexical, list(zip(ids, vector_z, strict=True)), unit)
    second = _fused_scores(lexical, list(zip(ids, [shift + scale * z for z in vector_z], strict=True)), moved)
    assert first.keys() == second.keys()  # the same hits, each with the same fused score (to rounding)
    assert all(math.isclose(first[r], second[r], rel_tol=1e-9, abs_tol=1e-12) for r in first)
    assert math.isclose(z_confidence(vector_z[0], unit), z_confidence(shift + scale * vector_z[0], moved),
                        abs_tol=1e-9)


@given(st.floats(min_value=-5.0, max_value=15.0), st.floats(min_value=0.0, max_value=5.0),
       st.integers(min_value=1, max_value=10**7))
def test_confidence_never_falls_as_the_best_hit_rises(z, step, records):
    background = Background(0.3, 0.05, records)
    low, high = (z_confidence(background.mean + x * background.sd, background) for x in (z, z + step))
    assert 0.0 <= low <= high <= 1.0


@given(st.floats(min_value=0.0, max_value=0.2), st.floats(min_value=0.0, max_value=0.3))
def test_a_higher_background_makes_the_same_best_hit_weigh_less(mean, raise_by):
    best = 0.7
    assert z_confidence(best, Background(mean + raise_by, 0.1, 1000)) <= z_confidence(best, Background(mean, 0.1, 1000))


def test_books_pooled_measure_as_the_one_book_holding_them() -> None:
    import statistics

    from book_agent.domain.search.vector_background import pooled

    scores = [0.91, 0.88, 0.86, 0.90, 0.87, 0.85, 0.89, 0.93, 0.84]
    parts = [scores[:2], scores[2:6], scores[6:]]
    whole = pooled([Background(statistics.fmean(p), statistics.pstdev(p), len(p)) for p in parts])
    assert whole is not None and whole.records == len(scores)
    assert math.isclose(whole.mean, statistics.fmean(scores)) and math.isclose(whole.sd, statistics.pstdev(scores))
    assert pooled([E5, None]) is None and pooled([]) is None  # one channel, one way of measuring
