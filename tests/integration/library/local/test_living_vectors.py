"""The local approximate vector index lives: a book added is encoded with the trained index into
a segment of its own (the base untouched), a removal is a filter, drift measures when a retrain
is due, and `compact` retrains. A writer killed with kill -9 at any of its commit points (an
add, a removal, a retrain) leaves the previous generation or the new one, never a mix, and its
debris goes at the next write; two writers are serialised; a build asked not to wait gives up at
once while another holds the library, and the generation in place serves meanwhile.

Real package databases, real faiss files, real processes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.services.library.writer import RETRAIN_DRIFT
from book_agent.testing.library_books import (
    DIMENSIONS,
    MODEL,
    sample_library,
    unit_rows,
    vector_manifest,
    write_package_database,
)
from book_agent.testing.library_vectors_contract import stamp
from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter
from book_agent_adapters.library.local.vectors.faiss_index_files import named_files, read_pointer
from book_agent_adapters.library.local.vectors.faiss_vector_index import (
    FaissLibraryVectors,
    group_key,
)
from tests.support import REPO_ROOT
from tests.support.build_lock_holder import another_writer_holding
from tests.support.parts import require_real_part

RECORDS = 300
CENTRES = np.random.default_rng(3).standard_normal((12, DIMENSIONS)).astype(np.float32)


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit rows tight around 12 shared centres (what the index is trained on)."""
    rng = np.random.default_rng(seed)
    v = CENTRES[rng.integers(0, len(CENTRES), n)] + 0.15 * rng.standard_normal((n, DIMENSIONS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> dict[str, tuple[str, str, dict]]:
    """book id -> (package database, vector manifest) for b0..b2 (clustered) and `far` (rows unlike them)."""
    require_real_part(importlib.util.find_spec("faiss") is not None, "faiss-cpu")
    root = tmp_path_factory.mktemp("living-vectors")
    books = sample_library(RECORDS)
    out = {}
    for seed, book in enumerate(books.values()):
        vectors = clustered(RECORDS, 40 + seed)
        out[book.book_id] = (str(write_package_database(root / book.book_id, book.book_id, book.records, vectors)),
                             vector_manifest(vectors))
    far = unit_rows(RECORDS, DIMENSIONS, 77)
    records = [r.__class__(r.record_id, r.text, headings=r.headings, seq=r.seq) for r in books["b0"].records]
    out["far"] = (str(write_package_database(root / "far", "far", records, far)), vector_manifest(far))
    return out


def stores_of(spec, book_ids, sidecars: Path) -> dict[str, PrebuiltVectorStoreAdapter]:
    return {b: PrebuiltVectorStoreAdapter(Path(spec[b][0]), spec[b][1], sidecar_dir=sidecars / b, book_id=b)
            for b in book_ids}


def hits(port: FaissLibraryVectors, stores, query: np.ndarray, depth: int = 20) -> list[tuple[str, float]]:
    index = port.open(MODEL, DIMENSIONS, stamp(list(stores)), stores, in_place=True)
    try:
        return index.search(query, depth, sorted(set(stores) & set(index.books)))
    finally:
        index.close()


QUERIES = [clustered(1, 900 + i)[0] for i in range(6)]


def pointer(folder: Path) -> dict:
    found, _ = read_pointer(folder / "vectors" / f"{group_key(MODEL, DIMENSIONS)}.json")
    assert found is not None
    return found


def test_an_added_book_costs_its_rows_and_a_removal_writes_the_pointer_only(tmp_path, spec):
    port = FaissLibraryVectors(tmp_path / "library", min_vectors=1)
    base = stores_of(spec, ["b0", "b1"], tmp_path / "side")
    port.build(MODEL, DIMENSIONS, stamp(list(base)), base, None)
    first = pointer(tmp_path / "library")
    files = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "library" / "vectors").iterdir()}
    seen: list[tuple[int, int]] = []
    three = stores_of(spec, ["b0", "b1", "b2"], tmp_path / "side")
    assert port.build(MODEL, DIMENSIONS, stamp(list(three)), three, lambda d, t: seen.append((d, t))) == 3 * RECORDS
    assert seen[-1] == (RECORDS, RECORDS)  # only the added book's rows were encoded
    added = pointer(tmp_path / "library")
    assert added["files"] == first["files"] and len(added["segments"]) == 1 and added["sequence"] == 1
    assert all((tmp_path / "library" / "vectors" / n).stat().st_mtime_ns == t for n, t in files.items()
               if not n.endswith(".json"))  # no byte of the base rewritten
    state = port.state(MODEL, DIMENSIONS, stamp(list(three)))
    assert state.fresh and state.generation.endswith(".1") and state.drift == pytest.approx(RECORDS / (2 * RECORDS))
    kept = stores_of(spec, ["b0", "b2"], tmp_path / "side")
    assert port.build(MODEL, DIMENSIONS, stamp(list(kept)), kept, None) == 2 * RECORDS
    removed = pointer(tmp_path / "library")
    assert removed["segments"] == added["segments"] and [b["book_id"] for b in removed["books"] if b["removed"]] == ["b1"]
    for query in QUERIES:
        assert all(not k.startswith("b1#") for k, _ in hits(port, kept, query, 3 * RECORDS))


