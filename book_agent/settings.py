"""book-agent's own environment variables, each read here and nowhere else (a test greps the
source roots for the rest):

| variable | what it sets |
|---|---|
| `BOOK_AGENT_HOME` | the data dir when `--data-dir` is not given (else the platform's user data dir) |
| `BOOK_AGENT_BLAS_THREADS` | BLAS threads: unset = 1, a number, or `auto` (book_agent/blas.py) |
| `BOOK_AGENT_DEBUG` | `1`: an unexpected error's traceback goes to stderr (book_agent/cli/output.py) |
| `BOOK_AGENT_SERVE_OPTIONS` | set by `serve --workers N` for its worker processes: their options, as JSON |

A reader takes an optional `environ` mapping, so tests pass their own instead of changing the
process's environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_HOME = "BOOK_AGENT_HOME"
ENV_BLAS_THREADS = "BOOK_AGENT_BLAS_THREADS"
ENV_DEBUG = "BOOK_AGENT_DEBUG"
ENV_SERVE_OPTIONS = "BOOK_AGENT_SERVE_OPTIONS"


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def resolve_data_dir(data_dir: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """--data-dir, else $BOOK_AGENT_HOME, else the user data dir."""
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    env = _environ(environ).get(ENV_HOME)
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("book-agent", appauthor=False)).resolve()


def blas_threads(environ: Mapping[str, str] | None = None) -> str:
    """$BOOK_AGENT_BLAS_THREADS, stripped and lower-cased ("" when unset)."""
    return _environ(environ).get(ENV_BLAS_THREADS, "").strip().lower()


def debug_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether $BOOK_AGENT_DEBUG asks for tracebacks (set, and not 0/false/no)."""
    return _environ(environ).get(ENV_DEBUG, "").strip().lower() not in ("", "0", "false", "no")


def worker_serve_options() -> str:
    """In a `serve --workers` process: the options its parent set (JSON)."""
    return os.environ[ENV_SERVE_OPTIONS]


def set_worker_serve_options(options_json: str) -> None:
    """In the `serve --workers` parent: the options the spawned workers inherit."""
    os.environ[ENV_SERVE_OPTIONS] = options_json
