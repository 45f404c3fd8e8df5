"""The files of a library vector index: its pointer, its row -> record id map, their integrity.

The pointer (`<group>.json`) names the current generation's files: the base (the last full
build: its index `<group>-<gen>.faiss`, the record ids of its rows `<group>-<gen>.ids` and the
trained, empty index `<group>-<gen>.trained` that added books are encoded with) and one
*segment* per build that added books since (`<group>-<gen2>.faiss` / `.ids`), and records each
file's size, sha256 and file state (size, mtime, inode, ctime). Its `books` list every book's
rows in row order (base first, then each segment's), each with its member stamp and whether it
was removed since (a filter until the next full build). It is replaced in one rename after
every file it names is in place, so it never names half a file.

The ids file's offsets are read into memory and a row's id decoded only when the row is a
candidate (a million ids parsed from JSON cost ~0.4 s of a cold search); its bytes are read whole
when small, else with pread (never a memory map, issue 44). Layout: n+1 little-endian int64
offsets, then the ids' UTF-8 bytes; row r's id is bytes[offset[r]:offset[r+1]].
"""

from __future__ import annotations

import hashlib
import os
import re
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from book_agent_adapters.book.vectors.vector_sidecar import COPY_BELOW_BYTES
from book_agent_adapters.files import copy_checks
from book_agent_adapters.files.file_hash import sha256_file
from book_agent_adapters.files.safe_files import open_regular, require_regular
from book_agent_adapters.library.local import generations

FORMAT = 3  # 2: one index per generation, no segments (read as absent: rebuilt once)
FILES = ("index", "ids")
BASE_FILES = ("index", "ids", "trained")


def group_key(model: str, dimensions: int) -> str:
    """A file name for a model group: readable, and unique by a hash of model and dimensions."""
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", model).strip("-.")[:48] or "model"
    digest = hashlib.sha256(f"{model}\0{dimensions}".encode()).hexdigest()[:10]
    return f"{slug}-{dimensions}d-{digest}"


def read_pointer(path: Path) -> tuple[dict[str, Any] | None, str]:
    """(pointer, "present"), or (None, why not): its values must be possible (no negative or
    non-integer count, nprobe within 1..nlist, book rows summing to its vectors)."""
    pointer, reason = generations.read_pointer(path, FORMAT)
    if pointer is None:
        return None, reason
    files, segments = pointer.get("files"), pointer.get("segments", [])
    if not isinstance(pointer.get("stamp"), dict) or not isinstance(pointer.get("books"), list) \
            or not isinstance(files, dict) or not all(_plain_name(files.get(f)) for f in BASE_FILES) \
            or not isinstance(segments, list) \
            or not all(isinstance(s, dict) and all(_plain_name(s.get(f)) for f in FILES) for s in segments) \
            or not _possible(pointer):
        return None, "malformed"
    return pointer, "present"


def segment_files(pointer: dict[str, Any]) -> list[dict[str, Any]]:
    """The base's files, then each added segment's: `{"index": facts, "ids": facts, "rows": n}`."""
    return [{**pointer["files"], "rows": int(pointer["base_rows"])}, *pointer.get("segments", [])]


def named_files(pointer: dict[str, Any]) -> set[str]:
    """Every file the pointer's generation needs."""
    return {facts["name"] for kind in BASE_FILES for facts in (pointer["files"][kind],)} | {
        s[kind]["name"] for s in pointer.get("segments", []) for kind in FILES}


def book_stamps(stamp: dict[str, str]) -> dict[str, str]:
    """Each book's member stamp, from a group stamp's `books` (`id=stamp;...`, domain/library.py)."""
    found: dict[str, str] = {}
    for item in str(stamp.get("books") or "").split(";"):
        book_id, sep, member = item.partition("=")
        if sep:
            found[book_id] = member
    return found


def _count(value: Any, low: int = 0, high: int = 2**40) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _possible(pointer: dict[str, Any]) -> bool:
    books, segments = pointer["books"], pointer.get("segments", [])
    if not (_count(pointer.get("vectors")) and _count(pointer.get("nlist"), 1) and _count(pointer.get("dimensions"), 1)
            and _count(pointer.get("nprobe"), 1, int(pointer["nlist"])) and _count(pointer.get("base_rows"))
            and _count(pointer.get("sequence")) and _count(pointer.get("changed"))):
        return False
    if not all(isinstance(b, dict) and isinstance(b.get("book_id"), str) and _count(b.get("rows"))
               and isinstance(b.get("stamp"), str) and isinstance(b.get("removed", False), bool) for b in books):
        return False
    if not all(_count(s.get("rows")) for s in segments):
        return False
    rows = sum(int(b["rows"]) for b in books)
    return bool(rows == pointer["vectors"] == int(pointer["base_rows"]) + sum(int(s["rows"]) for s in segments))


