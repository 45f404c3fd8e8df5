"""adapters/book_agent_adapters/library/local/lexical/impact_top.py: the library's lexical top k, pruned, is the full pass's to the bit.

The definition is written out here in plain Python (each record's impacts added in the parts'
order from 0.0, the records that scored ranked by score then row); the full pass and the pruned
one must both give exactly it, rows and score bits, on parts built to tie by the hundred and to
make most parts prunable (a rare word of a large idf beside common words of a tiny one)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent_adapters.library.local.lexical.impact_top import (
    Part,
    candidates,
    full_top,
    pruned_top,
)

WEIGHTS = np.array([0.4, 0.9, 1.3, 1.7, 2.1], dtype=np.float32)  # few values: many records tie


def reference(parts: list[Part], top_k: int, records: int, keep: np.ndarray | None) -> list[tuple[int, float]]:
    totals: dict[int, float] = {}
    for docs, weights, factor in parts:
        for row, weight in zip(docs.tolist(), weights.tolist(), strict=True):
            if keep is None or keep[row]:
                totals[row] = totals.get(row, 0.0) + float(np.float64(np.float32(weight)) * factor)
    ranked = sorted((row for row in totals if totals[row] > 0), key=lambda row: (-totals[row], row))
    return [(row, totals[row]) for row in ranked[:top_k]]


@st.composite
def queries(draw: st.DrawFn) -> tuple[list[Part], list[float], int, int, np.ndarray | None]:
    records = draw(st.one_of(st.integers(1, 100), st.integers(500, 20_000)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parts: list[Part] = []
    for _ in range(draw(st.integers(1, 5))):
        share = draw(st.sampled_from([0.002, 0.01, 0.1, 0.5, 0.9]))  # rare words to common ones
        docs = np.flatnonzero(rng.random(records) < share).astype(np.int32)
        if len(docs) == 0:
            continue
        weights = WEIGHTS[rng.integers(0, len(WEIGHTS), len(docs))]
        # idf-like: mostly large for rare words, small for common ones (then most parts prune)
        factor = draw(st.sampled_from([3.0, 9.5, 0.05] if share < 0.05 else [1e-6, 0.05, 0.7, 3.0]))
        factor *= draw(st.integers(1, 3))  # the word repeated in the query
        parts.append((docs, weights, factor))
    bounds = [float(np.float64(w.max()) * f) for _, w, f in parts]
    keep = None if draw(st.booleans()) else rng.random(records) < draw(st.sampled_from([0.1, 0.5, 0.95]))
    return parts, bounds, draw(st.integers(1, 60)), records, keep


@settings(max_examples=500, deadline=None)
@given(queries())
def test_the_pruned_and_the_full_pass_give_the_definitions_rows_and_score_bits(query):
    parts, bounds, top_k, records, keep = query
    expected = reference(parts, top_k, records, keep)
    if parts:
        assert full_top(parts, top_k, records, keep) == expected
    assert pruned_top(parts, bounds, top_k, records, keep) == expected


def test_a_rare_word_beside_common_ones_reads_the_common_postings_only_where_it_counts():
    records = 200_000
    rng = np.random.default_rng(7)
    rare = np.sort(rng.choice(records, 300, replace=False)).astype(np.int32)
    parts: list[Part] = [(rare, np.full(300, 1.5, np.float32), 8.0)]  # a large idf
    for _ in range(3):  # words in most records, of a tiny idf
        common = np.flatnonzero(rng.random(records) < 0.6).astype(np.int32)
        parts.append((common, WEIGHTS[rng.integers(0, len(WEIGHTS), len(common))], 0.01))
    bounds = [float(np.float64(w.max()) * f) for _, w, f in parts]
    found = candidates(parts, bounds, 50, records, None)
    assert found is not None and len(found) == 300  # the rare word's records: no common one can reach them
    assert pruned_top(parts, bounds, 50, records, None) == full_top(parts, 50, records, None)
    everything_common = parts[1:]  # no part prunable: adding up every posting is cheaper
    assert candidates(everything_common, bounds[1:], 50, records, None) is None


def test_a_tie_at_the_cut_keeps_the_first_rows():
    docs = np.arange(0, 1000, 3, dtype=np.int32)
    parts: list[Part] = [(docs, np.full(len(docs), 1.0, np.float32), 2.0),
                         (docs[::7], np.full(len(docs[::7]), 1.0, np.float32), 2.0)]
    bounds = [2.0, 2.0]
    top = pruned_top(parts, bounds, 60, 1000, None)
    assert [row for row, _ in top] == [*docs[::7].tolist(), *[d for d in docs.tolist() if d % 21][:60 - 48]]
    assert top == full_top(parts, 60, 1000, None)
