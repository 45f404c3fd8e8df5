"""A long-running server's library writer (book_agent/services/library/writer.py) runs its jobs in a child
process, so that a compaction's memory (~2 GB at a million records) and CPU never join the
server's.

The child is `python -m book_agent.cli.commands.library_writer` over the same data dir, the library
backend chosen by the environment as the server's was (the CLI's --library-backend sets it),
started at the lowest priority (processes/low_priority.py). It holds the build lock as any writer
does and commits by one rename; killed (the server stopping kills the one under way), it leaves
the previous generation.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.processes.low_priority import (
    LIBRARY_WRITER_NICENESS,
    python_module_command,
    start_low_priority,
)

if TYPE_CHECKING:
    import subprocess

    from book_agent.domain.library import WriterJob

# The child writer's module (a test's server swaps in one whose writer holds its commit point).
WRITER_MODULE = "book_agent.cli.commands.library_writer"


class ChildWriter:
    """Runs a background writer's job in a child process and waits for it (`run`); `stop` kills
    the one under way when the server stops: it leaves the previous generation, as any killed
    writer."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.pids: list[int] = []  # the children started, in order (tests look at them)

    def run(self, job: WriterJob) -> None:
        """Run `job` in a new child and wait for it; its coded error when it fails."""
        command = python_module_command(WRITER_MODULE, ["--data-dir", str(self.data_dir), *job.argv()])
        with self._lock:
            self._child = start_low_priority(command, LIBRARY_WRITER_NICENESS, capture_stderr=True)
            self.pids.append(self._child.pid)
        _, err = self._child.communicate()
        if self._child.returncode != 0:
            raise _child_error(self._child.returncode, err.decode("utf-8", "replace"))

    def stop(self) -> None:
        """Kill the child under way, if any (it leaves the previous generation)."""
        with self._lock:
            if self._child is not None and self._child.poll() is None:
                os.kill(self._child.pid, signal.SIGKILL)


def _child_error(returncode: int, stderr: str) -> BookAgentError:
    """The child writer's failure as its coded error (its last stderr line is the error's JSON)."""
    for line in reversed(stderr.strip().splitlines()):
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if isinstance(raw, dict) and "code" in raw:
            return BookAgentError(str(raw["code"]), str(raw.get("message", "")), remediation=raw.get("remediation"))
    return BookAgentError("library.writer_failed", f"the library writer exited with {returncode}: {stderr[-500:]}",
                          remediation="run `book-agent prepare @all` to see the error")
