"""The files of a library vector index: its pointer, its row -> record id map, their integrity.

The pointer (`<group>.json`) names the current generation's files, the index
(`<group>-<gen>.faiss`) and the record ids of its rows (`<group>-<gen>.ids`), and records
each one's size, sha256 and file state (size, mtime, inode). It is replaced in one rename
after both files are in place, so it never names half a file.

The ids file is read by memory map, a row's id decoded only when the row is a candidate: a
million ids parsed from JSON cost ~0.4 s of a cold search. Layout: n+1 little-endian int64
offsets, then the ids' UTF-8 bytes; row r's id is bytes[offset[r]:offset[r+1]].
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from book_agent_adapters.files.file_hash import sha256_file

FORMAT = 2
FILES = ("index", "ids")


def read_pointer(path: Path) -> tuple[dict[str, Any] | None, str]:
    """(pointer, "present"), or (None, why not)."""
    try:
        pointer = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "absent"
    except (OSError, ValueError):
        return None, "unreadable"
    if not isinstance(pointer, dict) or pointer.get("format") != FORMAT:
        return None, "of another format"
    files = pointer.get("files")
    if not isinstance(pointer.get("stamp"), dict) or not isinstance(pointer.get("books"), list) \
            or not isinstance(files, dict) or not all(_plain_name(files.get(f)) for f in FILES):
        return None, "malformed"
    return pointer, "present"


def _plain_name(facts: Any) -> bool:
    name = facts.get("name") if isinstance(facts, dict) else None
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def file_facts(path: Path) -> dict[str, Any]:
    return {"name": path.name, "size": path.stat().st_size, "sha256": sha256_file(path), "state": file_state(path)}


def file_state(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def intact(folder: Path, pointer: dict[str, Any]) -> tuple[bool, str]:
    """Both files unchanged since written (size, mtime, inode as recorded), or else the same
    bytes: hashing the index (~400 MB at 1M vectors) is left to a file touched since."""
    for kind in FILES:
        facts = pointer["files"][kind]
        path = folder / facts["name"]
        try:
            if file_state(path) == facts.get("state"):
                continue
            if path.stat().st_size != facts.get("size"):
                return False, f"corrupt: its {kind} file's size changed"
            if sha256_file(path) != facts.get("sha256"):
                return False, f"corrupt: its {kind} file's bytes changed"
        except FileNotFoundError:
            return False, "missing"
        except OSError as exc:
            return False, f"unreadable ({exc.strerror})"
    return True, "fresh"


def write_row_ids(handle: IO[bytes], ids: Sequence[str]) -> None:
    encoded = [i.encode("utf-8") for i in ids]
    offsets = np.zeros(len(encoded) + 1, dtype="<i8")
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    handle.write(offsets.tobytes())
    handle.write(b"".join(encoded))


class RowIds:
    """Row -> record id, from a memory-mapped ids file of `rows` rows."""

    def __init__(self, path: Path, rows: int) -> None:
        mapped = np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))  # a plain view: cheaper to slice
        head = (rows + 1) * 8
        if len(mapped) < head:
            raise ValueError("the ids file is shorter than its offsets")
        self._offsets = np.frombuffer(mapped, dtype="<i8", count=rows + 1)
        self._bytes = mapped[head:]
        if self._offsets[0] != 0 or int(self._offsets[-1]) != len(self._bytes) \
                or bool((np.diff(self._offsets) < 0).any()):
            raise ValueError("the ids file's offsets do not match its bytes")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, row: int) -> str:
        return bytes(self._bytes[int(self._offsets[row]):int(self._offsets[row + 1])]).decode("utf-8")
