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