def test_drift_is_churn_or_the_added_rows_fit_and_compaction_retrains(tmp_path, spec):
    port = FaissLibraryVectors(tmp_path / "library", min_vectors=1)
    base = stores_of(spec, ["b0", "b1", "b2"], tmp_path / "side")
    port.build(MODEL, DIMENSIONS, stamp(list(base)), base, None)
    alike = stores_of(spec, ["b0", "b1", "b2"], tmp_path / "side")
    assert port.state(MODEL, DIMENSIONS, stamp(list(alike))).drift == 0
    port.build(MODEL, DIMENSIONS, stamp(["b0", "b1"]), {b: base[b] for b in ("b0", "b1")}, None)
    assert port.state(MODEL, DIMENSIONS, stamp(["b0", "b1"])).drift == pytest.approx(1 / 3)  # churn: b2 removed
    port.compact(MODEL, DIMENSIONS, stamp(["b0", "b1"]), {b: base[b] for b in ("b0", "b1")}, None)
    assert port.state(MODEL, DIMENSIONS, stamp(["b0", "b1"])).drift == 0
    with_far = stores_of(spec, ["b0", "b1", "far"], tmp_path / "side")
    port.build(MODEL, DIMENSIONS, stamp(list(with_far)), with_far, None)
    fit = pointer(tmp_path / "library")
    churn = fit["changed"] / fit["base_rows"]
    drift = port.state(MODEL, DIMENSIONS, stamp(list(with_far))).drift
    assert drift > max(churn, RETRAIN_DRIFT)  # rows far from every trained centroid: their residual says so
    port.compact(MODEL, DIMENSIONS, stamp(list(with_far)), with_far, None)
    assert port.state(MODEL, DIMENSIONS, stamp(list(with_far))).drift == 0 and pointer(tmp_path / "library")["segments"] == []


def test_a_build_that_must_not_wait_is_busy_at_once_and_the_generation_in_place_serves(tmp_path, spec):
    port = FaissLibraryVectors(tmp_path / "library", min_vectors=1)
    base = stores_of(spec, ["b0", "b1"], tmp_path / "side")
    port.build(MODEL, DIMENSIONS, stamp(list(base)), base, None)
    three = stores_of(spec, ["b0", "b1", "b2"], tmp_path / "side")
    with another_writer_holding(tmp_path / "library", hold_s=30):
        started = time.monotonic()
        with pytest.raises(BookAgentError) as caught:
            port.build(MODEL, DIMENSIONS, stamp(list(three)), three, None, wait=False)
        assert caught.value.code == "vector.index_busy" and time.monotonic() - started < 2
        assert hits(port, three, QUERIES[0])  # b0 and b1 through the generation in place
    port.build(MODEL, DIMENSIONS, stamp(list(three)), three, None, wait=False)
    assert port.state(MODEL, DIMENSIONS, stamp(list(three))).fresh


KILLED = """
import json, os, sys
from pathlib import Path
from book_agent.testing.library_books import DIMENSIONS, MODEL
from book_agent.services.library.writer import RETRAIN_DRIFT
from book_agent.testing.library_vectors_contract import stamp
from book_agent_adapters.library.local.vectors import faiss_vector_index as fvi
from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter

folder, point, action, spec = Path(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
stores = {b: PrebuiltVectorStoreAdapter(Path(p), m, sidecar_dir=folder.parent / "child" / b, book_id=b)
          for b, (p, m) in spec.items()}

def crash(name):
    if name == point:
        os.kill(os.getpid(), 9)

fvi.crash_point = crash
port = fvi.FaissLibraryVectors(folder, min_vectors=1)
print((port.compact if action == "compact" else port.build)(MODEL, DIMENSIONS, stamp(list(stores)), stores, None))
"""

