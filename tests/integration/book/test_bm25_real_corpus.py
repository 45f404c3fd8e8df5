"""On a real book (examples/art-of-war-package), BM25 split as book_agent/domain/search/bm25.py splits it (each
posting's document weight, stored as float32, times the term's idf from N and df) scores every
record as FTS5's bm25() does, and as the library's impact index does, to float32 precision.
This is the formula both library backends store (the local postings, an engine's sparse vectors)."""

from __future__ import annotations

import numpy as np
import pytest

from book_agent.domain.library import LibraryMember
from book_agent.domain.search.bm25 import average_length, document_weights, idf, length_norm
from book_agent_adapters.book.lexical.fts_lexical_index import build_sidecar
from book_agent_adapters.library.local.lexical.library_lexical_index import SqliteLibraryIndex
from book_agent_adapters.library.local.lexical.term_counts import count_terms
from book_agent_adapters.text.fts_terms import FtsTerms
from tests.support import REPO_ROOT
from tests.support.fts_scores import fts_scores

DATABASE = REPO_ROOT / "examples" / "art-of-war-package" / "index.sqlite"
QUERIES = ["army", "the general who wins", "spies", "fire attack", "terrain ground", "march of the enemy",
           "Sun Tzu said", "victory", "deception warfare", "water"]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bm25")
    sidecar = tmp / "sidecar.sqlite"
    build_sidecar(DATABASE, sidecar, {"k": "v"})
    counts = count_terms(DATABASE)
    member = LibraryMember("war", DATABASE, len(counts.record_ids), "real")
    index = SqliteLibraryIndex(tmp / "library")
    index.build([member], {"books": "war=real"}, None)
    return sidecar, counts, index


def split_scores(counts, query: str) -> dict[str, float]:
    """Document weights (float32, as stored) x idf at query time, summed per record."""
    stemmer = FtsTerms()
    try:
        terms, _ = stemmer.query_terms(query)
    finally:
        stemmer.close()
    records = len(counts.record_ids)
    norms = length_norm(counts.lengths, average_length(float(counts.lengths.sum()), records))
    weights = document_weights(counts.freqs, norms[counts.docs]).astype(np.float32)
    number = {t: i for i, t in enumerate(counts.terms)}
    totals = np.zeros(records)
    for term in terms:  # a repeated fragment counts once per repetition, as in FTS5
        if term not in number:
            continue
        mask = counts.term_ids == number[term]
        totals[counts.docs[mask]] += idf(records, int(mask.sum())) * weights[mask].astype(np.float64)
    return {counts.record_ids[i]: float(totals[i]) for i in np.flatnonzero(totals)}


@pytest.mark.parametrize("query", QUERIES)
def test_split_bm25_scores_a_real_book_as_fts5_and_the_impact_index(real, query):
    sidecar, counts, index = real
    expected = fts_scores(sidecar, query)
    assert expected, query
    split = split_scores(counts, query)
    reader = index.open()
    try:
        indexed = {h.record_id.removeprefix("war#"): h.score for h in reader.search(query, 10_000)}
    finally:
        reader.close()
    assert split.keys() == expected.keys() == indexed.keys()
    for rid, score in expected.items():
        assert split[rid] == pytest.approx(score, rel=1e-6), rid
        assert indexed[rid] == pytest.approx(split[rid], rel=1e-6), rid
