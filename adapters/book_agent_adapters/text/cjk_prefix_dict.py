"""jieba's prefix dictionary as a file that opens in milliseconds (issue 41, item 4).

jieba segments with a dict of ~600k words and word prefixes to frequencies (`Tokenizer.FREQ`).
Made from its 5 MB word list that costs ~0.6 s, and read back from jieba's own cache (a
marshalled dict) still ~0.7 s: every cold CLI process with a Chinese query paid it. This file
holds the same entries sorted by their UTF-8 bytes (which sort as code points), with their
offsets and frequencies as native uint32 arrays; `PrefixDict` maps it and answers jieba's three
questions (`word in d`, `d[word]`, `d.get(word)`) by binary search, so opening costs a stat and an
mmap, and a query's few hundred lookups cost well under a millisecond. Same entries, same
algorithm (jieba's own code does the cutting): the words are jieba's, exactly
(tests/integration/test_cjk_words.py compares them on the eval sets' questions).

The HMM's probability tables (jieba.finalseg's, for words the dictionary does not know) follow
the arrays, marshalled, read only when a query needs them. Written once per data dir
(atomically: a temp file renamed), rebuilt when jieba's files change (sizes and mtimes in the
header).
"""

from __future__ import annotations

import marshal
import mmap
import os
import struct
import sys
from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAGIC = b"BA-JIEBA-PFX-1\n\0"
_HEADER = struct.Struct("<16s64sQQQQ")  # magic, source key, count, total, blob bytes, HMM bytes


def source_key(jieba_folder: Path) -> bytes:
    """What the table was made from: the size and mtime of jieba's word list and HMM emission
    table (an upgrade or reinstall of jieba changes them), and the byte order of the arrays."""
    parts = [jieba_folder / "dict.txt", jieba_folder / "finalseg" / "prob_emit.py"]
    key = ":".join(f"{s.st_size}.{s.st_mtime_ns}" for s in (p.stat() for p in parts)) + f":{sys.byteorder}"
    return key.encode()[:64].ljust(64, b"\0")


class PrefixDict:
    """A read-only str -> int mapping over a table file (jieba's FREQ, in its sorted form)."""

    def __init__(self, path: Path, expected_key: bytes) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if len(self._map) < _HEADER.size:
            self._map.close()
            raise ValueError(f"{path} is cut short")
        magic, key, count, total, blob, hmm = _HEADER.unpack_from(self._map, 0)
        arrays = 4 * (count + 1) + 4 * count
        if magic != MAGIC or key != expected_key or len(self._map) != _HEADER.size + arrays + blob + hmm:
            self._map.close()
            raise ValueError(f"{path} is not a prefix table for this jieba")
        view = memoryview(self._map)
        start = _HEADER.size
        self._offsets = view[start:start + 4 * (count + 1)].cast("I")
        self._freqs = view[start + 4 * (count + 1):start + arrays].cast("I")
        self._blob_start = start + arrays
        self._hmm_start = start + arrays + blob
        self._count: int = count
        self.total: int = total
        self._seen: dict[str, int | None] = {}  # a query asks about the same fragments twice

    def _lookup(self, word: str) -> int | None:
        if word in self._seen:
            return self._seen[word]
        key = word.encode("utf-8")
        offsets, data, base = self._offsets, self._map, self._blob_start
        lo, hi = 0, self._count
        found: int | None = None
        while lo < hi:
            mid = (lo + hi) // 2
            probe = data[base + offsets[mid]:base + offsets[mid + 1]]
            if probe < key:
                lo = mid + 1
            elif probe > key:
                hi = mid
            else:
                found = self._freqs[mid]
                break
        if len(self._seen) < 100_000:
            self._seen[word] = found
        return found

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._lookup(word) is not None

    def __getitem__(self, word: str) -> int:
        found = self._lookup(word)
        if found is None:
            raise KeyError(word)
        return found

    def get(self, word: str, default: int | None = None) -> int | None:
        found = self._lookup(word)
        return default if found is None else found

    def __len__(self) -> int:
        return self._count

    def hmm_tables(self) -> Any:
        """The HMM's (start, trans, emit) probabilities stored with the table (jieba.finalseg's)."""
        return marshal.loads(self._map[self._hmm_start:])


def write_table(path: Path, freq: Mapping[str, int], total: int, key: bytes, hmm: Any = None) -> None:
    """Write FREQ (and the HMM's tables, marshalled) as a table file at path, atomically (a
    reader sees the old file or the new)."""
    entries = sorted((word.encode("utf-8"), count) for word, count in freq.items())
    offsets, freqs, position = array("I", [0]), array("I"), 0
    for word, count in entries:
        position += len(word)
        offsets.append(position)
        freqs.append(count)
    blob = b"".join(word for word, _ in entries)
    hmm_bytes = marshal.dumps(hmm)
    import tempfile  # only when the table is made

    fd, temp = tempfile.mkstemp(prefix=".prefix-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(_HEADER.pack(MAGIC, key, len(entries), total, len(blob), len(hmm_bytes)))
            out.write(offsets.tobytes())
            out.write(freqs.tobytes())
            out.write(blob)
            out.write(hmm_bytes)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
