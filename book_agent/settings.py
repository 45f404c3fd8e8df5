"""Process-wide settings: book-agent's own environment variables are read here and nowhere
else (a test scans the source roots for the rest), and the data dir's config.toml.

| variable | what it sets |
|---|---|
| `BOOK_AGENT_HOME` | the data dir when `--data-dir` is not given (else the platform's user data dir) |
| `BOOK_AGENT_LIBRARY_BACKEND` | the library backend (below); the CLI's `--library-backend NAME` sets it |
| `BOOK_AGENT_BLAS_THREADS` | BLAS threads: unset = 1, a number, or `auto` (book_agent/blas.py) |
| `BOOK_AGENT_DEBUG` | `1`: an unexpected error's traceback goes to stderr (book_agent/cli/output.py) |
| `BOOK_AGENT_SERVE_OPTIONS` | set by `serve --workers N` for its worker processes: their options, as JSON |
| `BOOK_AGENT_MILVUS_URI` | the Milvus library backend's server (`http://host:19530`), over `[library.milvus] uri` |
| `BOOK_AGENT_MODELS` | where `model install` puts models, once per user (else the user cache dir's `models/`) |
| `BOOK_AGENT_MILVUS_TOKEN`, `_USER`, `_PASSWORD` | the Milvus backend's credentials when `[library.milvus]` names no variable of its own |
| (named in config) | the Milvus backend's token: `[library.milvus] token_env` names the variable; its value is never stored |

The library backend (contracts/library.md, "Library backends"): an explicit argument
(`build_agent(library_backend=...)`), else $BOOK_AGENT_LIBRARY_BACKEND (which the CLI's
`--library-backend NAME` sets for the process and the servers it starts), else `[library]
backend` in the data dir's config.toml, else "local". The backend's own options are the
config's `[library.<name>]` table.

A reader takes an optional `environ` mapping, so tests pass their own instead of changing the
process's environment.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from book_agent.domain.errors import BookAgentError

if TYPE_CHECKING:  # `import book_agent` reads settings: the library's types load with a library
    from book_agent.domain.library import LibraryBackendSetting

ENV_HOME = "BOOK_AGENT_HOME"
ENV_LIBRARY_BACKEND = "BOOK_AGENT_LIBRARY_BACKEND"
ENV_BLAS_THREADS = "BOOK_AGENT_BLAS_THREADS"
ENV_DEBUG = "BOOK_AGENT_DEBUG"
ENV_SERVE_OPTIONS = "BOOK_AGENT_SERVE_OPTIONS"
ENV_MILVUS_URI = "BOOK_AGENT_MILVUS_URI"
ENV_MODELS = "BOOK_AGENT_MODELS"
# the Milvus backend's credentials when its config names none (values read by secret_from, never stored)
ENV_MILVUS_TOKEN = "BOOK_AGENT_MILVUS_TOKEN"
ENV_MILVUS_USER = "BOOK_AGENT_MILVUS_USER"
ENV_MILVUS_PASSWORD = "BOOK_AGENT_MILVUS_PASSWORD"
CONFIG_NAME = "config.toml"  # the data dir's own settings (per-book settings live in each book's config.json)
CONFIG_MAX_BYTES = 1 << 20
DEFAULT_LIBRARY_BACKEND = "local"


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


def resolve_models_dir(models_dir: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Where models are installed once per user and shared by every data dir: --models-dir,
    else $BOOK_AGENT_MODELS, else the user cache dir's `models` (~/.cache/book-agent/models)."""
    if models_dir:
        return Path(models_dir).expanduser().resolve()
    env = _environ(environ).get(ENV_MODELS)
    if env:
        return Path(env).expanduser().resolve()
    return (user_cache_dir(environ) / "models").resolve()


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """platformdirs' user cache dir for book-agent. Every search may look for the per-user model
    here, and platformdirs' Unix module imports tempfile (with shutil, random, bz2, lzma: ~10 ms
    of a one-shot search), so on Linux the XDG rule it applies is applied here (an absolute
    $XDG_CACHE_HOME, else ~/.cache); tests/unit/test_settings.py holds the two to the same answer."""
    if sys.platform.startswith("linux"):
        xdg = _environ(environ).get("XDG_CACHE_HOME", "").strip()
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path("~/.cache").expanduser()
        return base / "book-agent"
    import platformdirs

    return Path(platformdirs.user_cache_dir("book-agent", appauthor=False))


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


def milvus_uri(environ: Mapping[str, str] | None = None) -> str:
    """$BOOK_AGENT_MILVUS_URI, stripped ("" when unset)."""
    return _environ(environ).get(ENV_MILVUS_URI, "").strip()


def secret_from(variable: str, environ: Mapping[str, str] | None = None) -> str:
    """The value of the environment variable a config names for a secret ("" when unset):
    read when needed, never written anywhere."""
    return _environ(environ).get(variable, "")


def use_library_backend(name: str) -> None:
    """The CLI's --library-backend: the environment variable, so the servers and workers this
    process starts choose the same backend (as Django's --settings sets its variable)."""
    os.environ[ENV_LIBRARY_BACKEND] = name


def library_backend_setting(data_dir: Path, explicit: str | None = None,
                            environ: Mapping[str, str] | None = None) -> LibraryBackendSetting:
    """The library backend to use and its options, by the precedence in the module docstring."""
    from book_agent.domain.library import LibraryBackendSetting

    env = os.environ if environ is None else environ
    section = _library_section(data_dir)
    chosen = [(explicit, "argument"), (env.get(ENV_LIBRARY_BACKEND), "environment"),
              (section.get("backend"), "config"), (DEFAULT_LIBRARY_BACKEND, "default")]
    name, source = next((str(v).strip(), s) for v, s in chosen if v is not None and str(v).strip())
    options = section.get(name, {})
    if not isinstance(options, dict):
        raise _invalid(data_dir, f"[library.{name}] must be a table of the backend's options")
    return LibraryBackendSetting(name=name, source=source, options=options)


def _library_section(data_dir: Path) -> dict[str, Any]:
    """The `[library]` table of data_dir/config.toml ({} when there is no file)."""
    path = data_dir / CONFIG_NAME
    try:
        with open(path, "rb") as handle:
            raw = handle.read(CONFIG_MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _invalid(data_dir, f"it cannot be read ({exc.strerror or exc})") from exc
    if len(raw) > CONFIG_MAX_BYTES:
        raise _invalid(data_dir, "it is over 1 MiB")
    import tomllib  # only when a config file exists: ~5 ms of every command's start otherwise

    try:
        library = tomllib.loads(raw.decode("utf-8")).get("library", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _invalid(data_dir, f"it is not valid TOML ({exc})") from exc
    if not isinstance(library, dict) or not isinstance(library.get("backend", ""), str):
        raise _invalid(data_dir, "[library] must be a table whose `backend` is a name")
    return library


def _invalid(data_dir: Path, why: str) -> BookAgentError:
    path = data_dir / CONFIG_NAME
    return BookAgentError("config.invalid", f"{path}: {why}", details={"path": str(path)},
                          remediation=f"fix or delete {path} (contracts/library.md, \"Library backends\")")
