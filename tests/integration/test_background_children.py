"""book-agent's background work in other processes (a server's library writer jobs, a book's
locator rebuild) starts one way (the adapters' processes/low_priority.py): `python -m MODULE`
under this interpreter, below this process's priority by the job's niceness, in a session of its
own, with no terminal input. Each child here reports how it was started (tests/support/
report_niceness.py) or is looked at while it runs."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from book_agent.domain.library import WriterJob
from book_agent_adapters.book.locator_refresh import PrepareProcessRefresh
from book_agent_adapters.library import child_writer
from book_agent_adapters.processes.low_priority import (
    LIBRARY_WRITER_NICENESS,
    LOCATOR_REBUILD_NICENESS,
    python_module_command,
    start_low_priority,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="niceness and sessions are POSIX's")
PROBE = "tests.support.report_niceness"


def _expected(niceness: int) -> int:
    return min(19, os.nice(0) + niceness)  # relative to this process; 19 is the floor of priority


def _report(path: Path) -> dict[str, object]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_low_priority_child_runs_below_its_parent_in_a_session_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOK_AGENT_TEST_REPORT", str(tmp_path / "report.json"))
    child = start_low_priority(python_module_command(PROBE, ["a", "b c"]), 7)
    assert child.wait(60) == 0
    report = _report(tmp_path / "report.json")
    assert report == {"niceness": _expected(7), "own_session": True, "stdin_closed": True, "argv": ["a", "b c"]}


def test_the_library_writers_child_runs_at_the_lowest_priority_with_the_jobs_arguments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOK_AGENT_TEST_REPORT", str(tmp_path / "report.json"))
    monkeypatch.setattr(child_writer, "WRITER_MODULE", PROBE)
    writer = child_writer.ChildWriter(tmp_path / "data")
    writer.run(WriterJob("compact", None))
    report = _report(tmp_path / "report.json")
    assert report["niceness"] == _expected(LIBRARY_WRITER_NICENESS) == 19
    assert report["own_session"] is True
    assert report["argv"] == ["--data-dir", str(tmp_path / "data"), "--lexical", "compact", "--vectors", "none"]
    assert writer.pids and os.getpid() not in writer.pids


def test_a_failed_writer_childs_coded_error_reaches_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOK_AGENT_TEST_REPORT", str(tmp_path / "missing-dir" / "report.json"))  # the probe fails
    monkeypatch.setattr(child_writer, "WRITER_MODULE", PROBE)
    from book_agent.domain.errors import BookAgentError

    with pytest.raises(BookAgentError) as caught:
        child_writer.ChildWriter(tmp_path / "data").run(WriterJob("build", "build"))
    assert caught.value.code == "library.writer_failed" and "FileNotFoundError" in caught.value.message


def test_a_locator_rebuild_runs_as_prepare_below_its_parent(tmp_path: Path, pdf_package: Path) -> None:
    from book_agent.agent import BookAgent

    data = tmp_path / "data"
    with BookAgent(data) as agent:
        agent.init(pdf_package)
        runtime_dir = agent.runtime_dir("test-book")
    job = PrepareProcessRefresh(data).start("test-book", runtime_dir)
    assert job is not None
    pid = job.process.pid  # type: ignore[attr-defined]
    seen: set[int] = set()
    deadline = time.monotonic() + 30
    while not job.done() and time.monotonic() < deadline:
        try:
            seen.add(os.getpriority(os.PRIO_PROCESS, pid))
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (ProcessLookupError, FileNotFoundError):
            break
        if _expected(LOCATOR_REBUILD_NICENESS) in seen and cmdline[:1] == [sys.executable.encode()]:
            break
        time.sleep(0.01)
    assert _expected(LOCATOR_REBUILD_NICENESS) in seen
    assert cmdline[1:4] == [b"-m", b"book_agent", b"--data-dir"] and b"prepare" in cmdline
    job.process.wait(120)  # type: ignore[attr-defined]
