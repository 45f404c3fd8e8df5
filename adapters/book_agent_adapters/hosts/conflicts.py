"""Server names in a host's config: which are there, and one name for one data dir.

Server names come from the book id (`book-<id>`, `book-library`), not from the data dir, so
installing the same book from a second data dir would silently re-point the host's entry at
other registrations (other packages, configs, keys). That is `host.server_conflict` unless
`--replace` says it is meant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.ports import HostPort


def data_dir_of(args: Any) -> str | None:
    """The `--data-dir` an entry's argv passes (None when it passes none)."""
    if not isinstance(args, list):
        return None
    for i, arg in enumerate(args[:-1]):
        if arg == "--data-dir" and isinstance(args[i + 1], str):
            return str(args[i + 1])
    return None


def _same(a: str, b: str) -> bool:
    return Path(a).expanduser().absolute() == Path(b).expanduser().absolute()


def check_data_dir(current: dict[str, Any] | None, entry: dict[str, Any], name: str, host: str,
                   replace: bool) -> None:
    """Raise host.server_conflict when `name` already serves another data dir (and not `replace`)."""
    if replace or not current:
        return
    was, now = data_dir_of(current.get("args")), data_dir_of(entry.get("args"))
    if was is None or now is None or _same(was, now):
        return
    raise BookAgentError(
        "host.server_conflict",
        f"{host}'s server {name} already serves the data dir {was}; installing it from {now} would re-point it "
        "there (the other registrations, configs and keys)",
        details={"host": host, "server_name": name, "installed_data_dir": was, "data_dir": now},
        remediation=f"add --replace to re-point {name} at {now}, or install from {was} "
                    f"(book-agent --data-dir {was} host install ...)",
    )


def server_names(port: HostPort, text: str, path: Path) -> list[str]:
    """Our server names in a config (for inspect): read_server needs a name, so the candidates
    come from the text and each is read back."""
    import re

    found = re.findall(r'(?:mcp_servers\.|")(book-[a-z0-9-]+)', text)
    return sorted({n for n in found if port.read_server(text, path, n) is not None})
