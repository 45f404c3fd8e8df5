"""kill -9 during `init` of a library that has its index (issue 44.10): the next `init` and an
`@all` search give the hits of a library that never saw the kill, and what the killed build
wrote (postings arrays, temp heads, term-count temps) is swept by the next build.

The kill lands in the library's update, whatever its step: the test waits for the first file
the update writes in the library folder, then kills the whole process group after a delay.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support.library_support import WORDS, make_book
from tests.support.package_builder import RecordSpec

DELAYS = (0.0, 0.02, 0.1)  # after the update's first file: temps only, postings half-written, a delta committed


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), *args, "--json"],
                          capture_output=True, timeout=600, check=False)


def hits(data: Path) -> list[tuple[str, float]]:
    proc = cli(data, "search", "@all", "water army river", "-k", "20")
    assert proc.returncode == 0, proc.stdout[-2000:]
    return [(h["evidence_id"], round(h["scores"]["fused"], 6)) for h in json.loads(proc.stdout)["hits"]]


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[tuple[str, float]]]:
    """A data dir of three books with its library index, a fourth package, and the hits once it is added."""
    from book_agent import BookAgent

    root = tmp_path_factory.mktemp("killed-inits")
    rng = np.random.default_rng(1)
    # the fourth book, the one whose init is killed, is the largest: its library update must still
    # run 0.1 s after its first file on a quiet machine (with 2,000 records it had ended)
    packages = [make_book(root / "packages", f"book-{b}", [
        RecordSpec(f"r{i}", " ".join(rng.choice(WORDS, 14)) + f" w{b}", ["H"], 0) for i in range(2000 if b < 3 else 12000)])
        for b in range(4)]
    with BookAgent(root / "base") as agent:
        for package in packages[:3]:
            agent.init(package)
        agent.prepare("@all")
    reference = root / "reference"
    subprocess.run(["cp", "-a", str(root / "base"), str(reference)], check=True)
    assert cli(reference, "init", str(packages[3])).returncode == 0
    return root / "base", packages, hits(reference)


def names(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def live_postings(library: Path) -> set[str]:
    """The postings arrays the heads in place name (the base head, and each delta's)."""
    named = set()
    for head in library.glob("lexical*.sqlite"):
        con = sqlite3.connect(f"file:{head}?mode=ro", uri=True)
        try:
            (name,) = con.execute("SELECT value FROM meta WHERE key = 'postings'").fetchone()
        finally:
            con.close()
        named |= {f"{name}.docs.npy", f"{name}.impacts.npy"}
    return named


@pytest.mark.parametrize("delay", DELAYS)
def test_a_killed_init_leaves_nothing_that_changes_later_results_and_its_postings_are_swept(books, tmp_path, delay):
    base, packages, reference = books
    data = tmp_path / "data"
    subprocess.run(["cp", "-a", str(base), str(data)], check=True)
    library = data / "library"
    before = names(library)
    proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "init", str(packages[3]),
                             "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    while proc.poll() is None and not names(library) - before:
        time.sleep(0.002)
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL  # killed in its library update, not after it
    assert names(library) - before  # and it had written there
    again = cli(data, "init", str(packages[3]))
    assert again.returncode == 0, again.stdout[-2000:]
    assert hits(data) == reference
    postings = {p.name for p in library.glob("postings-*")}
    assert postings == live_postings(library)  # the killed build's arrays are gone
    left = [p.name for p in library.rglob("*") if p.name.startswith(".") and p.name not in (".build.lock",)
            and not p.name.endswith((".verified", ".damaged"))]
    assert not left  # no temp head, no half-written term counts or markers
