"""The integrity of the library's lexical index: a damaged file is refused, never searched.

Recorded at build time, in the head's `meta` and `checks` tables:

- the postings' length and each array's file state (size, mtime, inode, ctime: a write in place
  changes the ctime, which no user can set back);
- a CRC-32 of every block of BLOCK postings of each array.

Checked when opened (`open_postings`, milliseconds at a million records): the head's values are
possible (counts, ranges, names, lengths: `DamagedIndex` otherwise, never a KeyError or a
MemoryError), both arrays are regular files of the recorded dtype and length; `check_files`
adds the file states and, when one differs (the file was written since, or copied), verifies
every block. A query verifies the blocks it reads, once per process (`Postings.slice`): an array
edited in place (NaN, shuffled) fails the query with a coded error instead of answering.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import re
import sqlite3
import zlib
from pathlib import Path
from typing import IO

import numpy as np

from book_agent_adapters.files.safe_files import map_open_npy, open_regular, require_regular

BLOCK = 1 << 16  # postings per checked block (256 KiB of each array)
MAX_RECORDS = 2**31 - 1  # rows are int32
POSTINGS_NAME = re.compile(r"postings-[0-9a-f]{12}")
ARRAYS = (("docs", "<i4"), ("impacts", "<f4"))
VERIFIED_SUFFIX = ".verified"  # beside a head: "these postings file states were verified block by block"


class DamagedIndex(ValueError):
    """The index on disk is not the one that was built (damaged, truncated, edited)."""


def block_crcs(values: np.ndarray) -> bytes:
    """CRC-32 of each BLOCK-item block of a 1-d array, as little-endian uint32 bytes."""
    view = memoryview(np.ascontiguousarray(values)).cast("B")
    size = BLOCK * values.dtype.itemsize
    return np.array([zlib.crc32(view[at:at + size]) for at in range(0, len(view), size)], "<u4").tobytes()


def file_state(path: Path) -> str:
    return _state(require_regular(path))


def _state(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}"


def store_crcs(out: sqlite3.Connection, arrays: dict[str, np.ndarray]) -> None:
    """Each array's block CRCs, into the head's `checks` table."""
    out.execute("CREATE TABLE checks (name TEXT PRIMARY KEY, crc BLOB NOT NULL)")
    out.executemany("INSERT INTO checks VALUES (?, ?)", [(name, block_crcs(a)) for name, a in arrays.items()])


def state_meta(files: dict[str, Path]) -> dict[str, str]:
    """The meta entries recording the block size and the arrays' file states (taken once their
    maps are closed: a page written through a map updates the times when it is first dirtied)."""
    return {"block": str(BLOCK), **{f"{name}_state": file_state(path) for name, path in files.items()}}


def _int(meta: dict[str, str], key: str, low: int, high: int) -> int:
    try:
        value = int(meta[key])
    except (KeyError, ValueError) as exc:
        raise DamagedIndex(f"its head has no valid {key}") from exc
    if not low <= value <= high:
        raise DamagedIndex(f"its head's {key} {value} is impossible")
    return value


def _mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The mmap an array read from a file is a view of (None: in memory, or no MADV_DONTNEED)."""
    base: object = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "_mmap", None) or getattr(base, "base", None)
    return base if isinstance(base, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") else None


class Postings:
    """The two mapped arrays of an index, their blocks verified as they are first read."""

    def __init__(self, con: sqlite3.Connection, folder: Path, meta: dict[str, str]) -> None:
        self.count = _int(meta, "postings_count", 0, 2**40)
        self.block = _int(meta, "block", 1, 2**40)
        name = meta.get("postings", "")
        if not POSTINGS_NAME.fullmatch(name):
            raise DamagedIndex("its head names no postings files")
        self.paths = {kind: folder / f"{name}.{kind}.npy" for kind, _ in ARRAYS}
        blocks = -(-self.count // self.block)
        crcs = dict(con.execute("SELECT name, crc FROM checks").fetchall())
        self.crcs: dict[str, np.ndarray] = {}
        for kind, _ in ARRAYS:
            blob = crcs.get(kind)
            if not isinstance(blob, bytes) or len(blob) != 4 * blocks:
                raise DamagedIndex(f"its head's checks of the {kind} are missing or malformed")
            self.crcs[kind] = np.frombuffer(blob, "<u4")
        self.states = {kind: meta.get(f"{kind}_state") for kind, _ in ARRAYS}
        self.handles: dict[str, IO[bytes]] = {}  # kept open: their fstat sees any write to what was mapped, whatever its path now
        try:
            for kind, _ in ARRAYS:
                self.handles[kind] = open_regular(self.paths[kind])
            self.arrays = {kind: map_open_npy(self.handles[kind], self.paths[kind], dtype, self.count)
                           for kind, dtype in ARRAYS}
            self.maps = [m for m in map(_mapping_of, self.arrays.values()) if m is not None]
        except ValueError as exc:
            self.close()
            raise DamagedIndex(f"its postings are damaged ({exc})") from exc
        except BaseException:
            self.close()
            raise
        self.verified = np.zeros(blocks, dtype=bool)
        self.seen = self._states_now()
        self.sizes = {kind: state.split(":")[0] for kind, state in self.seen.items()}

    def _states_now(self) -> dict[str, str]:
        return {kind: _state(os.fstat(handle.fileno())) for kind, handle in self.handles.items()}

    def changed_files(self) -> list[str]:
        """The arrays whose file state differs from the one recorded (written or copied since)."""
        return [kind for kind, state in self.seen.items() if state != self.states[kind]]

    def notice_changes(self) -> None:
        """Blocks verified before a file was written again are verified again as read (a server
        keeps its maps open for days; two fstat calls per query)."""
        now = self._states_now()
        if now != self.seen:
            self.verified[:] = False
            self.seen = now
            if any(now[kind].split(":")[0] != self.sizes[kind] for kind in now):  # reading past its end: SIGBUS
                raise DamagedIndex("its postings were truncated or grown while open")

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()
        self.handles = {}

    def verify(self, first: int, last: int) -> None:
        """Check blocks first..last-1 of both arrays against their CRCs (each once)."""
        for block in np.flatnonzero(~self.verified[first:last]) + first:
            for kind, _ in ARRAYS:
                values = self.arrays[kind][block * self.block:(block + 1) * self.block]
                if zlib.crc32(memoryview(np.ascontiguousarray(values)).cast("B")) != int(self.crcs[kind][block]):
                    raise DamagedIndex(f"its {kind} postings were changed since it was built (block {block})")
            self.verified[block] = True

    def release(self) -> None:
        """Let go of the pages queries read through the maps (MADV_DONTNEED: the kernel keeps
        them cached, the next read maps them again in a minor fault). A map's pages stay in the
        process's resident set until then: ~120 MB after 50 queries at 1M records, towards
        every posting (330 MB) in a long-running server (issue 29)."""
        for mapped in self.maps:
            with contextlib.suppress(OSError, ValueError):  # a closed map, or no madvise here
                mapped.madvise(mmap.MADV_DONTNEED)

    def verify_all(self) -> None:
        self.verify(0, len(self.verified))

    def slice(self, df: int, start: int) -> tuple[np.ndarray, np.ndarray]:
        """One term's postings (docs, impacts), verified."""
        if df < 1 or start < 0 or start + df > self.count:
            raise DamagedIndex(f"its head's term range {start}+{df} is outside its {self.count} postings")
        self.verify(start // self.block, (start + df - 1) // self.block + 1)
        return self.arrays["docs"][start:start + df], self.arrays["impacts"][start:start + df]


def read_head(con: sqlite3.Connection, light: bool = False
              ) -> tuple[dict[str, str], int, np.ndarray, dict[str, tuple[int, int]]]:
    """(meta, record count, lengths, book ranges) of a head whose values are all possible.
    `light` (a state check): the lengths' size only, not their values (an empty array returned)."""
    meta = {str(k): str(v) for k, v in con.execute("SELECT key, value FROM meta")}
    records = _int(meta, "record_count", 0, MAX_RECORDS)
    try:
        average = float(meta["average_length"])
    except (KeyError, ValueError) as exc:
        raise DamagedIndex("its head has no valid average_length") from exc
    if not math.isfinite(average) or average < 0:
        raise DamagedIndex(f"its head's average_length {average} is impossible")
    lengths = _lengths(con, records, average, light)
    (low,) = con.execute("SELECT min(rowid) FROM ids").fetchone()  # one aggregate each: two index lookups
    (high,) = con.execute("SELECT max(rowid) FROM ids").fetchone()
    if (low, high) != ((0, records - 1) if records else (None, None)):
        raise DamagedIndex("its head's record ids do not match its record count")
    return meta, records, lengths, _book_ranges(con, records)


def _lengths(con: sqlite3.Connection, records: int, average: float, light: bool) -> np.ndarray:
    if light:
        row = con.execute("SELECT length(data), typeof(data) FROM lengths WHERE id = 1").fetchone()
        if row is None or row[1] != "blob" or row[0] != 4 * records:
            raise DamagedIndex("its head's record lengths do not match its record count")
        return np.zeros(0)
    row = con.execute("SELECT data FROM lengths WHERE id = 1").fetchone()
    if row is None or not isinstance(row[0], bytes) or len(row[0]) != 4 * records:
        raise DamagedIndex("its head's record lengths do not match its record count")
    lengths = np.frombuffer(row[0], dtype="<f4").astype(np.float64)
    if records and (not np.isfinite(lengths).all() or abs(float(lengths.mean()) - average) > 1e-6 * max(1, average)):
        raise DamagedIndex("its head's record lengths are not those it was built with")
    return lengths


def _book_ranges(con: sqlite3.Connection, records: int) -> dict[str, tuple[int, int]]:
    ranges: dict[str, tuple[int, int]] = {}
    at = 0
    for book, first, count in con.execute("SELECT book_id, first_row, row_count FROM books ORDER BY first_row"):
        if not isinstance(first, int) or not isinstance(count, int) or first != at or count < 0:
            raise DamagedIndex("its head's book ranges overlap or leave gaps")
        ranges[str(book)] = (first, count)
        at += count
    if at != records:
        raise DamagedIndex("its head's book ranges do not cover its records")
    return ranges
