"""The local library index lives: a book added costs that book (its own postings, the base's
weights kept), a removal takes effect at once (a filter), idf comes from the live records at query
time, and a compaction converges on the exact rebuild. A writer killed with kill -9 at any of
its commit points leaves the previous generation or the new one, never a mix, and its debris goes
at the next write; two writers are serialised; a search never waits for one.

Real package databases (tests/support/package_builder), real index files, real processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryMember
from book_agent_adapters.library.local.lexical.library_lexical_index import (
    SqliteLibraryIndex,
    sweep_dead_build,
)
from tests.integration.library.local.test_library_impact_index import QUERIES, members_of, records
from tests.support import REPO_ROOT
from tests.support.build_lock_holder import another_writer_holding


def stamp(members: list[LibraryMember]) -> dict[str, str]:
    return {"books": ";".join(f"{m.book_id}={m.stamp}" for m in sorted(members, key=lambda m: m.book_id))}


def hits(index: SqliteLibraryIndex, query: str, top_k: int = 400) -> list[tuple[str, float]]:
    reader = index.open()
    try:
        return [(h.record_id, h.score) for h in reader.search(query, top_k)]
    finally:
        reader.close()


def scores_equal(got: list[tuple[str, float]], want: list[tuple[str, float]], rel: float = 1e-6) -> bool:
    a, b = dict(got), dict(want)
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= rel * max(1.0, abs(b[k])) for k in a)


@pytest.fixture(scope="module")
def books(tmp_path_factory) -> list[LibraryMember]:
    return members_of(tmp_path_factory.mktemp("living"), records(500, seed=31), 5)


def exact(tmp_path: Path, members: list[LibraryMember]) -> SqliteLibraryIndex:
    index = SqliteLibraryIndex(tmp_path / f"exact-{len(members)}-{members[0].book_id if members else ''}")
    index.build(members, stamp(members), None)
    return index


def test_books_added_one_at_a_time_are_found_at_once_and_idf_is_the_live_librarys(tmp_path, books):
    living = SqliteLibraryIndex(tmp_path / "library")
    generations = []
    for upto in range(1, len(books) + 1):
        held = books[:upto]
        seen: list[tuple[int, int]] = []
        assert living.build(held, stamp(held), lambda done, total, seen=seen: seen.append((done, total))) == sum(
            m.record_count for m in held)
        state = living.state(stamp(held))
        assert state.fresh and state.intact and state.generation not in generations
        generations.append(state.generation)
        if upto > 1:  # the added book alone was counted and written
            assert seen[-1] == (books[upto - 1].record_count,) * 2
            assert 0 < state.drift <= 0.05  # the frozen average length's relative error, kept small
        full = exact(tmp_path, held)
        for query in QUERIES:
            got, want = hits(living, query), hits(full, query)
            assert {k for k, _ in got} == {k for k, _ in want}, query  # the same records match
            if upto == 1:
                assert scores_equal(got, want), query
    assert len(list((tmp_path / "library").glob("lexical-delta-*.sqlite"))) == len(books) - 1


def test_a_removal_takes_effect_at_once_and_compaction_converges_on_the_exact_rebuild(tmp_path, books):
    living = SqliteLibraryIndex(tmp_path / "library")
    living.build(books[:3], stamp(books[:3]), None)
    living.build(books, stamp(books), None)
    kept = [books[0], books[2], books[4]]  # one of the base and one added book removed
    before = {p.name for p in (tmp_path / "library").iterdir()}
    seen: list[tuple[int, int]] = []
    assert living.build(kept, stamp(kept), lambda d, t: seen.append((d, t))) == sum(m.record_count for m in kept)
    assert not [s for s in seen if s[0]]  # nothing was counted: a removal is a filter
    for query in QUERIES:
        assert all(k.partition("#")[0] in {"book-0", "book-2", "book-4"} for k, _ in hits(living, query))
    assert {k for k, _ in hits(living, "river water")} == {k for k, _ in hits(exact(tmp_path, kept), "river water")}
    assert living.state(stamp(kept)).drift > 0
    assert {p.name for p in (tmp_path / "library").iterdir()} < before  # the removed added book's files went
    living.compact(kept, stamp(kept), None)
    state = living.state(stamp(kept))
    assert state.fresh and state.drift == 0
    full = exact(tmp_path, kept)
    for query in QUERIES:
        assert scores_equal(hits(living, query), hits(full, query)), query
    left = sorted(p.name for p in (tmp_path / "library").iterdir() if p.name != "terms")
    assert [n for n in left if "delta" in n or "living" in n] == []
    assert len([n for n in left if n.startswith("postings-")]) == 2


def test_a_book_that_would_move_the_average_length_too_far_compacts_instead(tmp_path, books):
    """Scores stay honest: a book whose records are much longer than the library's would leave
    the frozen average length (and so every weight) more than 5% off, so the build compacts."""
    from tests.support.package_builder import RecordSpec, build_package

    living = SqliteLibraryIndex(tmp_path / "library")
    living.build(books[:2], stamp(books[:2]), None)
    long_records = [RecordSpec(f"long{i}", " ".join(["river water battle general"] * 30) + f" w{i}.", ["Long"], i)
                    for i in range(60)]
    root = build_package(tmp_path / "long", book_id="long", kind="epub", records=long_records, dims=8,
                         blank_page=False)
    held = [*books[:2], LibraryMember("long", root / "index.sqlite", 60, "long-1")]
    living.build(held, stamp(held), None)
    state = living.state(stamp(held))
    assert state.fresh and state.drift == 0
    assert not (tmp_path / "library" / "lexical-living.json").exists()
    assert scores_equal(hits(living, "river water"), hits(exact(tmp_path, held), "river water"))


def test_a_replaced_book_is_removed_and_added_and_narrowing_follows_it(tmp_path, books):
    living = SqliteLibraryIndex(tmp_path / "library")
    living.build(books[:3], stamp(books[:3]), None)
    replaced = LibraryMember("book-1", books[3].database_path, books[3].record_count, "new-stamp")
    after = [books[0], replaced, books[2]]
    living.build(after, stamp(after), None)
    reader = living.open()
    try:
        narrowed = [h.record_id for h in reader.search("river water", 400, ["book-1"])]
        everything = {h.record_id: h.score for h in reader.search("river water", 400)}
    finally:
        reader.close()
    want = {k for k, _ in hits(exact(tmp_path, after), "river water") if k.startswith("book-1#")}
    assert narrowed and set(narrowed) == want
    assert all(everything[k] > 0 for k in narrowed)


def test_the_state_is_not_fresh_when_an_added_books_postings_are_damaged(tmp_path, books):
    living = SqliteLibraryIndex(tmp_path / "library")
    living.build(books[:2], stamp(books[:2]), None)
    living.build(books[:3], stamp(books[:3]), None)
    (delta,) = (tmp_path / "library").glob("lexical-delta-*.sqlite")
    postings = tmp_path / "library" / ("postings-" + delta.name.removeprefix("lexical-delta-").removesuffix(".sqlite")
                                       + ".impacts.npy")
    data = bytearray(postings.read_bytes())
    data[-4:] = b"\xff\xff\xff\x7f"  # a NaN where a weight was
    postings.write_bytes(bytes(data))
    state = living.state(stamp(books[:3]))
    assert not state.fresh and not state.intact and "added book" in (state.reason or "")
    living.build(books[:3], stamp(books[:3]), None)  # rebuilt in full: nothing sound to extend
    assert living.state(stamp(books[:3])).fresh
    assert scores_equal(hits(living, "river water"), hits(exact(tmp_path, books[:3]), "river water"))


def test_a_search_does_not_wait_for_another_writer(tmp_path, books):
    living = SqliteLibraryIndex(tmp_path / "library")
    living.build(books[:2], stamp(books[:2]), None)
    with another_writer_holding(tmp_path / "library", hold_s=30):
        started = time.monotonic()
        with pytest.raises(BookAgentError) as caught:
            living.build(books[:3], stamp(books[:3]), None, wait=False)
        assert caught.value.code == "lexical.build_busy" and time.monotonic() - started < 2
        assert hits(living, "river water")  # the generation in place serves meanwhile
    living.build(books[:3], stamp(books[:3]), None, wait=False)
    assert living.state(stamp(books[:3])).fresh


def test_searches_during_adds_and_a_compaction_all_succeed(tmp_path, books):
    living = SqliteLibraryIndex(tmp_path / "library")
    living.build(books[:1], stamp(books[:1]), None)
    problems: list[str] = []
    done = threading.Event()

    def searcher() -> None:
        while not done.is_set():
            try:
                if not hits(living, "river water", 10):
                    problems.append("no hits")
            except Exception as exc:  # noqa: BLE001
                problems.append(repr(exc))

    threads = [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for upto in range(2, len(books) + 1):
            living.build(books[:upto], stamp(books[:upto]), None)
        living.compact(books, stamp(books), None)
        living.build(books[1:], stamp(books[1:]), None)
    finally:
        done.set()
        for t in threads:
            t.join()
    assert problems == []


KILLED = """
import os, sys
from pathlib import Path
from book_agent.domain.library import LibraryMember
from book_agent_adapters.library.local.lexical import library_lexical_index as lli

