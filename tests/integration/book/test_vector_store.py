"""PrebuiltVectorStoreAdapter on real SQLite files: records, exact search, checks, sidecar."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent.ports import VectorStore
from book_agent_adapters.book.vectors import vector_matrix, vector_sidecar
from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter
from tests.support.package_builder import (
    SAMPLE_RECORDS,
    RecordSpec,
    break_package,
    build_package,
    tree_fingerprint,
    write_database,
)


@pytest.fixture(autouse=True)
def fresh_matrix_cache() -> Iterator[None]:
    vector_matrix.clear_cache()  # each test sees its own loads
    yield
    vector_matrix.clear_cache()


def vectors_json(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "vectors.json").read_text(encoding="utf-8")))


def store_for(root: Path, **kw: Any) -> PrebuiltVectorStoreAdapter:
    return PrebuiltVectorStoreAdapter(root / "index.sqlite", vectors_json(root), **kw)


def write_db(path: Path, matrix: np.ndarray) -> dict[str, Any]:
    records = [RecordSpec(f"id{i:04d}", f"text {i}") for i in range(len(matrix))]
    sources = [{"kind": "pdf", "page_index": 0}] * len(records)
    write_database(path, "b", records, sources, [(0, 1)] * len(records), matrix)
    return {"dimensions": int(matrix.shape[1]), "metric": "cosine", "normalized": False,
            "dtype": "float32", "record_count": len(records)}


# -- records ------------------------------------------------------------------------------

def test_records_and_source_metadata(pdf_package: Path) -> None:
    store = store_for(pdf_package)
    assert isinstance(store, VectorStore)
    record = store.get_record("r0007")
    assert record.text == SAMPLE_RECORDS[6].text and record.seq == 6
    assert record.headings == ["第一章", "始計"] and record.source["kind"] == "pdf"
    assert record.vector is not None and record.vector.shape == (16,)
    meta = store.get_source_metadata("r0007")
    assert meta["source"] == {"kind": "pdf", "page_index": 3, "page_label": "4"}
    assert meta["markdown_span"]["end"] - meta["markdown_span"]["start"] == len(record.text)
    markdown = (pdf_package / "book.md").read_text(encoding="utf-8")
    assert markdown[meta["markdown_span"]["start"]:meta["markdown_span"]["end"]] == record.text
    assert [r.record_id for r in store.iter_records()] == [r.record_id for r in SAMPLE_RECORDS]
    with pytest.raises(BookAgentError) as info:
        store.get_record("no-such-id")
    assert info.value.code == "record.not_found" and info.value.remediation
    store.close()


def test_iter_records_pages_through_many(tmp_path: Path) -> None:
    matrix = np.random.default_rng(0).standard_normal((1203, 4)).astype(np.float32)
    manifest = write_db(tmp_path / "db.sqlite", matrix)
    ids = [r.record_id for r in PrebuiltVectorStoreAdapter(tmp_path / "db.sqlite", manifest).iter_records()]
    assert ids == [f"id{i:04d}" for i in range(1203)]


# -- search -------------------------------------------------------------------------------

def brute_force(matrix: np.ndarray, query: np.ndarray, metric: str) -> np.ndarray:
    m = matrix.astype(np.float64)
    q = query.astype(np.float64)
    if metric == "cosine":
        m = m / np.where(np.linalg.norm(m, axis=1, keepdims=True) == 0, 1, np.linalg.norm(m, axis=1, keepdims=True))
        q = q / np.linalg.norm(q)
    return np.asarray(m @ q)


def test_top_k_on_a_larger_matrix_matches_brute_force(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    matrix = rng.standard_normal((2000, 32)).astype(np.float32)
    manifest = write_db(tmp_path / "db.sqlite", matrix)
    for metric in ("cosine", "dot"):
        vector_matrix.clear_cache()
        with PrebuiltVectorStoreAdapter(tmp_path / "db.sqlite", manifest | {"metric": metric}) as store:
            for _ in range(5):
                query = rng.standard_normal(32).astype(np.float32)
                expected = brute_force(matrix, query, metric)
                want = [f"id{i:04d}" for i in np.argsort(-expected, kind="stable")[:10]]
                assert [h.record.record_id for h in store.search(query, 10)] == want


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), dims=st.integers(1, 12), k=st.integers(0, 70), seed=st.integers(0, 2**32 - 1),
       metric=st.sampled_from(["cosine", "dot"]), ties=st.booleans())
def test_exact_top_k_matches_brute_force(n: int, dims: int, k: int, seed: int, metric: str, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, dims)).astype(np.float32)
    if ties:  # repeated rows and small integers make equal scores
        matrix = np.round(matrix).astype(np.float32)
        matrix[n // 2:] = matrix[: n - n // 2]
    query = rng.standard_normal(dims).astype(np.float32) + 0.01
    with tempfile.TemporaryDirectory() as folder:
        manifest = write_db(Path(folder) / "db.sqlite", matrix) | {"metric": metric}
        store = PrebuiltVectorStoreAdapter(Path(folder) / "db.sqlite", manifest)
        hits = store.search(query, k)
        store.close()
        vector_matrix.clear_cache()
    expected = brute_force(matrix, query, metric)
    assert len(hits) == min(k, n)
    got_scores = np.array([h.score for h in hits])
    np.testing.assert_allclose(got_scores, np.sort(expected)[::-1][: len(hits)], rtol=1e-4, atol=1e-4)
    for hit in hits:  # each hit's score is its own row's score
        assert hit.score == pytest.approx(expected[int(hit.record.record_id[2:])], rel=1e-4, abs=1e-4)
    ids = [h.record.record_id for h in hits]
    assert len(set(ids)) == len(ids)
    for a, b in zip(hits, hits[1:], strict=False):  # ties in reading order
        assert a.score > b.score or (a.score == b.score and a.record.record_id < b.record.record_id)


def test_dot_and_cosine_rank_differently(tmp_path: Path) -> None:
    matrix = np.array([[10.0, 10.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    query = np.array([1.0, 0.05], dtype=np.float32)
    manifest = write_db(tmp_path / "db.sqlite", matrix)
    by_dot = PrebuiltVectorStoreAdapter(tmp_path / "db.sqlite", manifest | {"metric": "dot"}).search(query, 3)
    assert [h.record.record_id for h in by_dot] == ["id0000", "id0001", "id0002"]
    assert by_dot[0].score == pytest.approx(10.5)
    vector_matrix.clear_cache()
    by_cos = PrebuiltVectorStoreAdapter(tmp_path / "db.sqlite", manifest | {"metric": "cosine"}).search(query * 7, 3)
    assert [h.record.record_id for h in by_cos] == ["id0001", "id0000", "id0002"]
    assert by_cos[0].score == pytest.approx(1 / np.hypot(1, 0.05))


def test_bad_query_vectors(pdf_package: Path) -> None:
    store = store_for(pdf_package)
    for bad in ([1.0] * 15, [float("nan")] * 16, [0.0] * 16):
        with pytest.raises(BookAgentError) as info:
            store.search(bad, 3)
        assert info.value.code == "query.vector_invalid"
    assert store.search([1.0] * 16, 0) == []


def test_no_manifest_keeps_records_but_not_search(tmp_path: Path) -> None:
    root = build_package(tmp_path / "p", vectors="none")
    store = PrebuiltVectorStoreAdapter(root / "index.sqlite", None)
    assert store.get_record("r0001").vector is None
    with pytest.raises(BookAgentError) as info:
        store.search([1.0], 1)
    assert info.value.code == "vector.unavailable" and "lexical_search" in info.value.available_capabilities


def test_unreadable_database(pdf_package: Path) -> None:
    break_package(pdf_package, "not_sqlite")
    store = store_for(pdf_package)
    for call in (lambda: store.get_record("r0001"), lambda: store.search([1.0] * 16, 1)):
        with pytest.raises(BookAgentError) as info:
            call()
        assert info.value.code == "vector.database_unreadable"
    assert [d.code for d in store.validate()] in (["vector.database_unreadable"],
                                                  ["package.database_unreadable"])


# -- read-only ----------------------------------------------------------------------------

def test_nothing_in_the_package_changes_even_for_a_wal_database(pdf_package: Path, tmp_path: Path) -> None:
    con = sqlite3.connect(pdf_package / "index.sqlite")
    assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.close()
    os.chmod(pdf_package / "index.sqlite", 0o444)
    before = tree_fingerprint(pdf_package)
    store = store_for(pdf_package, sidecar_dir=tmp_path / "runtime")
    store.inspect()
    store.validate()
    store.search(store.get_record("r0002").vector, 5)
    list(store.iter_records())
    store.close()
    assert tree_fingerprint(pdf_package) == before
    assert not list(pdf_package.glob("index.sqlite-*"))


# -- validation ---------------------------------------------------------------------------

# breakage -> code of database_checks.check_database (what validate() reports)
FINDINGS = {
    "vector_wrong_length": "package.vector_length_invalid",
    "vector_nan": "package.vector_not_finite",
    "vector_without_record": "package.vector_orphan",
    "record_count_disagrees": "package.record_count_mismatch",
}


@pytest.mark.parametrize("how", sorted(FINDINGS))
def test_validation_findings(pdf_package: Path, how: str) -> None:
    assert [d for d in store_for(pdf_package).validate() if d.severity == "error"] == []
    break_package(pdf_package, how)
    store = store_for(pdf_package)
    found = {d.code: d for d in store.validate()}
    assert found[FINDINGS[how]].severity == "error", found
    hits = store.search(np.ones(16, dtype=np.float32), 20)  # bad rows are left out, not fatal
    assert "ghost" not in {h.record.record_id for h in hits}
    if how in ("vector_wrong_length", "vector_nan"):
        assert found[FINDINGS[how]].details["record_ids"] == ["r0001"] and len(hits) == 9


def test_unnormalised_vectors_claimed_normalised_warn(tmp_path: Path) -> None:
    matrix = np.random.default_rng(1).standard_normal((10, 16)).astype(np.float32) * 3
    root = build_package(tmp_path / "p", vectors=matrix)
    found = {d.code: d for d in store_for(root).validate()}
    assert found["vector.not_normalized"].severity == "warning"


# -- sidecar ------------------------------------------------------------------------------

@pytest.mark.parametrize("copy_below", [0, 1 << 30], ids=["mapped", "read-whole"])
def test_sidecar_is_written_then_memory_mapped(pdf_package: Path, tmp_path: Path, copy_below: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Above READ_WHOLE_BELOW_BYTES the searched sidecar is memory-mapped; below, read whole (a
    truncation under a running process cannot fault it: tests/integration/book/test_truncated_maps.py)."""
    monkeypatch.setattr(vector_sidecar, "COPY_BELOW_BYTES", copy_below)
    monkeypatch.setattr(vector_sidecar, "READ_WHOLE_BELOW_BYTES", copy_below)
    side = tmp_path / "runtime"
    first = store_for(pdf_package, sidecar_dir=side)
    query = first.get_record("r0004").vector
    expected = [(h.record.record_id, h.score) for h in first.search(query, 4)]
    assert first.inspect()["matrix_source"]["source"] == "sqlite"
    assert sorted(p.name for p in side.iterdir()) == sorted([vector_sidecar.NPY, vector_sidecar.IDS, vector_sidecar.STAMP])
    vector_matrix.clear_cache()  # as a new process would
    second = store_for(pdf_package, sidecar_dir=side)
    assert [(h.record.record_id, h.score) for h in second.search(query, 4)] == expected
    loaded = second.load()
    assert loaded.report["source"] == "sidecar"
    mapped = isinstance(loaded.matrix.base, np.memmap) or isinstance(loaded.matrix, np.memmap)
    assert mapped is (copy_below == 0)


