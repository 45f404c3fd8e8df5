"""A one-shot JSON search, as its own process, ends without the interpreter's teardown
(cli/entry.py `main`, issue 29: ~17 ms CPU of a cold search), and only when nothing waits
for that teardown: its output is whole, its exit status 0, an atexit callback or another
thread's work still runs, an error exits as before, and `run` (in-process) never ends a process.
From `main` on, a one-shot search runs no cycle collection; any other command collects.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.one_shot_book import vector_book

# A canary whose __del__ speaks when the interpreter's teardown frees the module's globals
CHILD = """
import sys
class Canary:
    def __del__(self):
        sys.stderr.write("teardown\\n")
canary = Canary()
sys.argv = ["book-agent", *sys.argv[1:]]
from book_agent.cli.entry import {entry}
{setup}
{entry}()
print("after", file=sys.stderr)
"""
LATE_THREAD = """
import threading
def late():  # alive until the interpreter's exit begins (it marks the main thread done first)
    threading.main_thread().join()
    sys.stderr.write("thread done\\n")
threading.Thread(target=late).start()
"""
ATEXIT = """
import atexit
atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
"""


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return vector_book(tmp_path_factory.mktemp("one-shot"), searched=False)


def child(book: tuple[Path, Path], *args: str, entry: str = "main", setup: str = "") -> subprocess.CompletedProcess[str]:
    data, vector = book
    argv = args or ("--json", "search", "vec", "rivers", "--query-vector", str(vector))
    return subprocess.run([sys.executable, "-c", CHILD.format(entry=entry, setup=setup), "--data-dir", str(data),
                           *argv], capture_output=True, text=True, timeout=120)


def test_a_one_shot_search_ends_without_teardown_and_with_its_whole_output(book: tuple[Path, Path]) -> None:
    done = child(book)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"]  # flushed before the end: one whole JSON document
    assert "teardown" not in done.stderr and "after" not in done.stderr


def test_run_in_process_never_ends_the_process(book: tuple[Path, Path]) -> None:
    done = child(book, entry="run")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"]
    assert done.stderr.splitlines()[-2:] == ["after", "teardown"]


@pytest.mark.parametrize(("setup", "said"), [(LATE_THREAD, "thread done"), (ATEXIT, "atexit ran")])
def test_what_waits_for_the_end_gets_the_ordinary_exit(book: tuple[Path, Path], setup: str, said: str) -> None:
    done = child(book, setup=setup)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"]
    assert said in done.stderr and "teardown" in done.stderr


@pytest.mark.parametrize(("args", "status"), [(("--json", "search", "no-such-book", "rivers"), 1),
                                              (("--json", "list"), 0)])
def test_errors_and_other_commands_exit_as_before(book: tuple[Path, Path], args: tuple[str, ...], status: int) -> None:
    done = child(book, *args)
    assert done.returncode == status
    assert ("error" in json.loads(done.stdout)) == bool(status)
    assert "teardown" in done.stderr


COLLECTIONS = """
import gc
def during_the_command(phase, info):
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "_dispatch":
        frame = frame.f_back
    if phase == "start" and frame is not None:
        sys.stderr.write("collection\\n")
gc.set_threshold(50)  # a pass every 50 allocations while collection is on: none can hide
gc.callbacks.append(during_the_command)
"""


def test_no_cycle_collection_in_a_one_shot_search_but_in_other_commands(book: tuple[Path, Path]) -> None:
    search = child(book, setup=COLLECTIONS)
    assert search.returncode == 0, search.stderr
    assert "collection" not in search.stderr
    listing = child(book, "--json", "list", setup=COLLECTIONS)
    assert listing.returncode == 0, listing.stderr
    assert "collection" in listing.stderr
