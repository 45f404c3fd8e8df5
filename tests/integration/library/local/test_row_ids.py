"""The approximate index's row -> record id files (faiss_index_files.py): one id at a time and
several at once agree, across the base's file and the segments added after it, for ids of any
length and script; real files, written as a build writes them."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from book_agent_adapters.library.local.vectors.faiss_index_files import (
    ChainedRowIds,
    RowIds,
    write_row_ids,
)


def written(path: Path, ids: list[str]) -> RowIds:
    with open(path, "wb") as handle:
        write_row_ids(handle, ids)
    return RowIds(path, len(ids))


def test_several_ids_at_once_are_the_ids_one_at_a_time(tmp_path: Path) -> None:
    base = [f"r{i:05d}" for i in range(300)] + ["", "第一章-段落", "x" * 300]
    added = [f"late-{i}" for i in range(40)]
    chained = ChainedRowIds([written(tmp_path / "base.ids", base), written(tmp_path / "seg.ids", added)])
    everything = base + added
    rng = np.random.default_rng(3)
    for rows in (np.arange(len(everything)), rng.integers(0, len(everything), 100), np.array([302, 0, 303, 301]),
                 np.zeros(0, dtype=np.int64)):
        rows = rows.astype(np.int64)
        assert chained.many(rows) == [chained[int(r)] for r in rows] == [everything[int(r)] for r in rows]


@pytest.mark.parametrize("copy_below", [1 << 30, 0])  # read whole, or read with pread as a large file is
def test_an_ids_file_truncated_under_its_reader_is_an_error_never_a_fault(tmp_path, monkeypatch, copy_below):
    from book_agent_adapters.library.local.vectors import faiss_index_files

    monkeypatch.setattr(faiss_index_files, "COPY_BELOW_BYTES", copy_below)
    ids = [f"book#{i:07d}-第{i}" for i in range(2000)]
    reader = written(tmp_path / "base.ids", ids)
    assert reader.many(np.array([0, 1999])) == [ids[0], ids[1999]]
    os.truncate(tmp_path / "base.ids", (len(ids) + 1) * 8 + 100)  # cut in place, as `cp` over it does first
    if copy_below:
        assert reader.many(np.array([1999])) == [ids[1999]]  # in memory: what it read stays
    else:
        with pytest.raises(ValueError):
            reader.many(np.array([1999]))
    assert reader.many(np.array([0])) == [ids[0]]
