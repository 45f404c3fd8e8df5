"""The error codes of the host adapters (catalogued in contracts/hosts.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError


def config_malformed(path: Path, reason: str, host: str, **details: Any) -> BookAgentError:
    return BookAgentError(
        "host.config_malformed",
        f"{host} config {path} cannot be read safely: {reason}; it was left untouched",
        details={"path": str(path), "host": host, "reason": reason, **details},
        remediation=(
            f"fix or move {path} (a copy of the original may be at {path.name}.book-agent.bak), "
            "then run the command again; or follow the manual instructions "
            "(`book-agent host plan HOST BOOK`)"
        ),
    )


def file_unusable(path: Path, reason: str) -> BookAgentError:
    """A host file (config, backup, skill file) that is a directory, FIFO, device, socket, a
    symlink loop, or too large: never opened (a FIFO's open blocks, a device never ends),
    read past its bound, or replaced."""
    return BookAgentError(
        "host.file_unusable",
        f"{path} {reason}, where a regular file of a host's was expected; it was neither read nor written",
        details={"path": str(path), "reason": reason},
        remediation=f"move {path} aside (or point its symlink at a regular file), then run the command again",
    )


def write_failed(path: Path, exc: OSError, written: list[str]) -> BookAgentError:
    """A host file or folder that cannot be written (read-only folder or file system, no
    permission, disk full). Each file is replaced atomically: none is left half-written."""
    import errno

    reason = exc.strerror or type(exc).__name__
    return BookAgentError(
        "host.write_failed",
        f"cannot write {path}: {reason}; no file was left half-written",
        details={"path": str(path), "reason": reason, "errno": errno.errorcode.get(exc.errno or 0),
                 "already_written": written},
        remediation=f"make {path.parent} writable (or free disk space), then run the same command again: "
                    "it completes what is missing and leaves what is done",
    )
