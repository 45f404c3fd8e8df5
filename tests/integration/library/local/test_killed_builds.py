"""A build killed with kill -9 leaves no live worker, no held lock, no output pipe held open, and
its debris goes at the next build.

Real processes: a child builds the library index of books whose databases are FIFOs, so its
term-counting workers block for ever in `open()` (a stand-in for counting a huge book) while
the child holds the library's build lock and its temp head exists. The test kills the child
with SIGKILL and watches its workers, its stdout and the lock.
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

from book_agent_adapters.library.local.lexical.library_lexical_index import (
    SqliteLibraryIndex,
    sweep_dead_build,
)
from tests.integration.library.local.test_library_impact_index import members_of, records
from tests.support import REPO_ROOT

CHILD = """
import json, multiprocessing, os, sys, threading, time
from pathlib import Path
from book_agent.domain.library import LibraryMember
from book_agent_adapters.library.local.lexical import term_counts
from book_agent_adapters.library.local.lexical.library_lexical_index import SqliteLibraryIndex

term_counts.os.cpu_count = lambda: 2
folder, fifos = Path(sys.argv[1]), sys.argv[2:]
members = [LibraryMember(f"huge-{i}", Path(p), 100_000, f"s{i}") for i, p in enumerate(fifos)]

def report():
    while len(multiprocessing.active_children()) < len(fifos):
        time.sleep(0.05)
    time.sleep(0.5)  # the workers are in open() by now
    print(json.dumps([p.pid for p in multiprocessing.active_children()]), flush=True)

threading.Thread(target=report, daemon=True).start()
SqliteLibraryIndex(folder).build(members, {"books": "huge"}, None)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # a zombie is dead
    except FileNotFoundError:
        return False


def wait_until(seconds: float, condition) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_a_killed_build_leaves_no_worker_no_held_output_and_no_lock(tmp_path):
    fifos = [tmp_path / f"huge-{i}.sqlite" for i in range(2)]
    for fifo in fifos:
        os.mkfifo(fifo)
    library = tmp_path / "library"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(library), *map(str, fifos)], cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        kill_mid_build(child, library, workers)
    finally:
        child.kill()
        child.wait(30)
        for pid in workers:  # only when the test fails: orphans must not outlive it
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        for pipe in (child.stdout, child.stderr):
            assert pipe is not None
            pipe.close()
    members = members_of(tmp_path, records(60, seed=2), 2)
    started = time.monotonic()
    SqliteLibraryIndex(library).build(members, {"books": "real"}, None)  # the lock is free at once
    assert time.monotonic() - started < 60
    assert not list(library.glob(".lexical-library-*")), "the dead build's temp head was not swept"
    assert not list((library / "terms").glob(".*.tmp"))


def kill_mid_build(child: subprocess.Popen, library: Path, workers: list[int]) -> None:
    """SIGKILL the building child once its workers run; its workers and its pipes must end."""
    assert child.stdout is not None and child.stderr is not None
    out, err = child.stdout, child.stderr
    workers += json.loads(out.readline() or "[]")
    assert len(workers) == 2 and all(alive(pid) for pid in workers), workers or err.read(4000)
    assert list(library.glob(".lexical-library-*.sqlite"))  # the temp head of the build in progress
    eof = threading.Event()
    reader = threading.Thread(target=lambda: (out.read(), err.read(), eof.set()), daemon=True)
    reader.start()
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    try:
        assert wait_until(10, lambda: not any(alive(pid) for pid in workers)), "the workers outlived their parent"
        assert eof.wait(10), "something still holds the killed build's stdout/stderr"
    finally:
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        reader.join(10)


def test_a_build_sweeps_what_a_dead_build_left_and_keeps_the_index_in_use(tmp_path):
    members = members_of(tmp_path, records(80, seed=4), 2)
    index = SqliteLibraryIndex(tmp_path / "library")
    index.build(members, {"books": "one"}, None)
    folder = index.dir
    (current,) = folder.glob("postings-*.docs.npy")
    debris = [folder / ".lexical-library-dead1234.sqlite", folder / "postings-0123456789ab.docs.npy",
              folder / "postings-0123456789ab.impacts.npy", folder / "terms" / ".abc.npz.x1y2.tmp"]
    for path in debris:
        path.write_bytes(b"left by a killed build")
    assert sorted(sweep_dead_build(folder)) == sorted(map(str, debris))
    assert current.exists() and index.state({"books": "one"}).fresh
    for path in debris:
        path.write_bytes(b"left by a killed build")
    index.build(members, {"books": "two"}, None)  # a stale index: rebuilt, and swept first
    assert not any(p.exists() for p in debris)
    assert len(list(folder.glob("postings-*.npy"))) == 2


@pytest.mark.parametrize("limit", [4096, 16384, 40000])
def test_a_build_that_does_not_fit_is_storage_no_space_and_the_last_index_serves(tmp_path, limit):
    """RLIMIT_FSIZE (EFBIG past it, as ENOSPC past a full disk) hits the build's writes in turn:
    the term counts (a cache: skipped), the head (SQLite says "disk I/O error" for EFBIG, where it
    says "database or disk is full", storage.no_space, for ENOSPC), the postings' allocation."""
    import resource

    from book_agent.domain.errors import BookAgentError

    members = members_of(tmp_path, records(600, seed=9), 2)
    index = SqliteLibraryIndex(tmp_path / "library")
    index.build(members[:1], {"books": "one"}, None)
    lexical = index.open()
    want = [h.record_id for h in lexical.search("river water", 20)]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        with pytest.raises(BookAgentError) as caught:
            index.build(members, {"books": "two"}, None)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert caught.value.code in ("storage.no_space", "lexical.build_failed")
    assert "free" in (caught.value.remediation or "")
    assert [h.record_id for h in lexical.search("river water", 20)] == want  # a server keeps answering
    lexical.close()
    assert index.state({"books": "one"}).fresh
    assert not [p for p in index.dir.glob(".*") if p.name != ".build.lock"]
    assert len(list(index.dir.glob("postings-*.npy"))) == 2
