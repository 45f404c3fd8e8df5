"""The book's background for the vector channel (issue 41), through a real package: the store's
sample, the search's weights and reasons, and the bad vectors that must still be refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from book_agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.fusion import VECTOR_SHARE
from book_agent.domain.search.vector_background import SAMPLE_ROWS
from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter
from book_agent_adapters.book.vectors.vector_background import sample_rows
from tests.support.package_builder import RecordSpec, build_package

DIMS = 32
WORDS = ["river", "mountain", "general", "harvest", "winter", "market", "temple", "bridge"]


def _two_halves(count: int, seed: int = 3) -> np.ndarray:
    """Unit vectors bunched as multilingual-e5 makes them: each row's cosine with the first axis is
    0.9 (even rows) or 0.8 (odd rows), the rest of it in a random direction of its own."""
    rng = np.random.default_rng(seed)
    rest = rng.standard_normal((count, DIMS)).astype(np.float64)
    rest[:, 0] = 0.0
    rest /= np.linalg.norm(rest, axis=1, keepdims=True)
    along = np.where(np.arange(count) % 2 == 0, 0.9, 0.8) + 1e-4 * rng.standard_normal(count)
    rows = along[:, None] * np.eye(DIMS)[0] + np.sqrt(1 - along[:, None] ** 2) * rest
    return rows.astype(np.float32)


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    vectors = _two_halves(60)
    records = [RecordSpec(f"r{i:03d}", f"Passage {i} about the {WORDS[i % 8]} and the {WORDS[(i * 3) % 8]}.",
                          [f"Chapter {i // 10 + 1}"], i // 10) for i in range(60)]
    root = build_package(tmp_path_factory.mktemp("pkg") / "bunched", book_id="bunched", records=records,
                         dims=DIMS, vectors=vectors, kind="epub")
    return Path(root), vectors


def _store(root: Path) -> PrebuiltVectorStoreAdapter:
    manifest = json.loads((root / "vectors.json").read_text(encoding="utf-8"))
    return PrebuiltVectorStoreAdapter(root / "index.sqlite", manifest)


def test_the_background_is_the_querys_cosines_with_the_books_records(book) -> None:
    root, vectors = book
    query = _two_halves(1, seed=9)[0]
    with _store(root) as store:
        background = store.background(query)
    assert background is not None and background.records == 60
    cosines = vectors.astype(np.float64) @ query.astype(np.float64)  # a small book: every record is sampled
    assert background.mean == pytest.approx(float(cosines.mean()), abs=1e-5)
    assert background.sd == pytest.approx(float(cosines.std()), abs=1e-5)
    assert 0.5 < background.mean < 1.0 and background.sd < 0.1  # bunched, as e5's are


def test_a_large_books_sample_is_evenly_spread_and_bounded() -> None:
    rows = sample_rows(100_000)
    assert len(rows) == SAMPLE_ROWS and rows[0] == 0 and rows[-1] == 99_999
    gaps, step = np.diff(rows), 99_999 / (SAMPLE_ROWS - 1)
    assert gaps.min() >= int(step) and gaps.max() <= int(step) + 1
    assert list(sample_rows(5)) == [0, 1, 2, 3, 4]


def test_a_query_of_another_dimension_is_refused_with_a_code(book) -> None:
    root, _ = book
    with _store(root) as store, pytest.raises(BookAgentError) as caught:
        store.background(np.ones(DIMS + 1, np.float32))
    assert caught.value.code == "query.vector_invalid"


def test_a_search_weighs_a_sure_vector_channel_fully_and_a_lost_one_less(book, tmp_path: Path) -> None:
    root, vectors = book
    with BookAgent(tmp_path / "data") as agent:
        agent.init(root)
        sure = agent.search("bunched", "mountain harvest", top_k=5, query_vector=vectors[17].tolist())
        # the direction the records share: it tells the two halves apart, and no record from its half
        lost_vector = np.zeros(DIMS, np.float32)
        lost_vector[0] = 1.0
        lost = agent.search("bunched", "mountain harvest", top_k=5, query_vector=lost_vector.tolist())
    vector = sure["channels"]["vector"]
    assert vector["weight"] == pytest.approx(VECTOR_SHARE)
    assert "background" in vector["trust"] and "confidence 1.00" in vector["trust"]
    assert sure["hits"][0]["record_id"] == "r017"  # the record itself: far above the background
    assert lost["channels"]["vector"]["weight"] < 0.5 * VECTOR_SHARE
    assert sure["fusion"]["weights"]["vector"] == vector["weight"]


def test_a_background_that_cannot_be_measured_is_none_and_the_fusion_measures_from_zero(tmp_path: Path) -> None:
    from book_agent_adapters.book.vectors.vector_background import query_background

    query = np.eye(DIMS, dtype=np.float32)[0]
    alike = np.tile(query, (8, 1))  # every record the same vector: no spread to measure against
    assert query_background(alike, query, 8) is None
    assert query_background(alike[:1], query, 1) is None  # one row
    broken = np.eye(DIMS, dtype=np.float32)[:4].copy()
    broken[2, 3] = np.nan
    assert query_background(broken, query, 4) is None
    assert query_background(np.eye(DIMS, dtype=np.float32)[:4], np.ones(DIMS + 1, np.float32), 4) is None
    with BookAgent(tmp_path / "data") as agent:  # a one-record book: its background is a single row
        records = [RecordSpec("only", "The only passage about the river.", ["Chapter 1"], 0)]
        single = build_package(tmp_path / "single", book_id="single", records=records, dims=DIMS,
                               vectors=np.eye(DIMS, dtype=np.float32)[:1], kind="epub")
        agent.init(single)
        found = agent.search("single", "river", top_k=3, query_vector=np.eye(DIMS, dtype=np.float32)[0].tolist())
    vector = found["channels"]["vector"]
    assert vector["weight"] == pytest.approx(VECTOR_SHARE) and "no background measured" in vector["trust"]
    assert [h["record_id"] for h in found["hits"]] == ["only"]
