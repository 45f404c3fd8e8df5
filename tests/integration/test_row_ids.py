"""The approximate index's row -> record id files (faiss_index_files.py): one id at a time and
several at once agree, across the base's file and the segments added after it, for ids of any
length and script; real files, written as a build writes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

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