folder, point, action, spec = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
members = [LibraryMember(b, Path(p), int(n), s) for b, p, n, s in (m.split("|") for m in spec.split(","))]
stamp = {"books": ";".join(f"{m.book_id}={m.stamp}" for m in sorted(members, key=lambda m: m.book_id))}

def crash(name):
    if name == point:
        os.kill(os.getpid(), 9)

lli.crash_point = crash
index = lli.SqliteLibraryIndex(folder)
(index.compact if action == "compact" else index.build)(members, stamp, None)
"""

POINTS = [("build", "extend:before-pointer"), ("build", "extend:after-pointer"),
          ("compact", "compact:before-rename"), ("compact", "compact:after-rename")]


@pytest.mark.parametrize(("action", "point"), POINTS)
def test_a_writer_killed_at_a_commit_point_leaves_one_generation_and_no_debris(tmp_path, books, action, point):
    folder = tmp_path / "library"
    living = SqliteLibraryIndex(folder)
    living.build(books[:2], stamp(books[:2]), None)
    living.build(books[:3], stamp(books[:3]), None)
    before = {q: hits(living, q) for q in QUERIES}
    target = books[:4] if action == "build" else books[:3]
    spec = ",".join(f"{m.book_id}|{m.database_path}|{m.record_count}|{m.stamp}" for m in target)
    run = subprocess.run([sys.executable, "-c", KILLED, str(folder), point, action, spec], cwd=REPO_ROOT,
                         capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": f"{REPO_ROOT}:{REPO_ROOT / 'adapters'}"})
    assert run.returncode == -signal.SIGKILL, run.stderr.decode()
    state = living.state(stamp(target))
    assert state.intact
    after = {q: hits(living, q) for q in QUERIES}
    new = exact(tmp_path, target)
    for query in QUERIES:  # the old generation or the new one, never a mix
        if action == "build":
            old_ok = after[query] == before[query]
            assert old_ok or {k for k, _ in after[query]} == {k for k, _ in hits(new, query)}, query
        else:  # a compaction holds the same books: the old scores or the exact ones
            assert after[query] == before[query] or scores_equal(after[query], hits(new, query)), query
    killed_new = point.endswith("after-pointer") or point.endswith("after-rename")
    assert state.fresh == (killed_new or action == "compact")
    living.build(target, stamp(target), None)  # the next writer sweeps the debris
    assert sweep_dead_build(folder) == []
    names = [p.name for p in folder.iterdir()]
    assert not [n for n in names if n.startswith(".") and n != ".build.lock"], names
    referenced = _referenced(folder)
    assert {n.split(".")[0] for n in names if n.startswith("postings-")} == referenced


def _referenced(folder: Path) -> set[str]:
    import sqlite3

    con = sqlite3.connect(folder / "lexical.sqlite")
    (base,) = con.execute("SELECT value FROM meta WHERE key = 'postings'").fetchone()
    con.close()
    names = {base}
    pointer = folder / "lexical-living.json"
    if pointer.exists():
        for delta in json.loads(pointer.read_text())["deltas"]:
            names.add("postings-" + delta["head"].removeprefix("lexical-delta-").removesuffix(".sqlite"))
    return names


WRITER = """
import sys
from pathlib import Path
from book_agent.domain.library import LibraryMember
from book_agent_adapters.library.local.lexical.library_lexical_index import SqliteLibraryIndex

folder, spec = Path(sys.argv[1]), sys.argv[2]
members = [LibraryMember(b, Path(p), int(n), s) for b, p, n, s in (m.split("|") for m in spec.split(","))]
stamp = {"books": ";".join(f"{m.book_id}={m.stamp}" for m in sorted(members, key=lambda m: m.book_id))}
print(SqliteLibraryIndex(folder).build(members, stamp, None))
"""


def test_two_writers_at_once_are_serialised(tmp_path, books):
    folder = tmp_path / "library"
    SqliteLibraryIndex(folder).build(books[:2], stamp(books[:2]), None)
    spec = ",".join(f"{m.book_id}|{m.database_path}|{m.record_count}|{m.stamp}" for m in books)
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT}:{REPO_ROOT / 'adapters'}"}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), spec], cwd=REPO_ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1].decode() for o in outs]
    assert [int(o[0]) for o in outs] == [sum(m.record_count for m in books)] * 2
    living = SqliteLibraryIndex(folder)
    assert living.state(stamp(books)).fresh
    assert len(list(folder.glob("lexical-delta-*.sqlite"))) == 3  # the second writer found it fresh
    assert {k for k, _ in hits(living, "river water")} == {k for k, _ in hits(exact(tmp_path, books), "river water")}
