"""Worker processes that die with the process that started them.

A build counts books in a pool of spawned worker processes. Killed (kill -9, a caller's
timeout), a parent cannot stop them, and orphans used to count on for minutes, holding the
parent's stdout/stderr (a caller capturing its output waits for them). So each worker, as it
starts, asks Linux to kill it when its parent ends (PR_SET_PDEATHSIG), and on every system
watches its parent's pid from a daemon thread (the parent gone, the worker exits within
POLL_S). The pdeath signal fires when the parent *thread* that spawned the worker ends: that is
the thread waiting for the pool's results, which outlives the pool.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
POLL_S = 0.5


def die_with_parent(parent: int) -> None:
    """Pool initializer (`initargs=(os.getpid(),)`): end this process when `parent` ends."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os._exit(1)
