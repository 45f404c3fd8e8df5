"""The pointer file of a library vector index, and whether its index file is intact.

The pointer (`<group>.json`) names the index file of the current generation and records its
size, sha256 and file state (size, mtime, inode); it is replaced in one rename after the index
file is in place, so it never names half a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from book_agent.adapters.storage.file_hash import sha256_file

FORMAT = 1


def read_pointer(path: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        pointer = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "absent"
    except (OSError, ValueError):
        return None, "unreadable"
    if not isinstance(pointer, dict) or pointer.get("format") != FORMAT:
        return None, "of another format"
    if not isinstance(pointer.get("stamp"), dict) or not isinstance(pointer.get("index_file"), str) \
            or not isinstance(pointer.get("books"), list) or "/" in pointer["index_file"] \
            or "\\" in pointer["index_file"]:
        return None, "malformed"
    return pointer, "present"


def file_facts(path: Path) -> dict[str, Any]:
    return {"index_size": path.stat().st_size, "index_sha256": sha256_file(path), "index_state": file_state(path)}


def file_state(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def intact(path: Path, pointer: dict[str, Any]) -> tuple[bool, str]:
    """Unchanged since written (size, mtime, inode as recorded), or else the same bytes: hashing
    the index (~400 MB at 1M vectors) is left to a file that was touched since."""
    try:
        if file_state(path) == pointer.get("index_state"):
            return True, "fresh"
        if path.stat().st_size != pointer.get("index_size"):
            return False, "corrupt: its size changed"
        if sha256_file(path) != pointer.get("index_sha256"):
            return False, "corrupt: its bytes changed"
    except FileNotFoundError:
        return False, "missing"
    except OSError as exc:
        return False, f"unreadable ({exc.strerror})"
    return True, "fresh"