def _plain_name(facts: Any) -> bool:
    name = facts.get("name") if isinstance(facts, dict) else None
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def file_facts(path: Path) -> dict[str, Any]:
    return {"name": path.name, "size": path.stat().st_size, "sha256": sha256_file(path), "state": file_state(path)}


def file_state(path: Path) -> list[int]:
    """Size, mtime, inode and ctime (a write in place changes the ctime; no user can set it back)."""
    st = require_regular(path)  # a FIFO would hang the hash
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def intact(folder: Path, pointer: dict[str, Any]) -> tuple[bool, str]:
    """Every file unchanged since written (size, mtime, inode as recorded), or else the same
    bytes: hashing the index (~400 MB at 1M vectors) is left to a file touched since, once per
    new file state (a copied data dir: copy_checks.py remembers the verdict)."""
    named = [(kind, pointer["files"][kind]) for kind in BASE_FILES]
    named += [(kind, segment[kind]) for segment in pointer.get("segments", []) for kind in FILES]
    for kind, facts in named:
        path = folder / facts["name"]
        try:
            state, recorded = file_state(path), facts.get("state")
            if isinstance(recorded, list) and state[:len(recorded)] == recorded and len(recorded) >= 3:
                continue  # a pointer of an earlier release recorded no ctime
            if path.stat().st_size != facts.get("size"):
                return False, f"corrupt: its {kind} file's size changed"
            if not isinstance(facts.get("sha256"), str) or not copy_checks.holds(path, facts["sha256"]):
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
    """Row -> record id, from an ids file of `rows` rows: its offsets in memory, its bytes too
    when the file is small, else read with pread from a descriptor held open (never a memory map:
    a file truncated in place under a running server would fault a map's read, SIGBUS; a short
    pread is an error instead)."""

    def __init__(self, path: Path, rows: int) -> None:
        head = (rows + 1) * 8
        handle = open_regular(path)
        try:
            size = os.fstat(handle.fileno()).st_size
            if size < head:
                raise ValueError("the ids file is shorter than its offsets")
            whole = size <= COPY_BELOW_BYTES  # read whole: a truncation under a running process cannot fault it
            data = handle.read() if whole else handle.read(head)
            if len(data) < (size if whole else head):
                raise ValueError("the ids file was cut while it was read")
        except BaseException:
            handle.close()
            raise
        self._offsets = np.frombuffer(data, dtype="<i8", count=rows + 1)
        self._head = head
        self._bytes: memoryview | None = memoryview(data)[head:] if whole else None
        self._fd = -1
        self._closer: weakref.finalize[Any, Any] | None = None
        if not whole:  # a descriptor of its own, closed with this reader (the generations' cache drops them)
            self._fd = os.dup(handle.fileno())
            self._closer = weakref.finalize(self, os.close, self._fd)
        handle.close()
        if self._offsets[0] != 0 or int(self._offsets[-1]) != size - head \
                or bool((np.diff(self._offsets) < 0).any()):
            self.close()
            raise ValueError("the ids file's offsets do not match its bytes")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, row: int) -> str:
        return self._text(int(self._offsets[row]), int(self._offsets[row + 1]))

    def many(self, rows: np.ndarray) -> list[str]:
        """The ids of several rows, in order (one gather of their offsets, no numpy scalar per row)."""
        return [self._text(a, b) for a, b in zip(self._offsets[rows].tolist(), self._offsets[rows + 1].tolist(),
                                                 strict=True)]

    def _text(self, start: int, end: int) -> str:
        if self._bytes is not None:
            return str(self._bytes[start:end], "utf-8")
        data = os.pread(self._fd, end - start, self._head + start)
        if len(data) != end - start:
            raise ValueError("the ids file was truncated under the index")
        return data.decode("utf-8")

    def close(self) -> None:
        """Let go of the descriptor (a large file's; nothing for a small one)."""
        if self._closer is not None:
            self._closer()


class ChainedRowIds:
    """Row -> record id over the segments' ids files, the rows numbered across them in order."""

    def __init__(self, parts: Sequence[RowIds]) -> None:
        self._parts = list(parts)
        self._starts = np.cumsum([0, *(len(p) for p in self._parts)])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, row: int) -> str:
        part = int(np.searchsorted(self._starts, row, side="right")) - 1
        return self._parts[part][row - int(self._starts[part])]

    def many(self, rows: np.ndarray) -> list[str]:
        """The ids of several rows (int64), in order."""
        if len(self._parts) == 1:
            return self._parts[0].many(rows)
        parts = np.searchsorted(self._starts, rows, side="right") - 1
        out: list[str] = [""] * len(rows)
        for part in np.unique(parts).tolist():
            at = np.flatnonzero(parts == part)
            for i, found in zip(at.tolist(), self._parts[part].many(rows[at] - self._starts[part]), strict=True):
                out[i] = found
        return out
