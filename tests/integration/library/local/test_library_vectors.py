"""The library's approximate vector index (faiss IVF-SQ8, rescored exactly) for large model groups.

Real faiss, real SQLite packages; the threshold is lowered to 500 vectors so that a library of
a few thousand clustered vectors uses the index. Exact search of the same library (threshold
out of reach) is the reference.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from book_agent.agent import BookAgent, build_agent
from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import APPROXIMATE_MIN_VECTORS
from book_agent_adapters.book.vectors import vector_matrix
from book_agent_adapters.library.local.vectors import faiss_vector_index
from book_agent_adapters.library.local.vectors.faiss_index_files import read_pointer
from book_agent_adapters.library.local.vectors.faiss_training import probes_for
from book_agent_adapters.library.local.vectors.faiss_vector_index import (
    FaissLibraryVectors,
    group_key,
    lists_for,
)
from tests.support import REPO_ROOT
from tests.support.build_lock_holder import another_writer_holding
from tests.support.library_support import register_only
from tests.support.package_builder import build_package, synthetic_records
from tests.support.parts import require_real_part

DIMS = 32
MODEL = "test/random-vectors"
SIZES = {"b0": 1500, "b1": 1200, "b2": 900}
THRESHOLD = 500
CENTRES = np.random.default_rng(1).standard_normal((60, DIMS)).astype(np.float32)


def clustered(n: int, seed: int, dims: int = DIMS) -> np.ndarray:
    """Unit vectors around 60 shared centres (as a model's vectors crowd around topics)."""
    rng = np.random.default_rng(seed)
    centres = CENTRES if dims == DIMS else rng.standard_normal((20, dims)).astype(np.float32)
    v = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.standard_normal((n, dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def make_book(root: Path, book_id: str, n: int, seed: int, dims: int = DIMS, model: str = MODEL) -> Path:
    records = synthetic_records(n, seed=seed, cjk_share=0.0, words=10)
    for r in records:
        r.record_id = f"{book_id}-{r.record_id}"
    return build_package(root / book_id, book_id=book_id, kind="epub", records=records, dims=dims, model=model,
                         vectors=clustered(n, seed, dims), blank_page=False)


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require_real_part(importlib.util.find_spec("faiss") is not None, "faiss-cpu")
    root = tmp_path_factory.mktemp("ann-packages")
    books = {b: make_book(root, b, n, seed) for seed, (b, n) in enumerate(SIZES.items(), start=10)}
    books["late"] = make_book(root, "late", 400, 20)
    books["small"] = make_book(root, "small", 60, 21, dims=8, model="test/other-model")
    return books


def agents(data: Path, threshold: int = THRESHOLD) -> BookAgent:
    return build_agent(data, library_vectors=FaissLibraryVectors(data / "library", min_vectors=threshold))


@pytest.fixture
def library(tmp_path: Path, packages: dict[str, Path]):
    """(approximate, exact) agents over one data dir holding b0, b1, b2 (3,600 vectors)."""
    data = tmp_path / "data"
    approximate, exact = agents(data), agents(data, threshold=10**9)
    for book in SIZES:
        approximate.init(packages[book])
    yield approximate, exact
    approximate.close()
    exact.close()


def queries(n: int = 30) -> list[list[float]]:
    return [list(map(float, v)) for v in clustered(n, 99)]


def vector_hits(agent: BookAgent, ref: str, vector: list[float], top_k: int = 10) -> list[tuple[str, float]]:
    result = agent.search(ref, "", top_k=top_k, query_vector=vector)
    return [(h["evidence_id"], h["scores"]["vector"]) for h in result["hits"]]


def pointer_of(data: Path) -> dict:
    pointer, _ = read_pointer(data / "library" / "vectors" / f"{group_key(MODEL, DIMS)}.json")
    assert pointer is not None
    return pointer


def test_approximate_results_agree_with_exact_and_scores_are_exact_cosines(library):
    approximate, exact = library
    recalls = []
    for vector in queries():
        got, want = vector_hits(approximate, "@all", vector), vector_hits(exact, "@all", vector)
        recalls.append(len({k for k, _ in got} & {k for k, _ in want}) / len(want))
        exact_scores = dict(want)
        for key, score in got:
            if key in exact_scores:
                assert score == pytest.approx(exact_scores[key], abs=1e-5)
    assert np.mean(recalls) >= 0.95
    result = approximate.search("@all", "", top_k=10, query_vector=queries()[0])
    group = result["library"]["model_groups"][0]
    assert group["search"] == "approximate" and group["vector_index"]["vectors"] == 3600
    assert result["channels"]["vector"]["groups"][0]["search"] == "approximate"
    assert exact.search("@all", "", query_vector=queries()[0])["library"]["model_groups"][0]["search"] == "exact"


def test_scores_are_the_cosines_of_the_books_own_vectors(library, packages):
    approximate, _ = library
    rows = {f"b{i}#b{i}-s{j:06d}": v for i, (b, n) in enumerate(SIZES.items())
            for j, v in enumerate(clustered(n, 10 + i))}
    vector = np.asarray(queries()[3], dtype=np.float32)
    for key, score in vector_hits(approximate, "@all", list(map(float, vector)), top_k=20):
        assert score == pytest.approx(float(rows[key] @ vector), abs=1e-5)


def test_prepare_builds_the_index_with_progress_and_a_search_reuses_it(library):
    approximate, _ = library
    seen: list[tuple[int, int]] = []
    prepared = approximate.prepare("@all", progress=lambda done, total: seen.append((done, total)))
    (group,) = prepared["vector_indexes"]
    generation = group["vector_index"]["generation"]
    assert group == {"model": MODEL, "dimensions": DIMS, "vectors": 3600, "search": "approximate",
                     "vector_index": {"vectors": 3600, "rebuilt": True, "generation": generation, "drift": 0.0}}
    assert (3600, 3600) in seen
    pointer = pointer_of(approximate.data_dir)
    assert pointer["nlist"] == lists_for(3600) and pointer["vectors"] == 3600
    assert pointer["nprobe"] == lists_for(3600)  # a small index probes up to 128 lists: all of its 92
    assert [b["book_id"] for b in pointer["books"]] == ["b0", "b1", "b2"]
    result = approximate.search("@all", "", query_vector=queries()[0])
    assert result["library"]["model_groups"][0]["vector_index"]["rebuilt"] is False
    with agents(approximate.data_dir) as other:  # another process: reads the file, does not rebuild
        assert other.search("@all", "", query_vector=queries()[0])["library"]["model_groups"][0]["vector_index"] \
            == {"vectors": 3600, "rebuilt": False, "generation": generation}


def test_a_book_registered_is_added_to_the_trained_index_and_a_removal_is_a_filter(library, packages):
    """Registering a book adds its rows to the index in place as a segment of their own (the
    base is neither retrained nor rewritten); removing it takes effect at the next search
    (a filter; its segment goes with it); `prepare --full` retrains."""
    approximate, exact = library
    approximate.prepare("@all")
    base = pointer_of(approximate.data_dir)["files"]["index"]["name"]
    approximate.init(packages["late"])  # the registration adds it (a search never builds)
    vector = list(map(float, clustered(400, 20)[7]))  # a vector of the late book's
    result = approximate.search("@all", "", top_k=5, query_vector=vector)
    added = result["library"]["model_groups"][0]["vector_index"]
    assert added["vectors"] == 4000 and added["rebuilt"] is False and added["generation"].endswith(".1")
    assert result["hits"][0]["evidence_id"] == "late#late-s000007"
    pointer = pointer_of(approximate.data_dir)
    assert pointer["files"]["index"]["name"] == base and len(pointer["segments"]) == 1
    assert pointer["segments"][0]["rows"] == 400 and pointer["base_rows"] == 3600
    approximate.remove("late")
    result = approximate.search("@all", "", top_k=5, query_vector=vector)
    removed = result["library"]["model_groups"][0]["vector_index"]
    assert removed["vectors"] == 3600 and removed["generation"].endswith(".2")
    assert all(h["book_id"] != "late" for h in result["hits"])
    files = sorted(p.name for p in (approximate.data_dir / "library" / "vectors").iterdir())
    current = pointer_of(approximate.data_dir)
    assert current["segments"] == [] and current["changed"] == 800  # 400 rows added, then removed
    assert files == sorted([f"{group_key(MODEL, DIMS)}.json", *(current["files"][k]["name"]
                                                                 for k in ("index", "ids", "trained"))])
    retrained = approximate.prepare("@all", full=True)["vector_indexes"][0]["vector_index"]
    assert retrained["compacted"] is True and retrained["drift"] == 0.0
    assert pointer_of(approximate.data_dir)["files"]["index"]["name"] != base


def test_a_search_does_not_wait_for_another_threads_build_and_merges_the_new_book_exactly(library, packages):
    """While one thread brings the group's index up to date (holding the library's vector lock),
    a search from another thread does not wait: the generation open serves the books it holds,
    the book registered since is searched exactly and merged by score; once the build is done the
    new generation serves."""
    approximate, exact = library
    approximate.prepare("@all")
    register_only(approximate, packages["late"])  # stale now: a writer has yet to add it
    groups = approximate._library._vectors
    vector = list(map(float, clustered(400, 20)[7]))
    held, release = threading.Event(), threading.Event()

    def builder() -> None:
        with groups._lock:
            held.set()
            release.wait(30)

    thread = threading.Thread(target=builder)
    thread.start()
    try:
        assert held.wait(10)
        result = approximate.search("@all", "", top_k=10, query_vector=vector)
    finally:
        release.set()
        thread.join()
    group = result["library"]["model_groups"][0]
    assert group["search"] == "approximate" and group["vector_index"]["exact_books"] == ["late"]
    assert "late" in group["note"] and group["vector_index"]["vectors"] == 3600
    assert result["hits"][0]["evidence_id"] == "late#late-s000007"
    want = vector_hits(exact, "@all", vector)
    got = [(h["evidence_id"], h["scores"]["vector"]) for h in result["hits"]]
    assert len({k for k, _ in got} & {k for k, _ in want}) >= 9
    assert all(score == pytest.approx(dict(want)[k], abs=1e-5) for k, score in got if k in dict(want))
    still = approximate.search("@all", "", top_k=10, query_vector=vector)["library"]["model_groups"][0]
    assert still["vector_index"]["exact_books"] == ["late"]  # a search never builds: served in place
    assert still["vector_index"]["stale"]["code"] == "vector.index_pending" and still["vector_index"]["rebuilt"] is False
    approximate.prepare("@all")  # a writer adds it
    after = approximate.search("@all", "", top_k=10, query_vector=vector)["library"]["model_groups"][0]
    assert after["search"] == "approximate" and after["vector_index"]["rebuilt"] is False
    assert after["vector_index"]["vectors"] == 4000 and "exact_books" not in after["vector_index"]


def test_while_another_writer_holds_the_library_a_search_serves_in_place_and_says_which_generation(
        library, packages, monkeypatch):
    """Another writer (an add, a retrain) holds the library's build lock: a search neither waits
    nor fails; the group's generation in place serves the books it holds, the book registered
    since is searched exactly and merged, and the result names the generation served and why it
    is stale. Once the writer is done the next search brings the index up to date."""
    from book_agent.services.library import vector_indexes as library_vector_indexes

    approximate, _ = library
    monkeypatch.setattr(library_vector_indexes, "BUSY_RETRY_S", 0.0)
    served = approximate.prepare("@all")["vector_indexes"][0]["vector_index"]["generation"]
    register_only(approximate, packages["late"])
    vector = list(map(float, clustered(400, 20)[7]))
    with another_writer_holding(approximate.data_dir / "library"):
        started = time.monotonic()
        busy = approximate.search("@all", "", top_k=10, query_vector=vector)
        assert time.monotonic() - started < 30
    group = busy["library"]["model_groups"][0]
    assert group["search"] == "approximate" and group["vector_index"]["generation"] == served
    assert group["vector_index"]["stale"]["code"] == "vector.index_pending"
    assert group["vector_index"]["exact_books"] == ["late"] and busy["hits"][0]["evidence_id"] == "late#late-s000007"
    approximate.prepare("@all")  # the writer's turn (no search builds)
    after = approximate.search("@all", "", top_k=10, query_vector=vector)["library"]["model_groups"][0]
    assert after["vector_index"]["generation"] == served + ".1" and "stale" not in after["vector_index"]


def test_a_long_running_server_retrains_a_drifted_group_in_the_background(library, packages, monkeypatch):
    """A server (serve_long) whose group drifted past RETRAIN_DRIFT retrains it by its background
    writer, on the writer's own timer (no search asks for it); searches keep answering from the
    generation they have, then move to the new base."""
    from book_agent.services.library import vector_indexes as library_vector_indexes
    from book_agent.services.library import writer as library_writer

    approximate, _ = library
    monkeypatch.setattr(library_vector_indexes, "GENERATION_RECHECK_S", 0.0)
    monkeypatch.setattr(library_writer, "POLL_S", 0.05)
    approximate.prepare("@all")
    base = pointer_of(approximate.data_dir)["files"]["index"]["name"]
    approximate.init(packages["late"])
    approximate.remove("b2")  # churn (400 added + 900 removed) / 3600 trained: 0.36
    living = approximate.search("@all", "", top_k=5, query_vector=queries()[0])["library"]["model_groups"][0]
    assert "." in living["vector_index"]["generation"]  # extended by the registration, not retrained
    approximate.serve_long(writer_in_process=True)
    writer = approximate._library.writer
    assert writer is not None
    deadline = time.monotonic() + 120
    while not any(job.vectors == "retrain" for job in writer.jobs):
        assert time.monotonic() < deadline, "the background writer never retrained"
        time.sleep(0.05)
    after = approximate.search("@all", "", top_k=5, query_vector=queries()[0])["library"]["model_groups"][0]
    assert "." not in after["vector_index"]["generation"] and after["vector_index"]["vectors"] == 3100
    assert pointer_of(approximate.data_dir)["files"]["index"]["name"] != base
    assert pointer_of(approximate.data_dir)["segments"] == [] and pointer_of(approximate.data_dir)["changed"] == 0


def test_a_list_narrows_the_approximate_search_to_its_books(library):
    approximate, exact = library
    recalls = []
    for vector in queries(15):
        got, want = vector_hits(approximate, "b0,b1", vector), vector_hits(exact, "b0,b1", vector)
        assert {k.split("#")[0] for k, _ in got} <= {"b0", "b1"}
        recalls.append(len({k for k, _ in got} & {k for k, _ in want}) / len(want))
    assert np.mean(recalls) >= 0.95
    narrowed = approximate.search("b0,b1", "", query_vector=queries()[0])
    assert narrowed["library"]["model_groups"][0]["search"] == "approximate"
    # a part of the group holding fewer vectors than the threshold is searched exactly
    with agents(approximate.data_dir, threshold=1000) as higher:
        part = higher.search("b2,b1", "", query_vector=queries()[0])
        assert part["library"]["model_groups"][0]["search"] == "approximate"  # 2,100 vectors
        part = higher.search("b2,b2", "", query_vector=queries()[0])
        assert part["library"]["model_groups"][0]["search"] == "exact"  # 900
        assert {h["book_id"] for h in part["hits"]} == {"b2"}


def test_a_mixed_model_library_answers_per_group(library, packages):
    approximate, exact = library
    approximate.init(packages["small"])
    vector = queries()[0]
    result = approximate.search("@all", "", top_k=10, query_vector=vector)
    groups = {g["model"]: g for g in result["library"]["model_groups"]}
    assert groups[MODEL]["search"] == "approximate" and groups["test/other-model"]["search"] == "none"
    assert "8" in next(b for b in result["books"] if b["book_id"] == "small")["vector"]
    got, want = vector_hits(approximate, "@all", vector), vector_hits(exact, "@all", vector)
    assert len({k for k, _ in got} & {k for k, _ in want}) >= 9
    with pytest.raises(BookAgentError) as wrong:  # fits no group: refused, as by one book (issue 44)
        approximate.search("@all", "river", query_vector=[0.5] * 5)
    assert wrong.value.code == "query.vector_invalid"
    assert wrong.value.details["expected_dimensions"] == sorted({8, DIMS})
    prepared = approximate.prepare("@all")["vector_indexes"]
    assert [(g["model"], g["search"]) for g in prepared] == [("test/other-model", "exact"), (MODEL, "approximate")]


def test_a_corrupt_index_is_rebuilt(library):
    approximate, _ = library
    approximate.prepare("@all")
    folder = approximate.data_dir / "library" / "vectors"
    for kind in ("index", "ids"):
        damaged = folder / pointer_of(approximate.data_dir)["files"][kind]["name"]
        damaged.write_bytes(damaged.read_bytes()[:1000])  # truncated
        with agents(approximate.data_dir) as fresh:
            group = fresh.search("@all", "", query_vector=queries()[0])["library"]["model_groups"][0]
        assert group["search"] == "approximate"
        assert (group["vector_index"]["vectors"], group["vector_index"]["rebuilt"]) == (3600, True)
    pointer_file = folder / f"{group_key(MODEL, DIMS)}.json"
    pointer_file.write_text("{not json")
    with agents(approximate.data_dir) as fresh:
        described = fresh.search("@all", "", query_vector=queries()[0])["library"]["model_groups"][0]["vector_index"]
        assert (described["vectors"], described["rebuilt"]) == (3600, True)


def test_an_index_faiss_cannot_read_is_discarded_and_rebuilt(library):
    approximate, _ = library
    approximate.prepare("@all")
    folder = approximate.data_dir / "library" / "vectors"
    pointer_file = folder / f"{group_key(MODEL, DIMS)}.json"
    pointer = json.loads(pointer_file.read_text())
    garbage = folder / pointer["files"]["index"]["name"]
    garbage.write_bytes(b"not a faiss index" * 100)  # vouched for by its pointer: only faiss can tell
    pointer["files"]["index"] = faiss_vector_index.file_facts(garbage)
    pointer_file.write_text(json.dumps(pointer))
    with agents(approximate.data_dir) as fresh:
        group = fresh.search("@all", "", query_vector=queries()[0])["library"]["model_groups"][0]
    assert group["search"] == "approximate" and group["vector_index"]["rebuilt"] is True


def test_without_faiss_a_large_group_is_searched_exactly_with_a_note(library, monkeypatch):
    approximate, exact = library

    def missing() -> None:
        raise BookAgentError("vector.index_unavailable", "faiss could not be imported (test)")

    monkeypatch.setattr(faiss_vector_index, "faiss_module", missing)
    vector = queries()[0]
    result = approximate.search("@all", "", top_k=10, query_vector=vector)
    group = result["library"]["model_groups"][0]
    assert group["search"] == "exact" and "faiss could not be imported" in group["note"]
    assert [h["evidence_id"] for h in result["hits"]] == [k for k, _ in vector_hits(exact, "@all", vector)]


@pytest.mark.parametrize("code", ["engine.unavailable", "engine.timeout", "vector.index_unreadable"])
def test_an_index_that_cannot_be_looked_up_any_more_is_searched_exactly(library, monkeypatch, code):
    """The index open and cached, then its backend fails when the search re-checks it (a Milvus
    server gone between two searches; seen only when the re-check window had passed, so the
    test makes every search re-check): the channel answers exactly, with the code said."""
    from book_agent.services.library import vector_indexes as library_vector_indexes

    approximate, exact = library
    vector = queries()[0]
    assert approximate.search("@all", "", top_k=10, query_vector=vector)["library"]["model_groups"][0]["search"] \
        == "approximate"

    def gone(*_: object, **__: object) -> None:
        raise BookAgentError(code, "the index's backend cannot be reached (test)")

    monkeypatch.setattr(library_vector_indexes, "GENERATION_RECHECK_S", 0.0)
    for method in ("state", "open", "build"):
        monkeypatch.setattr(FaissLibraryVectors, method, gone)
    result = approximate.search("@all", "", top_k=10, query_vector=vector)
    group = result["library"]["model_groups"][0]
    assert group["search"] == "exact" and "cannot be reached" in group["note"] and group["code"] == code
    assert [h["evidence_id"] for h in result["hits"]] == [k for k, _ in vector_hits(exact, "@all", vector)]


def test_a_reader_sees_the_old_index_or_the_new_never_half(library, packages):
    """A reader opening and searching the index in a loop while the library is rebuilt three
    times (a book registered, removed, registered): every open finds a whole index."""
    approximate, _ = library
    approximate.prepare("@all")
    approximate.init(packages["late"])
    stores = {b: approximate.books.open(b).vector_parts[0] for b in [*SIZES, "late"]}
    for store in stores.values():
        store.load()  # the matrices stay in the process cache when the books are closed
    port = FaissLibraryVectors(approximate.data_dir / "library", min_vectors=THRESHOLD)
    pointer_path = approximate.data_dir / "library" / "vectors" / f"{group_key(MODEL, DIMS)}.json"
    problems: list[str] = []
    answered = [0]
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            pointer, _ = read_pointer(pointer_path)
            if pointer is None:
                problems.append("no pointer")
                continue
            try:
                index = port.open(MODEL, DIMS, pointer["stamp"], stores)
                answered[0] += bool(index.search(np.asarray(queries()[1], dtype=np.float32), 10))
                index.close()
            except BookAgentError as exc:
                if exc.code != "vector.index_stale":  # a newer pointer between two reads: fine
                    problems.append(f"{exc.code}: {exc.message}")

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        approximate.search("@all", "", query_vector=queries()[0])  # rebuilt with late
        approximate.remove("late")
        approximate.search("@all", "", query_vector=queries()[0])  # without
        approximate.init(packages["late"])
        approximate.search("@all", "", query_vector=queries()[0])  # with again
    finally:
        stop.set()
        thread.join(60)
    assert problems == [] and answered[0] > 0
    assert not [p for p in pointer_path.parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_a_books_rows_are_mapped_without_reading_its_ids(library):
    approximate, _ = library
    store = approximate.books.open("b0").vector_parts[0]
    whole = store.load().matrix.copy()
    store.close()
    vector_matrix.clear_cache()
    rows = store.rows()  # the sidecar written by load(): mapped, its ids left unread
    assert rows.shape == (1500, DIMS) and np.array_equal(rows, whole)
    assert vector_matrix._CACHE == {} and len(vector_matrix._ROWS) == 1


def test_lists_and_group_keys():
    assert lists_for(1_000_000) == 2000 and lists_for(150_000) == 775
    # probes fixed at training: 128 under 150k vectors (recall@50 .992 at 100k, where 64 found
    # .977; the library's threshold is 100k for it), 64 from there (1M's ranking as it was)
    assert probes_for(100_000, lists_for(100_000)) == 128 and probes_for(149_999, lists_for(149_999)) == 128
    assert probes_for(150_000, 775) == 64 and probes_for(1_000_000, 2000) == 64 and probes_for(3600, 92) == 92
    assert APPROXIMATE_MIN_VECTORS == 100_000
    assert lists_for(3600) == 92 and lists_for(10) == 1  # at least 39 training vectors per list
    assert group_key("a/b", 384) != group_key("a-b", 384) != group_key("a/b", 768)
    assert "/" not in group_key("BAAI/bge-m3", 1024)


def test_a_small_library_never_imports_faiss(library):
    approximate, _ = library
    code = ("import sys\nfrom book_agent import BookAgent\n"
            f"agent = BookAgent({str(approximate.data_dir)!r})\n"
            f"agent.search('@all', 'army river', query_vector={queries()[0]!r})\n"
            "print('faiss' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                         cwd=REPO_ROOT)
    assert out.stdout.strip() == "False"  # 3,600 vectors: far below the default threshold


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="reads /proc/self/maps (Linux)")
def test_the_index_is_searched_from_memory_not_mapped_from_its_file(library):
    """A mapped IVF-SQ8 index scanned its lists through the page cache (3.3x the CPU of the
    same search in memory at 100k vectors, tools/bench/peers/bench_peers.py): a reader holds its own copy,
    which a rewrite of the file in place cannot reach."""
    approximate, _ = library
    approximate.prepare("@all")
    vector = queries()[5]
    before = vector_hits(approximate, "@all", vector)
    index_file = approximate.data_dir / "library" / "vectors" / pointer_of(approximate.data_dir)["files"]["index"]["name"]
    assert str(index_file) not in Path("/proc/self/maps").read_text()
    with open(index_file, "r+b") as handle:  # in place: same inode, so an open reader keeps using it
        handle.seek(index_file.stat().st_size // 2)
        handle.write(b"\0" * (index_file.stat().st_size // 4))
    assert vector_hits(approximate, "@all", vector) == before
