"""The one way book-agent starts its own background work in another process: `python -m MODULE
ARGS` under the same interpreter, at a lower priority (searches of the process that started it
come first on a busy machine), in a session of its own (a caller's Ctrl-C or the terminal closing
does not stop it halfway; its writes commit by one rename anyway), with no terminal input.

The priority is set by the `nice` command before the child's interpreter starts, not by the child
itself nor by a `preexec_fn` (unsafe in a process with threads, as every server is); where there is
no `nice` (Windows), the child runs at the caller's priority.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

LOCATOR_REBUILD_NICENESS = 10  # minutes of CPU-bound verifying; the live hits are verified meanwhile
LIBRARY_WRITER_NICENESS = 19  # the lowest: a compaction waits for the server's searches, never the reverse


def python_module_command(module: str, args: Sequence[str]) -> list[str]:
    """`python -m module args` under this interpreter (what a caller's test may swap the module of)."""
    return [sys.executable, "-m", module, *args]


def start_low_priority(command: Sequence[str], niceness: int, *, capture_stderr: bool = False) -> subprocess.Popen[bytes]:
    """Start `command` (an argv) `niceness` steps below this process, in a new session, stdin
    and stdout closed, stderr piped when `capture_stderr` (else closed). Raises OSError when it
    cannot be started."""
    import shutil  # here: a cold start imports the modules that may start a child, rarely a child
    import subprocess

    nice = shutil.which("nice") if os.name == "posix" else None
    argv = [nice, "-n", str(niceness), *command] if nice else list(command)
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE if capture_stderr else subprocess.DEVNULL,
                            start_new_session=True)