def corrupt_npy(side: Path) -> None:
    data = bytearray((side / vector_sidecar.NPY).read_bytes())
    data[-5] ^= 0xFF
    (side / vector_sidecar.NPY).write_bytes(bytes(data))


def nan_in_place_mtime_restored(side: Path) -> None:
    """NaN written into the mapped matrix, its mtime set back: only the ctime tells (no user sets it)."""
    path = side / vector_sidecar.NPY
    st = path.stat()
    matrix = np.load(path, mmap_mode="r+")
    matrix[0, 0] = np.nan
    matrix.flush()
    del matrix
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def fifo_instead(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda side, db: os.utime(db, ns=(1, 1)), "stale: mtime_ns"),
    (lambda side, db: nan_in_place_mtime_restored(side), "corrupt: matrix"),
    (lambda side, db: fifo_instead(side / vector_sidecar.NPY), "corrupt: unreadable"),
    (lambda side, db: fifo_instead(side / vector_sidecar.STAMP), "stamp unreadable"),
    (lambda side, db: corrupt_npy(side), "corrupt: matrix"),
    (lambda side, db: (side / vector_sidecar.NPY).write_bytes(b"\x93NUMPY"), "corrupt: matrix"),
    (lambda side, db: (side / vector_sidecar.IDS).write_text('["x"]'), "corrupt: ids"),
    (lambda side, db: (side / vector_sidecar.STAMP).write_text("{"), "stamp unreadable"),
    (lambda side, db: (side / vector_sidecar.NPY).unlink(), "corrupt: unreadable"),
])
def test_stale_or_corrupt_sidecars_are_rebuilt(pdf_package: Path, tmp_path: Path, damage: Any, reason: str) -> None:
    side = tmp_path / "runtime"
    query = store_for(pdf_package, sidecar_dir=side).get_record("r0004").vector
    expected = [(h.record.record_id, h.score) for h in store_for(pdf_package, sidecar_dir=side).search(query, 4)]
    vector_matrix.clear_cache()
    damage(side, pdf_package / "index.sqlite")
    store = store_for(pdf_package, sidecar_dir=side)
    assert [(h.record.record_id, h.score) for h in store.search(query, 4)] == expected
    assert store.load().report["source"] == "sqlite" and store.load().report["sidecar"] == reason
    vector_matrix.clear_cache()  # the rebuilt sidecar is sound again
    assert store_for(pdf_package, sidecar_dir=side).load().report["source"] == "sidecar"


