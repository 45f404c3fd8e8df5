"""The living approximate index: books added to the trained IVF index, books removed as a filter,
and how far that has drifted from a retrain (faiss_vector_index.py commits what this plans).

- **An added book** (or a replaced one's new version) is encoded with the base's trained, empty
  index (its centroids and 8-bit quantizer: faiss_training.py) into a *segment* of its own, the
  rows numbered after the last segment's. A build adding several books writes one segment.
  Costs about the book: its rows read, assigned to their lists, written (no k-means, and no
  byte of the base read or written).
- **A removed book** (or a replaced one's old version) is a filter: its rows stay in their
  segment, marked removed in the pointer, and no search selects them (faiss's bitmap selector),
  so it takes effect at the cost of the pointer. A segment whose books are all removed is
  dropped with them.
- **Drift** (`drift_of`, the port's `state().drift`), the larger of two measured ratios:
  *churn*, the rows added or removed since training over the rows trained on (the lists were
  sized ~2*sqrt(N) for N rows, and dead rows are still scanned), and *fit*, how much further the
  added rows sit from their nearest centroid than the trained rows do (mean squared residual,
  relative). Past 0.2 (services/library_vector_retrain.py, RETRAIN_DRIFT) the centroids no longer
  describe the data well enough: `prepare` (or a server in the background) retrains (`compact`,
  the full build, which is also what `prepare @all --full` runs). A build
  never retrains an index that fits by itself: scores are exact whatever the centroids, only
  which rows are candidates depends on them (measured in contracts/library.md).
- A build rebuilds in full instead when there is no sound index to extend, the group's model,
  dimensions or metric differ, none of its books is left, or MAX_SEGMENTS segments exist.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.errors import BookAgentError
from book_agent.ports import Progress, VectorStore
from book_agent_adapters.book.runtime_files import build_lock
from book_agent_adapters.book.vectors.vector_matrix import VectorMatrix
from book_agent_adapters.library.local.vectors.faiss_index_files import book_stamps, segment_files
from book_agent_adapters.library.local.vectors.faiss_training import (
    books_residual,
    fill,
    read_index,
)

MAX_SEGMENTS = 16  # added segments before a build retrains (each costs a coarse search per query)


@dataclass(frozen=True)
class Extension:
    """What a living build changes: the pointer's books and segments after it, the books to add."""

    books: list[dict[str, Any]]  # every row range in row order, removals marked
    segments: list[dict[str, Any]]  # the added segments kept (a segment whose books all left is dropped)
    new: list[str]  # the books to encode into a new segment, in id order
    changed: int  # rows removed by this build (its added rows are counted once written)


def planned(pointer: dict[str, Any], expected: Mapping[str, str], stores: Mapping[str, VectorStore]
            ) -> Extension | None:
    """How to bring `pointer`'s generation to `stores` without retraining (None: a full build is due)."""
    if any(pointer["stamp"].get(k) != v for k, v in expected.items() if k != "books"):
        return None  # another model, dimensions or metric
    wanted = book_stamps(dict(expected))
    held: set[str] = set()
    changed = 0
    books = []
    for entry in pointer["books"]:
        entry = dict(entry)
        if not entry.get("removed"):
            if entry["book_id"] in stores and wanted.get(entry["book_id"], "") == entry["stamp"] \
                    and entry["book_id"] not in held:
                held.add(entry["book_id"])
            else:
                entry["removed"] = True
                changed += int(entry["rows"])
        books.append(entry)
    new = sorted(b for b in stores if b not in held)
    if not held:
        return None  # nothing of the trained index left to extend
    books, segments = _without_dead_segments(pointer, books)
    if new and len(segments) >= MAX_SEGMENTS:
        return None
    return Extension(books, segments, new, changed)


def _without_dead_segments(pointer: dict[str, Any], books: list[dict[str, Any]]
                           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Drop the added segments whose books are all removed (their rows, and the rows' numbers)."""
    segments = segment_files(pointer)
    ends = np.cumsum([int(s["rows"]) for s in segments])
    kept_books: list[dict[str, Any]] = []
    kept_segments: list[dict[str, Any]] = []
    at, cursor = 0, 0
    for number, segment in enumerate(segments):
        mine = []
        while cursor < len(books) and at < ends[number]:
            mine.append(books[cursor])
            at += int(books[cursor]["rows"])
            cursor += 1
        if number == 0 or not all(b.get("removed") for b in mine):
            kept_books += mine
            if number > 0:
                kept_segments.append({k: v for k, v in segment.items()})
    return kept_books, kept_segments


def encode_segment(faiss: Any, trained_path: Path, books: list[tuple[str, VectorMatrix]],
                   progress: Progress | None) -> tuple[Any, float]:
    """The new books' rows encoded with the base's trained index; and their mean residual."""
    index = read_index(faiss, trained_path)
    total = sum(len(m.ids) for _, m in books)
    if progress:
        progress(0, total)
    fill(index, books, progress, total=total)
    return index, books_residual(index, books)


def live_rows(pointer: Mapping[str, Any]) -> int:
    return sum(int(b["rows"]) for b in pointer["books"] if not b.get("removed"))


def generation_of(pointer: Mapping[str, Any]) -> str:
    """`<base>` for a full build, `<base>.<n>` after n living builds (as the lexical index names them)."""
    base = str(pointer["files"]["index"]["name"]).removesuffix(".faiss")[-12:]
    sequence = int(pointer.get("sequence") or 0)
    return f"{base}.{sequence}" if sequence else base


def drift_of(pointer: Mapping[str, Any]) -> float:
    """max(churn, fit): see the module docstring. 0 right after a full build."""
    trained = max(1, int(pointer.get("base_rows") or 0))
    churn = int(pointer.get("changed") or 0) / trained
    segments = list(pointer.get("segments") or [])
    rows = sum(int(s["rows"]) for s in segments)
    base = float(pointer.get("residual") or 0.0)
    fit = 0.0
    if rows and base > 0:
        added = sum(int(s["rows"]) * float(s.get("residual") or 0.0) for s in segments) / rows
        fit = max(0.0, added / base - 1.0)
    return max(churn, fit)


@contextlib.contextmanager
def vector_lock(library_dir: Path, wait: bool) -> Iterator[None]:
    """The library's build lock (writers serialised across processes); with `wait` False, held by
    another writer: `vector.index_busy` at once."""
    try:
        with build_lock(library_dir, wait=wait):
            yield
    except BookAgentError as exc:
        if exc.code != "lexical.build_busy":
            raise
        raise BookAgentError("vector.index_busy", f"another process is writing the library's vector indexes "
                             f"({library_dir})", details=exc.details,
                             remediation="nothing to do: searches serve the generation in place (and search "
                                         "the books it lacks exactly) until the writer is done") from exc
