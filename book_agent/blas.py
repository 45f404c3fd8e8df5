"""One BLAS threads policy for every entry point: the CLI, the MCP server and the Python API.

Query encoding multiplies small matrices (a query is 5-60 tokens), where a second BLAS
thread gains little on an idle machine and costs a lot on a busy one: two threads fighting
over two busy cores gave 75 ms p50 / 480 ms p95 encodings against ~10 ms with one. So
book-agent runs BLAS with `BOOK_AGENT_BLAS_THREADS` threads: 1 when it is unset, a number to
choose, `auto` to leave BLAS alone (its own default, or OPENBLAS_NUM_THREADS and co.).

How: `import book_agent` calls `configure_environment()`, which sets the BLAS libraries'
variables before numpy loads them (an explicit BOOK_AGENT_BLAS_THREADS overrides them; else a
user's own OPENBLAS_NUM_THREADS etc. is kept). When numpy was imported before book_agent
(a Python API caller), the variables come too late; `apply_to_loaded_blas()`, called by every
search (BookAgent.search, warm_up, evaluate: a flag check after the first) and when the local
encoder loads, then sets the loaded BLAS through threadpoolctl. Without it a 2k-record hybrid
search with a supplied vector took ~48 ms instead of ~3 ms on a loaded 2-core machine (the
matrix product's BLAS threads fight over the cores).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import MutableMapping

from book_agent import settings

ENV = settings.ENV_BLAS_THREADS
DEFAULT_THREADS = 1
# OpenBLAS (numpy's wheels), MKL, BLIS, Accelerate. Not OMP_NUM_THREADS: it would also bind
# every other OpenMP library of a caller's process.
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

# numpy_was_loaded: numpy came before book_agent; user_chose: a BLAS variable was already set
_state = {"numpy_was_loaded": False, "user_chose": False, "applied": False}
_lock = threading.Lock()


def wanted_threads(environ: MutableMapping[str, str] | None = None) -> int | None:
    """Threads book-agent wants BLAS to use; None for `auto` (leave BLAS alone)."""
    value = settings.blas_threads(environ)
    if not value:
        return DEFAULT_THREADS
    if value == "auto":
        return None
    try:
        threads = int(value)
    except ValueError:
        return DEFAULT_THREADS  # a typo must not turn a server into a thread fight
    return threads if threads > 0 else None


def configure_environment(environ: MutableMapping[str, str] | None = None) -> None:
    """Set the BLAS variables for `wanted_threads()`; must run before numpy is imported."""
    env = os.environ if environ is None else environ
    _state["numpy_was_loaded"] = "numpy" in sys.modules
    _state["user_chose"] = any(name in env for name in BLAS_VARIABLES)
    threads = wanted_threads(env)
    if threads is None:
        return
    explicit = bool(settings.blas_threads(env))
    for name in BLAS_VARIABLES:
        if explicit:
            env[name] = str(threads)
        else:
            env.setdefault(name, str(threads))


def apply_to_loaded_blas() -> None:
    """When numpy was loaded before book_agent, set its BLAS now (once per process)."""
    if _state["applied"] or not _state["numpy_was_loaded"]:
        return  # the common path: no lock, two lookups
    with _lock:
        if _state["applied"]:
            return
        _state["applied"] = True
        threads = wanted_threads()
        explicit = bool(settings.blas_threads())
        if threads is None or (not explicit and _state["user_chose"]):
            return  # `auto`, or the caller chose through the BLAS's own variables
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return  # a dependency of book-agent; without it BLAS keeps its own default
        threadpool_limits(limits=threads, user_api="blas")
