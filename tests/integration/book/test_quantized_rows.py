"""A large book's exact vector search from its 8-bit codes (quantized_rows.py): the full pass's
top k, ids, order and score bits, whether the codes certify it or the search falls back; the
codes made in the background from a store's second search, which no search waits for; a replaced
book never searched through the codes of the vectors it had. Real packages (index.sqlite, the
mapped sidecar), real faiss."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from book_agent_adapters.book.vectors import sqlite_vector_store
from book_agent_adapters.book.vectors.quantized_rows import QuantizedRows
from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter
from book_agent_adapters.book.vectors.vector_matrix import row_scores
from tests.support.package_builder import RecordSpec, build_package

pytest.importorskip("faiss")

DIMS = 24
ROWS = 3_000
NEAR = 600  # rows within 1e-4 of one direction: closer to each other than the codes can tell


def vectors(seed: int) -> np.ndarray:
    """Unit rows around 30 topics, a block of near-duplicates of one direction, exact duplicates."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((30, DIMS))
    rows = topics[rng.integers(0, 30, ROWS)] + 0.35 * rng.standard_normal((ROWS, DIMS))
    rows[:NEAR] = topics[0] + 1e-4 * rng.standard_normal((NEAR, DIMS))
    rows[NEAR:NEAR + 40] = rows[NEAR + 40:NEAR + 80]  # ties: the same vector twice
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def package(root: Path, matrix: np.ndarray, book_id: str = "big-book") -> Path:
    records = [RecordSpec(f"r{i:05d}", f"passage {i} about the {i % 7} river", [f"Part {i // 500}"], i // 500)
               for i in range(len(matrix))]
    return build_package(root, book_id=book_id, kind="epub", records=records, dims=DIMS, vectors=matrix,
                         blank_page=False)


def full_pass(matrix: np.ndarray, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The definition: every row scored, best first, ties in reading order."""
    unit = (query / np.linalg.norm(query)).astype(np.float32)
    scores = row_scores(matrix, unit)
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return [(f"r{i:05d}", float(scores[i])) for i in order]


def queries(matrix: np.ndarray, seed: int) -> list[np.ndarray]:
    """Near the topics, on a row (a duplicated one too), inside the near-duplicate block."""
    rng = np.random.default_rng(seed)
    out = [matrix[int(i)] + 0.2 * rng.standard_normal(DIMS).astype(np.float32) for i in rng.integers(0, ROWS, 40)]
    out += [matrix[i].copy() for i in (NEAR, NEAR + 45, ROWS - 1)]
    out += [matrix[0] + 1e-5 * rng.standard_normal(DIMS).astype(np.float32) for _ in range(5)]
    return out


@pytest.fixture(scope="module")
def big_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    matrix = vectors(seed=5)
    return package(tmp_path_factory.mktemp("quantized") / "big-book", matrix), matrix


@pytest.fixture
def coded(monkeypatch: pytest.MonkeyPatch) -> list[QuantizedRows]:
    """Codes for books from 1,000 rows (the product's threshold is 16,384), each one made listed."""
    made: list[QuantizedRows] = []

    def counted(faiss: object, matrix: np.ndarray) -> QuantizedRows:
        made.append(QuantizedRows(faiss, matrix))
        return made[-1]

    monkeypatch.setattr(sqlite_vector_store, "QUANTIZED_FROM_ROWS", 1_000)
    monkeypatch.setattr(sqlite_vector_store, "QuantizedRows", counted)
    return made


def codes_made(store: PrebuiltVectorStoreAdapter) -> None:
    """Waits for the store's codes, which its second search started making."""
    assert store._codes is not None and store._codes.wait(timeout=60) and store._codes.state == "made"


def wait_until(condition: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.01)


def store_of(root: Path, sidecar: Path) -> PrebuiltVectorStoreAdapter:
    import json

    manifest = json.loads((root / "vectors.json").read_text())
    return PrebuiltVectorStoreAdapter(root / "index.sqlite", manifest, sidecar_dir=sidecar)


@pytest.mark.parametrize("depth", [1, 10, 50, 200])
def test_the_top_k_from_codes_is_the_full_pass_bit_for_bit(big_book: tuple[Path, np.ndarray], tmp_path: Path,
                                                           coded: list[QuantizedRows], depth: int) -> None:
    root, matrix = big_book
    with store_of(root, tmp_path / "sidecar") as store:
        asked = queries(matrix, seed=depth)
        assert store.search_ids(asked[0], depth) == full_pass(matrix, asked[0], depth)  # the full pass
        assert not coded  # a one-shot query makes no codes
        assert store.search_ids(asked[1], depth) == full_pass(matrix, asked[1], depth)  # starts making them
        codes_made(store)
        certified = 0
        for query in asked:
            assert store.search_ids(query, depth) == full_pass(matrix, query, depth)
            unit = (query / np.linalg.norm(query)).astype(np.float32)
            certified += coded[0].top(store.load().matrix, unit, depth) is not None
        assert len(coded) == 1  # made once
        # the codes answered most queries (not all: a tie or the near-duplicate block at the cut-off)
        assert certified >= len(asked) // 2, certified


def test_codes_never_certify_what_they_cannot_tell_apart(big_book: tuple[Path, np.ndarray]) -> None:
    """Inside the near-duplicate block the exact order is below the codes' resolution: they must
    refuse (the search then makes the full pass), never answer in their own order."""
    import faiss

    _, matrix = big_book
    codes = QuantizedRows(faiss, matrix)
    assert codes.error > 1e-4  # coarser than the block's spread
    rng = np.random.default_rng(3)
    for _ in range(10):
        query = matrix[0] + 1e-5 * rng.standard_normal(DIMS).astype(np.float32)
        unit = (query / np.linalg.norm(query)).astype(np.float32)
        assert codes.top(matrix, unit, 10) is None


def test_identical_rows_at_the_cut_off_are_never_decided_by_code() -> None:
    import faiss

    matrix = np.tile(np.eye(1, DIMS, 0, dtype=np.float32), (400, 1))
    matrix[::2] = np.eye(1, DIMS, 1, dtype=np.float32)
    codes = QuantizedRows(faiss, matrix)
    assert codes.top(matrix, matrix[0], 5) is None  # 200 rows tie for the top 5: reading order decides


def test_a_replaced_book_is_never_searched_through_its_old_codes(tmp_path: Path,
                                                                  coded: list[QuantizedRows]) -> None:
    """The second package's one changed row is the query's best match: codes of the first
    package's rows would leave it out (its old vector is far from the query) and still certify
    the rest."""
    from book_agent import BookAgent

    before = vectors(seed=8)
    query = before[NEAR + 100] + 0.05 * np.random.default_rng(4).standard_normal(DIMS).astype(np.float32)
    unit = query / np.linalg.norm(query)
    far = int(np.argmin(row_scores(before, unit.astype(np.float32))))
    after = before.copy()
    after[far] = unit
    with BookAgent(tmp_path / "data") as agent:
        agent.init(package(tmp_path / "v1", before))
        for search in range(3):
            first = agent.search("big-book", "zzz", top_k=5, query_vector=query.tolist())["hits"]
            if search == 1:
                wait_until(lambda: len(coded) == 1)
        assert coded and first[0]["record_id"] != f"r{far:05d}"
        agent.init(package(tmp_path / "v2", after), replace=True)
        for search in range(4):  # the full pass, then the new codes
            hits = agent.search("big-book", "zzz", top_k=5, query_vector=query.tolist())["hits"]
            assert [h["record_id"] for h in hits] == [rid for rid, _ in full_pass(after, query, 5)]
            if search == 1:
                wait_until(lambda: len(coded) == 2)


def test_no_search_waits_for_the_codes(big_book: tuple[Path, np.ndarray], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Codes held back: the searches that started making them are answered by the full pass
    meanwhile, and the codes are made outside the searching thread, once."""
    root, matrix = big_book
    release, makers = threading.Event(), []

    def held_back(faiss: object, rows: np.ndarray) -> QuantizedRows:
        makers.append(threading.current_thread())
        assert release.wait(timeout=60)
        return QuantizedRows(faiss, rows)

    monkeypatch.setattr(sqlite_vector_store, "QUANTIZED_FROM_ROWS", 1_000)
    monkeypatch.setattr(sqlite_vector_store, "QuantizedRows", held_back)
    asked = queries(matrix, seed=11)
    with store_of(root, tmp_path / "sidecar") as store:
        try:
            for query in asked[:6]:  # the second starts the codes, which are not made till released
                assert store.search_ids(query, 10) == full_pass(matrix, query, 10)
            wait_until(lambda: makers)
            assert store._codes is not None and store._codes.state == "making"
        finally:
            release.set()
        codes_made(store)
        for query in asked:
            assert store.search_ids(query, 10) == full_pass(matrix, query, 10)
    assert len(makers) == 1 and makers[0] is not threading.main_thread()
