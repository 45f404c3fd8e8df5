"""book_agent/domain/search/bm25.py: BM25 split into a document side (stored per posting) and a query side (idf at
search) multiplies back to FTS5's per-term score, and the weight inverts to its count."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.search.bm25 import (
    K1,
    MIN_IDF,
    B,
    average_length,
    document_weights,
    frequencies,
    idf,
    length_norm,
)

COUNTS = st.floats(0.4, 500.0, allow_nan=False)
LENGTHS = st.integers(1, 100_000)
AVERAGES = st.floats(1.0, 10_000.0, allow_nan=False)


def fts5_share(f: float, length: float, average: float, records: int, df: int) -> float:
    """FTS5's bm25() term share, written out as fts5_aux.c computes it (double precision)."""
    value = math.log((records - df + 0.5) / (df + 0.5))
    term_idf = value if value > 0 else 1e-6
    return term_idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / average))


@given(COUNTS, LENGTHS, AVERAGES, st.integers(1, 10**7), st.data())
def test_weight_times_idf_is_fts5s_share(f, length, average, records, data):
    df = data.draw(st.integers(1, records))
    weight = document_weights([f], length_norm([length], average))
    split = float(idf(records, df) * weight.astype(np.float32)[0])  # the weight is stored as float32
    assert split == pytest.approx(fts5_share(f, length, average, records, df), rel=2e-7)


@given(COUNTS, LENGTHS, AVERAGES)
def test_the_weight_inverts_to_its_count(f, length, average):
    norm = length_norm([length], average)
    assert float(frequencies(document_weights([f], norm), norm)[0]) == pytest.approx(f, rel=1e-9)


@given(st.integers(0, 10**7), st.data())
def test_idf_is_floored_not_zeroed_and_falls_with_df(records, data):
    df = np.array(sorted(data.draw(st.lists(st.integers(0, records), min_size=2, max_size=5))))
    values = idf(records, df)
    assert (values >= MIN_IDF).all() and (np.diff(values) <= 0).all()


def test_weights_stay_below_k1_plus_1_and_grow_with_the_count():
    norm = length_norm([10, 10, 10], 20.0)
    weights = document_weights([1.0, 2.0, 50.0], norm)
    assert (np.diff(weights) > 0).all() and (weights < K1 + 1).all()


def test_an_empty_librarys_average_does_not_divide_by_zero():
    assert average_length(0, 0) == 0.0
    assert np.isfinite(length_norm([3], 0.0)).all()