# (what runs, its commit point, the books before it, the books it brings the index to)
POINTS = [("build", "add:before-pointer", ["b0", "b1"], ["b0", "b1", "b2"]),
          ("build", "add:after-pointer", ["b0", "b1"], ["b0", "b1", "b2"]),
          ("build", "remove:before-pointer", ["b0", "b1", "b2"], ["b0", "b2"]),
          ("build", "remove:after-pointer", ["b0", "b1", "b2"], ["b0", "b2"]),
          ("compact", "retrain:before-pointer", ["b0", "b1", "b2"], ["b0", "b1", "b2"]),
          ("compact", "retrain:after-pointer", ["b0", "b1", "b2"], ["b0", "b1", "b2"])]


def child(folder: Path, point: str, action: str, spec, book_ids) -> subprocess.CompletedProcess:
    chosen = json.dumps({b: spec[b] for b in book_ids})
    return subprocess.run([sys.executable, "-c", KILLED, str(folder), point, action, chosen], cwd=REPO_ROOT,
                          capture_output=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": f"{REPO_ROOT}:{REPO_ROOT / 'adapters'}"})


def living(folder: Path, spec, before: list[str], sidecars: Path) -> FaissLibraryVectors:
    """b0, b1 built in full, then extended to `before` (a living generation)."""
    port = FaissLibraryVectors(folder, min_vectors=1)
    for books in (["b0", "b1"], before):
        stores = stores_of(spec, books, sidecars)
        port.build(MODEL, DIMENSIONS, stamp(books), stores, None)
    return port


@pytest.mark.parametrize(("action", "point", "before", "target"), POINTS)
def test_a_writer_killed_at_a_commit_point_leaves_one_generation_and_no_debris(tmp_path, spec, action, point,
                                                                               before, target):
    folder = tmp_path / "library"
    port = living(folder, spec, before, tmp_path / "side")
    every = stores_of(spec, ["b0", "b1", "b2"], tmp_path / "side")
    old = {i: hits(port, {b: every[b] for b in target}, q) for i, q in enumerate(QUERIES)}
    old_generation = port.state(MODEL, DIMENSIONS, stamp(target)).generation
    reference = living(tmp_path / "reference", spec, before, tmp_path / "side")  # the same change, not killed
    (reference.compact if action == "compact" else reference.build)(
        MODEL, DIMENSIONS, stamp(target), {b: every[b] for b in target}, None)
    new = {i: hits(reference, {b: every[b] for b in target}, q) for i, q in enumerate(QUERIES)}
    run = child(folder, point, action, spec, target)
    assert run.returncode == -signal.SIGKILL, run.stderr.decode()
    state = port.state(MODEL, DIMENSIONS, stamp(target))
    assert state.intact
    killed_after = point.endswith("after-pointer")
    assert state.fresh == (killed_after or action == "compact") and (state.generation != old_generation) == killed_after
    served = {i: hits(port, {b: every[b] for b in target}, q) for i, q in enumerate(QUERIES)}
    assert served == (new if killed_after else old)  # the old generation or the new one, never a mix
    port.build(MODEL, DIMENSIONS, stamp(target), {b: every[b] for b in target}, None)  # the next writer sweeps
    vectors = folder / "vectors"
    names = {p.name for p in vectors.iterdir()}
    assert not [n for n in names if n.startswith(".")], names
    assert names == named_files(pointer(folder)) | {f"{group_key(MODEL, DIMENSIONS)}.json"}


def test_two_writers_at_once_are_serialised(tmp_path, spec):
    folder = tmp_path / "library"
    living(folder, spec, ["b0", "b1"], tmp_path / "side")
    target = ["b0", "b1", "b2"]
    chosen = json.dumps({b: spec[b] for b in target})
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT}:{REPO_ROOT / 'adapters'}"}
    procs = [subprocess.Popen([sys.executable, "-c", KILLED, str(folder), "none", "build", chosen], cwd=REPO_ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1].decode() for o in outs]
    assert [int(o[0]) for o in outs] == [3 * RECORDS] * 2
    found = pointer(folder)
    assert len(found["segments"]) == 1 and found["sequence"] == 1  # the second writer found it fresh