def test_sidecar_pinned_to_the_database_hash(pdf_package: Path, tmp_path: Path) -> None:
    side = tmp_path / "runtime"
    store_for(pdf_package, sidecar_dir=side).load()
    vector_matrix.clear_cache()
    report = store_for(pdf_package, sidecar_dir=side, database_sha256="0" * 64).load().report
    assert report["sidecar"] == "stale: database sha256"


def test_unwritable_sidecar_dir_still_searches(pdf_package: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = store_for(pdf_package, sidecar_dir=blocker / "runtime")
    assert len(store.search(np.ones(16, dtype=np.float32), 3)) == 3
    assert store.load().report["sidecar_written"] is False


def test_cosine_normalises_unnormalised_rows_once(tmp_path: Path) -> None:
    matrix = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    manifest = write_db(tmp_path / "db.sqlite", matrix)
    store = PrebuiltVectorStoreAdapter(tmp_path / "db.sqlite", manifest, sidecar_dir=tmp_path / "rt")
    hits = store.search([0.0, 1.0], 3)
    assert [h.record.record_id for h in hits] == ["id0000", "id0001", "id0002"]
    assert [h.score for h in hits] == pytest.approx([0.8, 0.0, 0.0])
    vector_matrix.clear_cache()
    again = PrebuiltVectorStoreAdapter(tmp_path / "db.sqlite", manifest, sidecar_dir=tmp_path / "rt")
    assert [h.score for h in again.search([0.0, 1.0], 3)] == pytest.approx([0.8, 0.0, 0.0])
    assert again.load().report["source"] == "sidecar"
