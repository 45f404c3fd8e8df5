"""The markers beside the library's lexical head (library_lexical_search.py reads and writes them):
`.damaged` ("a search found this very head damaged") and `.verified` ("these postings file states
under this very head were verified block by block": a copied library is verified once, and a
read-only one once per process, issue 48). Each names the head by inode, ctime and size.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.safe_files import open_regular, require_regular
from book_agent_adapters.library.local.lexical.impact_checks import VERIFIED_SUFFIX

DAMAGED_SUFFIX = ".damaged"  # beside the head: "this head (inode, ctime) was found damaged by a search"


def head_identity(path: Path) -> str:
    st = require_regular(path)
    return f"{st.st_ino}:{st.st_ctime_ns}:{st.st_size}"


def _head_marker(path: Path, suffix: str) -> dict[str, Any] | None:
    """The marker beside the head (its name + `suffix`) when it names this very head, else None."""
    try:
        marker = json.loads(require_regular_text(path.with_name(path.name + suffix)))
        return marker if isinstance(marker, dict) and marker.get("head") == head_identity(path) else None
    except (OSError, ValueError):
        return None


def _write_head_marker(path: Path, suffix: str, identity: str | None, **fields: object) -> None:
    """A marker beside the head naming it (`identity`; None: the head as it is now). Best effort:
    a read-only data dir cannot keep one."""
    with contextlib.suppress(OSError):
        head = identity if identity is not None else head_identity(path)
        write_atomic(path.with_name(path.name + suffix), json.dumps({"head": head, **fields}).encode("utf-8"))


def marked_damaged(path: Path) -> str | None:
    """Why a search found this very head damaged (None: no search did)."""
    marker = _head_marker(path, DAMAGED_SUFFIX)
    return str(marker["reason"]) if marker is not None and "reason" in marker else None


_VERIFIED_HERE: set[str] = set()  # (head, states) verified by this process: a read-only data dir keeps no marker


def _verified_key(path: Path, states: dict[str, str]) -> str:
    return json.dumps([str(path), head_identity(path), states], sort_keys=True)


def verified_before(path: Path, states: dict[str, str]) -> bool:
    """Whether these very postings file states (size, mtime, inode, ctime) under this very head
    were verified block by block already (by this process, or any that could leave its marker):
    any write since changes a ctime, which nobody can set back."""
    if _verified_key(path, states) in _VERIFIED_HERE:
        return True
    marker = _head_marker(path, VERIFIED_SUFFIX)
    return marker is not None and marker.get("states") == states


def remember_verified(path: Path, states: dict[str, str], seconds: float, postings: int) -> None:
    """In memory, and beside the head where the data dir can be written: a read-only one (a
    replica mounted read-only) verifies once per process (issue 48), not at every check."""
    _VERIFIED_HERE.add(_verified_key(path, states))
    _write_head_marker(path, VERIFIED_SUFFIX, None, states=states, seconds=round(seconds, 4), postings=postings,
                       verified_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def verified_copy(path: Path) -> dict[str, Any] | None:
    """The marker of a copied index verified block by block (when, how long, how many postings);
    None when there is none for this very head."""
    marker = _head_marker(path, VERIFIED_SUFFIX)
    return {k: marker.get(k) for k in ("verified_at", "seconds", "postings")} if marker is not None else None


def require_regular_text(path: Path) -> str:
    with open_regular(path) as handle:
        return handle.read(1 << 16).decode("utf-8")


def mark_damaged(path: Path, identity: str, reason: str) -> None:
    """Remember that this head is damaged, so that `state` says so and a build replaces it (best
    effort: a read-only data dir cannot be repaired here anyway)."""
    _write_head_marker(path, DAMAGED_SUFFIX, identity, reason=reason)
