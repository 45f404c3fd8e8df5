"""The staging folders of `model install` (model_install.py): one install at a time per models
folder, and what a killed install left swept by the next.

An install stages the model in `.incoming-<random>/` below the models folder and renames it
into place. kill -9 mid-copy leaves that folder (hundreds of MB) behind. Installs take
`.install.lock` (portalocker, across processes, as a runtime dir's build lock): whoever holds
it knows every `.incoming-*` there is a dead install's, and removes it.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from book_agent.domain.errors import BookAgentError

INCOMING = ".incoming-"
LOCK_NAME = ".install.lock"
LOCK_WAIT_S = 1800  # as long as a fetch may take: the other install finishes first


@contextmanager
def install_lock(models_dir: Path, wait: bool = True) -> Iterator[None]:
    """One install at a time per models folder (cross-process); `wait` False: busy at once."""
    import portalocker

    models_dir.mkdir(parents=True, exist_ok=True)
    lock = portalocker.Lock(str(models_dir / LOCK_NAME), mode="a", timeout=LOCK_WAIT_S if wait else 0,
                            fail_when_locked=not wait)
    try:
        lock.acquire()
    except portalocker.exceptions.LockException as exc:
        raise BookAgentError(
            "model.install_busy", f"another `book-agent model install` is writing {models_dir}",
            details={"models_dir": str(models_dir)}, remediation="run it again when the other install is done") from exc
    try:
        yield
    finally:
        lock.release()


def sweep_incoming(models_dir: Path) -> list[str]:
    """Remove what killed installs left (call holding the install lock); their paths."""
    removed = []
    for entry in sorted(models_dir.glob(INCOMING + "*")):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        if not entry.exists():
            removed.append(str(entry))
    return removed


def sweep_if_writable(models_dir: Path) -> dict[str, list[str]]:
    """A model found intact still has a killed install's staging swept (best effort: a
    read-only data dir keeps them, and the intact model is still the answer)."""
    if not any(models_dir.glob(INCOMING + "*")):
        return {}
    try:
        with install_lock(models_dir, wait=False):  # an install under way sweeps them itself
            found = sweep_incoming(models_dir)
    except (OSError, BookAgentError):
        return {}
    return {"swept": found} if found else {}


def write_failed(models_dir: Path, exc: OSError) -> BookAgentError:
    """A write below the models folder failed: storage.read_only, storage.no_space, or model.install_failed."""
    from book_agent_adapters.files.safe_files import is_read_only, no_space, read_only

    if is_read_only(exc):
        return read_only(models_dir, exc, "the model")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return no_space(models_dir, exc, None, "the model")
    return BookAgentError("model.install_failed", f"cannot write the model into {models_dir}: {exc}",
                          details={"models_dir": str(models_dir)},
                          remediation="make the data dir writable, or pass another --data-dir")
