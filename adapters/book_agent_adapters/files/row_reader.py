"""Chosen rows of a memory-mapped matrix, read from its file with pread, never through the map.

Rescoring an approximate index's candidates reads ~100 scattered rows per query. Read through
the map, every row read leaves the pages the kernel maps around it (fault-around: 64 KiB per
fault, MADV_RANDOM or not) in the process's resident set, which grows towards the whole
matrix (at 1M rows: ~750 MB after 50 queries, issue 29). pread copies just the bytes asked for
and maps nothing. A short read means the file was truncated in place: the caller loads the
matrix again (pread cannot fault, so a truncation costs no SIGBUS either).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


class RowReader:
    def __init__(self, fd: int, offset: int, dimensions: int) -> None:
        self._fd = fd
        self._offset = offset
        self._dimensions = dimensions
        self._width = dimensions * 4

    @classmethod
    def of(cls, matrix: Any) -> RowReader | None:
        """A reader of the file `matrix` is mapped from; None for a matrix in memory, a map
        of a file since replaced (pread would read the new one), or a system without preadv."""
        mapped = matrix
        while mapped is not None and not isinstance(mapped, np.memmap):
            mapped = getattr(mapped, "base", None)
        inode = getattr(mapped, "book_agent_inode", None)
        if mapped is None or inode is None or mapped.filename is None or not hasattr(os, "preadv") \
                or mapped.dtype != np.dtype("<f4") or mapped.ndim != 2 or matrix.shape != mapped.shape \
                or not mapped.flags.c_contiguous:
            return None
        try:
            fd = os.open(mapped.filename, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        if os.fstat(fd).st_ino != inode:
            os.close(fd)
            return None
        return cls(fd, int(mapped.offset), int(mapped.shape[1]))

    def read(self, rows: npt.NDArray[np.int64]) -> F32 | None:
        """The rows, in the order given; None when the file is shorter than they need."""
        out = np.empty((len(rows), self._dimensions), dtype=np.float32)
        view = memoryview(out).cast("B")
        width, offset = self._width, self._offset
        for i, row in enumerate(rows.tolist()):
            if os.preadv(self._fd, [view[i * width:(i + 1) * width]], offset + row * width) != width:
                return None
        return out

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
