"""What a one-shot search opens, seen from inside its process (sys.addaudithook): each
SQLite file of the book's runtime dir that its steps share is opened once (issue 29: the
locators sidecar was opened three times, to read its stamp twice and then its rows)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.support.one_shot_book import vector_book

PROBE = """
import json, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "sqlite3.connect" else None)
from book_agent.cli.entry import run
try:
    run(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as fh:
        json.dump(opened, fh)
"""


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return vector_book(tmp_path_factory.mktemp("opens"))


def sqlite_files_opened(tmp_path: Path, *args: str) -> Counter[str]:
    report = tmp_path / "opened.json"
    done = subprocess.run([sys.executable, "-c", PROBE, str(report), *args], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert json.loads(done.stdout)["hits"]
    return Counter(Path(name.removeprefix("file:").split("?")[0]).name for name in json.loads(report.read_text()))


def test_a_one_shot_search_opens_the_locators_sidecar_once(tmp_path: Path, book: tuple[Path, Path]) -> None:
    data, vector = book
    for extra in ((), ("--query-vector", str(vector))):
        opened = sqlite_files_opened(tmp_path, "--data-dir", str(data), "--json", "search", "vec", "rivers", *extra)
        assert opened["locators.sqlite"] == 1
        assert opened["index.sqlite"] == 1  # the package's records and vectors
