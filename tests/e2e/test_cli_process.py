"""The CLI as real processes: `python -m book_agent` and the `book-agent` console script,
argv bytes as the OS passes them, several processes at once, and a kill -9 mid-way.
Everything else about the CLI runs in-process (tests/integration/cli/test_cli*.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from book_agent import __version__
from book_agent.agent import BookAgent
from book_agent_adapters.registry.json_registry import JsonRegistry
from tests.support.package_builder import RecordSpec, build_package, synthetic_records
from tests.support.parts import require_real_part

BAD = b"\xff\xfe"  # not UTF-8: Python keeps it as the lone surrogates \udcff \udcfe
CONSOLE_SCRIPT = Path(sys.executable).with_name("book-agent")


def run_cli(*args: str, data_dir: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if data_dir is not None:
        env["BOOK_AGENT_HOME"] = str(data_dir)
    return subprocess.run([sys.executable, "-m", "book_agent", *args], capture_output=True, text=True,
                          env=env, input=stdin, timeout=120)


@pytest.fixture
def data(tmp_path: Path, pdf_package: Path) -> Path:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf_package)
    return tmp_path / "data"


def test_init_then_search_end_to_end_with_options_after_the_subcommand(tmp_path, pdf_package):
    data = tmp_path / "data"
    init = run_cli("init", str(pdf_package), "--data-dir", str(data), "--json")
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["book_id"] == "test-book"
    found = run_cli("search", "test-book", "孫子", "--json", "--top-k", "2", "--data-dir", str(data))
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)  # exactly one JSON document
    assert result["hits"][0]["record_id"] == "r0007"
    listing = run_cli("--json", "--data-dir", str(data), "list")
    assert [b["book_id"] for b in json.loads(listing.stdout)["books"]] == ["test-book"]
    human = run_cli("--data-dir", str(data), "search", "test-book", "rivers")
    assert human.returncode == 0 and "test-book#r0003" in human.stdout


def test_argv_bytes_through_a_real_process(data: Path) -> None:
    for argv in ([b"read", b"test-book", BAD], [b"search", b"test-book", BAD + b" rivers"]):
        out = subprocess.run([sys.executable.encode(), b"-m", b"book_agent", b"--data-dir", os.fsencode(data),
                              *argv, b"--json"], capture_output=True, timeout=120)
        assert b"Traceback" not in out.stderr
        json.loads(out.stdout.decode("utf-8"))  # one valid UTF-8 document, error or result


@pytest.mark.slow
def test_eight_processes_running_init_at_once_lose_no_entry(tmp_path):
    packages = []
    for i in range(8):
        records = [RecordSpec(f"r{i}", f"book number {i} about rivers", ["h"], 0)]
        packages.append(build_package(tmp_path / f"p{i}", book_id=f"book-{i}", kind="epub", records=records, dims=4))
    data = tmp_path / "data"
    env = {**os.environ, "BOOK_AGENT_HOME": str(data)}
    procs = [subprocess.Popen([sys.executable, "-m", "book_agent", "init", str(p), "--json"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in packages]
    outputs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outputs]
    registry = json.loads((data / "registry.json").read_text(encoding="utf-8"))
    assert sorted(registry["books"]) == [f"book-{i}" for i in range(8)]


@pytest.mark.slow
def test_kill_9_during_init_then_init_again(tmp_path: Path) -> None:
    root = build_package(tmp_path / "big", kind="epub", records=synthetic_records(20000, words=80), dims=4)
    data = tmp_path / "data"
    runtime = data / "books" / "test-book"
    env = {**os.environ, "BOOK_AGENT_HOME": str(data)}
    proc = subprocess.Popen([sys.executable, "-m", "book_agent", "init", str(root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(runtime.glob(".lexical-*")):
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert list(runtime.glob(".lexical-*")), "the build ended before the kill; make the book bigger"
    assert JsonRegistry(data).list() == []  # killed before the entry: nothing registered
    again = subprocess.run([sys.executable, "-m", "book_agent", "init", str(root), "--json"], env=env,
                           capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr[-500:]
    assert not list(runtime.glob(".lexical-*"))


def test_the_console_script_runs(tmp_path: Path) -> None:
    require_real_part(CONSOLE_SCRIPT.exists(), f"the book-agent console script beside {sys.executable}")
    out = subprocess.run([str(CONSOLE_SCRIPT), "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"book-agent {__version__}", out.stderr
    error = subprocess.run([str(CONSOLE_SCRIPT), "--data-dir", str(tmp_path / "data"), "status", "nope", "--json"],
                           capture_output=True, text=True, timeout=120)
    assert error.returncode == 1 and json.loads(error.stdout)["error"]["code"] == "book.not_registered"
