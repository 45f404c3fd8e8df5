"""Derived files rewritten, truncated or replaced under a running server never kill it (issue 44.2).

A real `book-agent mcp @all` process searches without pause while the test restores its data
dir from a backup the way an admin does (`cp -r backup/. DATA/library/`: each file opened with
O_TRUNC and written again in place, identical bytes), truncates files to nothing and writes them
back, and replaces them by rename. Every search must be answered, from the generation the
server holds or with a coded error, and the server must still be there (no SIGBUS) and exit
cleanly when its host closes stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support.library_support import WORDS, make_book
from tests.support.package_builder import RecordSpec
from tests.support.stdio_session import RawSession, call

ROUNDS = 12
CLIENTS = 4  # searches in flight at once, as the report's four clients
TIGHT = ("lexical.sqlite", "lexical.impact.npz", "vectors.f32.npy")  # a book's files, cut and restored in the tight loop


def library(root: Path) -> Path:
    from book_agent import BookAgent

    rng = np.random.default_rng(8)
    with BookAgent(root / "data") as agent:
        for b in range(3):
            records = [RecordSpec(f"r{i}", " ".join(rng.choice(WORDS, 14)) + f" w{b}x{i}", ["H"], 0)
                       for i in range(3000)]
            agent.init(make_book(root / "packages", f"book-{b}", records))
        agent.prepare("@all")
    return root / "data"


def derived(data: Path) -> list[Path]:
    return sorted(p for p in data.rglob("*") if p.is_file() and not p.name.startswith(".")
                  and p.name not in ("registry.json", "registry.lock"))


def truncate_and_restore(path: Path, good: bytes) -> None:
    """Cut the file to nothing and write `good` back in place: the same inode, as `cp` over an
    existing file, an editor or a restore tool does. A file the server's rebuild removed meanwhile
    is left alone."""
    try:
        handle = open(path, "r+b")  # noqa: SIM115  # closed below
    except FileNotFoundError:
        return
    with handle:
        handle.truncate(0)
        handle.flush()
        handle.write(good[: len(good) // 3])
        handle.flush()
        time.sleep(0.002)  # a slow disk, a big file: the window a reader may fall into
        handle.write(good[len(good) // 3:])


def replace_by_rename(path: Path, good: bytes) -> None:
    staged = path.with_name(".restore-" + path.name)
    staged.write_bytes(good)
    os.replace(staged, path)


def rewrite_loop(data: Path, backup: Path, stop: threading.Event) -> int:
    """Restore the data dir from `backup` in every way, ROUNDS times."""
    kept = {p.relative_to(backup): p.read_bytes() for p in derived(backup)}
    rounds = 0
    while not stop.is_set() and rounds < ROUNDS:
        deadline = time.monotonic() + 0.5  # the tight loop: the postings the server reads, cut and written back
        while time.monotonic() < deadline:
            for name, good in kept.items():
                if name.name.startswith("postings-") or name.name in TIGHT:
                    truncate_and_restore(data / name, good)
        subprocess.run(["cp", "-r", f"{backup / 'library'}/.", str(data / "library")], check=True, timeout=120)
        subprocess.run(["cp", "-r", f"{backup / 'books'}/.", str(data / "books")], check=True, timeout=120)
        for name, good in kept.items():
            (truncate_and_restore if rounds % 2 == 0 else replace_by_rename)(data / name, good)
        rounds += 1
    return rounds


def answered_or_coded(message: dict) -> str:
    """'hits' for a search answered, the error code for a coded refusal; fails on anything else."""
    assert "result" in message, message
    result = message["result"]
    text = "".join(part.get("text", "") for part in result.get("content", []))
    if result.get("isError"):
        code = json.loads(text)["error"]["code"] if text.startswith("{") else text.split("]")[0].lstrip("[")
        assert code and code != "cli.internal_error", text
        return code
    body = result.get("structuredContent") or json.loads(text)
    assert "hits" in body, body
    return "hits"


@pytest.mark.parametrize("served", ["@all", "book-1"])
def test_a_server_answers_every_search_while_its_files_are_rewritten_truncated_and_replaced(tmp_path, served):
    data = library(tmp_path)
    backup = tmp_path / "backup"
    subprocess.run(["cp", "-a", str(data), str(backup)], check=True)
    session = RawSession(data, served, tmp_path / "stderr.txt")
    stop = threading.Event()
    rounds: list[int] = []
    writer = threading.Thread(target=lambda: rounds.append(rewrite_loop(data, backup, stop)))
    outcomes: list[str] = []
    try:
        session.send(call(1, "search", {"query": "water ground battle"}))
        outcomes.append(answered_or_coded(session.wait_for([1], timeout=120)[1][0]))  # loaded before the loop
        writer.start()
        ident = 2
        while writer.is_alive() or ident < 40:
            batch = list(range(ident, ident + CLIENTS))
            for i in batch:
                rng = np.random.default_rng(i)
                vector = rng.standard_normal(16)  # the vector channel's matrices are read too
                session.send(call(i, "search", {"query": " ".join(rng.choice(WORDS, 3)),
                                                "query_vector": list(map(float, vector / np.linalg.norm(vector)))}))
            try:
                answers = session.wait_for(batch, timeout=120)
            except TimeoutError:
                raise AssertionError(f"the server ended with {session.proc.poll()} (-7: SIGBUS) "
                                     f"after {len(outcomes)} searches") from None
            outcomes.extend(answered_or_coded(answers[i][0]) for i in batch)
            ident += CLIENTS
    finally:
        stop.set()
        if writer.is_alive():
            writer.join(timeout=300)
        code = session.close()
    assert rounds == [ROUNDS]
    assert code == 0, (tmp_path / "stderr.txt").read_text()[-3000:]
    assert outcomes.count("hits") >= len(outcomes) // 2, outcomes  # most answered, the rest coded
    print("outcomes:", {o: outcomes.count(o) for o in set(outcomes)})
