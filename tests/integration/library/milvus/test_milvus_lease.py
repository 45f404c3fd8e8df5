"""The `milvus` backend's writer lease (adapters/.../milvus/lease.py) with real processes on one
real server, each writer with a data dir of its own (so the data dir's lock cannot serialise
them, as on two machines): a second writer is busy at once without waiting and waits with it; two
racing writers never overlap; a holder killed with SIGKILL mid-build leaves the generation in
place serving, its lease expires by itself, and the next writer rolls its rows back and proceeds;
a record upserted under a reader (the lease renewed, the pointer moved) never reads as absent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryMember
from book_agent_adapters.library.local.lexical.library_lexical_index import SqliteLibraryIndex
from book_agent_adapters.library.milvus.engine import GRPC_OPTIONS
from tests.support import REPO_ROOT, milvus
from tests.support.library_support import corpus, index_scores, make_book

TTL = 3.0  # the lease's lifetime in these tests (renewed every second)
QUERIES = ["river water", "battle general", "army march"]


@pytest.fixture(scope="module")
def books(tmp_path_factory) -> list[LibraryMember]:
    root = tmp_path_factory.mktemp("lease-books")
    records = corpus(45)
    out = []
    for part in range(3):
        package = make_book(root, f"part-{part}", records[part::3])
        out.append(LibraryMember(f"part-{part}", package / "index.sqlite", 15, f"stamp-{part}"))
    return out


def writer(tmp_path: Path, name: str, uri: str, prefix: str, members: list[LibraryMember], hold_s: float,
           ttl_s: float = TTL) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / f"{name}.started"
    spec = {"uri": uri, "prefix": prefix, "data_dir": str(tmp_path / f"data-{name}"), "marker": str(marker),
            "hold_s": hold_s, "options": {"lease_s": ttl_s, "lease_wait_s": 60.0},
            "members": [{"book_id": m.book_id, "database": str(m.database_path), "records": m.record_count,
                         "stamp": m.stamp} for m in members]}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-m", "tests.support.milvus_writer", str(path)], cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return child, marker


def wait_for(marker: Path, child: subprocess.Popen[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the writer never started its build"
        time.sleep(0.1)


def expected(members: list[LibraryMember]) -> dict[str, str]:
    return {"books": ",".join(m.book_id for m in members)}


def scores(index, query: str) -> dict[str, float]:
    return index_scores(index, query, 100)


def assert_ranks_as_local(index, members: list[LibraryMember], tmp_path: Path) -> None:
    local = SqliteLibraryIndex(tmp_path / f"local-{len(members)}")
    local.build(members, expected(members), None)
    for query in QUERIES:
        want = scores(local, query)
        got = scores(index, query)
        assert want and got.keys() == want.keys(), query
        assert all(got[k] == pytest.approx(v, rel=1e-5) for k, v in want.items()), query


def test_a_killed_holder_blocks_until_its_lease_expires_and_leaves_nothing_half_swapped(
        books, milvus_uri, tmp_path) -> None:
    from pymilvus import MilvusClient

    # A lease of 6 s (renewed every 2 s, given up by its holder 4 s after its last renewal): with
    # TTL (3 s) a busy machine delayed a renewal past 2 s and the holder lost its lease, as it
    # must, so the check below that a live holder blocks failed under load
    ttl, wait_s = 6.0, 3.0
    prefix = milvus.new_prefix()
    mine = milvus.backend(milvus_uri, tmp_path / "data-mine", prefix, lease_s=ttl, lease_wait_s=wait_s).lexical
    mine.build(books[:1], expected(books[:1]), None)
    before = mine.state(expected(books[:1])).generation
    child, marker = writer(tmp_path, "holder", milvus_uri, prefix, books, hold_s=600, ttl_s=ttl)
    try:
        wait_for(marker, child)  # it holds the lease, its first book's rows are written
        started = time.monotonic()
        with pytest.raises(BookAgentError) as busy:
            mine.build(books, expected(books), None, wait=False)
        assert busy.value.code == "lexical.build_busy" and time.monotonic() - started < wait_s  # did not wait
        assert "holder" in busy.value.details
        time.sleep(ttl + 1)  # past its first expiry: only its renewals keep it
        with pytest.raises(BookAgentError) as waited:  # waits lease_wait_s, then gives up
            mine.build(books, expected(books), None)
        assert waited.value.code == "lexical.build_failed"
        assert waited.value.details["engine_code"] == "engine.lease_busy"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=30)  # reaped, its pipes closed
    assert mine.state(expected(books)).generation == before  # the killed build moved no pointer
    assert_ranks_as_local(mine, books[:1], tmp_path)
    proceeding = milvus.backend(milvus_uri, tmp_path / "data-mine", prefix, lease_s=ttl, lease_wait_s=60.0).lexical
    started = time.monotonic()
    proceeding.build(books, expected(books), None)
    assert time.monotonic() - started < ttl + 10  # it waited for the lease to expire, not for lease_wait_s
    state = proceeding.state(expected(books))
    assert state.fresh and state.records == 45 and state.generation != before
    assert_ranks_as_local(proceeding, books, tmp_path)
    collection = state.generation.partition("@")[0]
    client = MilvusClient(uri=milvus_uri, timeout=20, dedicated=True, grpc_options=dict(GRPC_OPTIONS))
    try:  # the killed build's rows were rolled back: each record once
        rows = client.query(collection, filter="added >= 0", output_fields=["count(*)"], consistency_level="Strong")
    finally:
        client.close()
    assert rows[0]["count(*)"] == 45


@pytest.mark.slow
def test_two_racing_writers_take_turns(books, milvus_uri, tmp_path) -> None:
    prefix = milvus.new_prefix()
    sets = {"a": [books[0], books[1]], "b": [books[0], books[2]]}
    # A lease of 15 s: this test is about turns, not expiry, and with TTL (3 s) a renewal that a
    # busy machine delays past it lets the other writer break a live holder's lease (which then
    # stops with engine.lease_lost, as it must: a CI run at load ~2 saw it)
    children = {name: writer(tmp_path, name, milvus_uri, prefix, members, hold_s=2.0, ttl_s=15.0)[0]
                for name, members in sets.items()}
    spans = {}
    try:
        for name, child in children.items():
            out, err = child.communicate(timeout=300)  # the second waits for the first's lease
            assert child.returncode == 0, err
            spans[name] = json.loads(out.strip().splitlines()[-1])
    finally:  # a failure above leaves no writer running, nor its pipes open, for later tests
        for child in children.values():
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=30)
    (first, second) = sorted(spans, key=lambda n: spans[n]["first"])
    assert spans[first]["done"] <= spans[second]["first"], spans  # never both inside a build
    last = milvus.backend(milvus_uri, tmp_path / "data-check", prefix).lexical
    assert last.state(expected(sets[second])).fresh
    assert_ranks_as_local(last, sets[second], tmp_path)


def test_a_live_holders_renewals_never_let_another_writer_in(milvus_uri, tmp_path) -> None:
    # An upsert is a delete and an insert: a claimant whose read fell between the two (milvus-lite:
    # a third of the reads racing a renewal) took the live lease as free, and the holder, reading
    # the claimant's record at its next renewal, stopped as lost. A short lease renews often here
    # (16 renewals in the 8 s).
    from book_agent_adapters.library.milvus.lease import LeaseSettings, WriterLease

    def engine(name: str):  # a client each, as two writers have
        return milvus.backend(milvus_uri, tmp_path / name, milvus.new_prefix()).lexical.engine

    catalog_prefix = milvus.new_prefix()
    holder_lease = WriterLease(engine("holder"), catalog_prefix, LeaseSettings(ttl_s=1.5, wait_s=30.0,
                                                                                   settle_s=0.2))  # renews every 0.5 s
    claimant = WriterLease(engine("claimant"), catalog_prefix, LeaseSettings(ttl_s=1.5, settle_s=0.2))
    tries = 0
    with holder_lease.held() as held:
        deadline = time.monotonic() + 8.0
        while time.monotonic() < deadline:
            tries += 1
            with pytest.raises(BookAgentError) as busy, claimant.held(wait=False):
                pass
            assert busy.value.code == "lexical.build_busy"
            time.sleep(0.01)  # the holder's renewals share this process's GIL
        held.confirm()  # never lost: its renewals found its own record every time
    assert tries > 50


def test_a_pointer_rewritten_under_a_reader_never_looks_missing(books, milvus_uri, tmp_path) -> None:
    # The same race on the channel's pointer record: a search whose read fell inside a commit's
    # upsert saw "never loaded", not fresh, and the one build a search still does (nothing sound
    # in place) would rebuild the library. Here the pointer is rewritten unchanged every 0.2 s.
    import threading

    from pymilvus import MilvusClient

    prefix = milvus.new_prefix()
    index = milvus.backend(milvus_uri, tmp_path / "data", prefix).lexical
    index.build(books, expected(books), None)
    catalog, key = f"{prefix}_catalog", f"pointer|{index.ledger.spec.name}"
    client = MilvusClient(uri=milvus_uri, timeout=20, dedicated=True, grpc_options=dict(GRPC_OPTIONS))
    row = client.query(catalog, filter=f'key == "{key}"', output_fields=["*"], consistency_level="Strong")[0]
    stop = threading.Event()

    def rewrite() -> None:
        while not stop.wait(0.2):
            client.upsert(catalog, [row])

    rewriter = threading.Thread(target=rewrite)
    rewriter.start()
    states = []
    try:
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline:
            states.append(index.state(expected(books)))
    finally:
        stop.set()
        rewriter.join()
        client.close()
    assert len(states) > 50
    assert all(s.present and s.fresh for s in states), next(s.reason for s in states if not s.fresh)
