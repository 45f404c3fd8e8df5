"""The library's lexical index: every book's postings with library-wide BM25 statistics.

FTS5 computes bm25() for every record matching any query term, so at a million records a
query holding a common word costs a second (contracts/scale-study.md). This index keeps,
per term, its posting list as two arrays: the records holding it and each one's BM25
*document weight* (book_agent/domain/search/bm25.py), computed when the index is built; a query multiplies each
term's weights by the term's idf (from its df, kept beside it) and sums these impacts per
record, taking the top k (impact_top.py: pruned, as MaxScore prunes). Same terms (fts_terms.py asks FTS5 to stem), same
formula, same statistics (document frequency, record count and average length of the whole
library), so it ranks as the book sidecar's `bm25(fts, 1.0, 0.4)` ranks, in milliseconds.

An SQLite file, replaced atomically: `meta` (stamp, record count, average length, the name of
its postings), `ids` (row -> book_id, record_id), `books` (each book's row range), `lengths`
(each record's length, one blob) and `terms` (term, df, first posting); beside it the postings
themselves, all terms' in term order, as two memory-mapped arrays named after the build
(`NAME.docs.npy` int32 rows, `NAME.impacts.npy` float32 document weights): a query reads slices
of them without copying, and millions of terms do not cost millions of blobs.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from book_agent.domain.search.bm25 import document_weights, frequencies, idf, length_norm
from book_agent_adapters.files.safe_files import create_npy
from book_agent_adapters.library.local.lexical.impact_checks import (
    DamagedIndex,
    Postings,
    read_head,
    state_meta,
    store_crcs,
)
from book_agent_adapters.library.local.lexical.impact_top import Part, pruned_top
from book_agent_adapters.library.local.lexical.term_counts import BookTerms

BOUNDS_KEPT = 100_000  # terms whose largest weight a scorer keeps (~10 MB)
FORMAT = "impact-4"  # postings hold document weights (idf applied at query time); another format is stale


def write_index(out: sqlite3.Connection, books: Sequence[tuple[str, BookTerms]], stamp: dict[str, str],
                postings: Path, norm_average: float | None = None) -> int:
    """Merge the books' counts into `out` (an empty database) and the arrays `postings`.docs.npy
    and .impacts.npy (new names: the index in use keeps its own). Returns the record count.
    `norm_average`: the average length the document weights are computed with, when not these
    records' own (a book added to a living generation takes the generation's frozen one)."""
    out.execute("PRAGMA journal_mode=OFF")
    out.execute("PRAGMA synchronous=OFF")
    out.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE ids (rowid INTEGER PRIMARY KEY, book_id TEXT NOT NULL, record_id TEXT NOT NULL);
        CREATE TABLE books (book_id TEXT PRIMARY KEY, first_row INTEGER NOT NULL, row_count INTEGER NOT NULL);
        CREATE TABLE lengths (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
        CREATE TABLE terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL, start INTEGER NOT NULL) WITHOUT ROWID;
        """
    )
    first = 0
    for book_id, counts in books:
        out.executemany("INSERT INTO ids VALUES (?, ?, ?)",
                        ((first + i, book_id, rid) for i, rid in enumerate(counts.record_ids)))
        out.execute("INSERT INTO books VALUES (?, ?, ?)", (book_id, first, len(counts.record_ids)))
        first += len(counts.record_ids)
    lengths = np.concatenate([c.lengths for _, c in books]).astype(np.float64) if books else np.zeros(0)
    average = float(lengths.mean()) if len(lengths) else 0.0
    out.execute("INSERT INTO lengths VALUES (1, ?)", (lengths.astype("<f4").tobytes(),))
    frozen = average if norm_average is None else norm_average
    checked = _write_terms(out, books, length_norm(lengths, frozen), postings)
    meta = {**stamp, **checked, "record_count": str(first), "average_length": repr(average), "format": FORMAT,
            "norm_average": repr(frozen), "postings": postings.name}
    out.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    out.commit()
    return first


def postings_files(postings: Path) -> tuple[Path, Path]:
    return postings.with_name(postings.name + ".docs.npy"), postings.with_name(postings.name + ".impacts.npy")


def _write_terms(out: sqlite3.Connection, books: Sequence[tuple[str, BookTerms]], norm: np.ndarray,
                 postings: Path) -> dict[str, str]:
    """Each term's postings with their BM25 document weights, f (k1 + 1) / (f + norm[doc])
    (book_agent/domain/search/bm25.py): a query multiplies each term's by its idf and sums. Terms are numbered in sorted order, so rows go into the table in key order.

    Each book's postings are scattered straight to their places in the output arrays (memory-
    mapped .npy files, allocated on disk first: a full disk is an OSError, not a SIGBUS): a term's
    block holds each book's run in book order, so its rows stay ascending, and no library-wide
    sort or copy of every posting is ever held in memory. Returns the meta entries of the checks."""
    names = sorted(set().union(*(c.terms for _, c in books))) if books else []
    number = {t: i for i, t in enumerate(names)}
    to_global = [np.fromiter(map(number.__getitem__, c.terms), np.int64, len(c.terms)) for _, c in books]
    df = np.zeros(len(names), np.int64)
    for (_, counts), mapping in zip(books, to_global, strict=True):
        df += np.bincount(mapping[counts.term_ids], minlength=len(names))
    starts = np.zeros(len(names) + 1, np.int64)
    np.cumsum(df, out=starts[1:])
    docs_path, impacts_path = postings_files(postings)
    try:
        docs_out = create_npy(docs_path, "<i4", int(starts[-1]))
        impacts_out = create_npy(impacts_path, "<f4", int(starts[-1]))
    except OSError as exc:  # both arrays must fit, and the head after them
        setattr(exc, "needed_bytes", 8 * int(starts[-1]) + 256)  # noqa: B010
        raise
    next_free = starts[:-1].copy()
    first = 0
    for (_, counts), mapping in zip(books, to_global, strict=True):
        _scatter(counts, mapping, first, next_free, norm, docs_out, impacts_out)
        first += len(counts.record_ids)
    docs_out.flush()
    impacts_out.flush()
    if not np.isfinite(impacts_out).all():
        raise ValueError("a posting's impact is not finite")
    store_crcs(out, {"docs": docs_out, "impacts": impacts_out})
    del docs_out, impacts_out
    out.executemany("INSERT INTO terms VALUES (?, ?, ?)", zip(names, df.tolist(), starts[:-1].tolist(), strict=True))
    return {"postings_count": str(int(starts[-1])), **state_meta({"docs": docs_path, "impacts": impacts_path})}


def _scatter(counts: BookTerms, mapping: np.ndarray, first: int, next_free: np.ndarray,
             norm: np.ndarray, docs_out: np.ndarray, impacts_out: np.ndarray) -> None:
    """One book's postings (sorted by its own term ids) into each term's next free places."""
    if len(counts.term_ids) == 0:
        return
    run_starts = np.flatnonzero(np.r_[True, counts.term_ids[1:] != counts.term_ids[:-1]])
    run_lengths = np.diff(np.r_[run_starts, len(counts.term_ids)])
    terms = mapping[counts.term_ids]
    places = next_free[terms] + (np.arange(len(terms)) - np.repeat(run_starts, run_lengths))
    docs = counts.docs.astype(np.int64) + first
    freqs = counts.freqs.astype(np.float64)
    docs_out[places] = docs
    impacts_out[places] = document_weights(freqs, norm[docs])
    next_free[terms[run_starts]] += run_lengths


class Segment:
    """One head and its postings, open: the base of a generation, or a book added to it since."""

    def __init__(self, con: sqlite3.Connection, folder: Path) -> None:
        """Raises DamagedIndex (impossible values, postings of another size), OSError (postings
        missing: a rebuild removed them) or sqlite3.Error."""
        meta, self.records, lengths, self.ranges = read_head(con)
        self.norm = length_norm(lengths, _norm_average(meta))
        self.postings = Postings(con, folder, meta)
        self.con = con
        self.name = meta["postings"]

    def close(self) -> None:
        self.postings.close()
        self.con.close()

    def terms(self, wanted: Sequence[str]) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(term, docs, document weights) of each wanted term this segment holds."""
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return [(str(t), *self.postings.slice(_count(n), _count(s)))
                for t, n, s in self.con.execute(f"SELECT term, df, start FROM terms WHERE term IN ({marks})",
                                                list(wanted))]

    def prefixed(self, prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """(docs, document weights) of every term starting with `prefix`."""
        return [self.postings.slice(_count(df), _count(start)) for df, start in self.con.execute(
            "SELECT df, start FROM terms WHERE term >= ? AND term < ?", (prefix, prefix + "\U0010ffff"))]

    def ids_of(self, rows: list[int]) -> dict[int, str]:
        if not rows:
            return {}
        found = self.con.execute(
            f"SELECT rowid, book_id, record_id FROM ids WHERE rowid IN ({','.join('?' * len(rows))})", rows).fetchall()
        return {int(r): f"{book}#{rid}" for r, book, rid in found}


class ImpactScorer:
    """Scores queries against one generation: its segments (rows numbered across them, base
    first) minus the rows of books removed since the base was built. Each term's impact is its
    document weight times the idf from the live records and the live records holding it
    (book_agent/domain/search/bm25.py), so a split of the same records scores as one index holding them."""

    def __init__(self, segments: Sequence[Segment], removed: Sequence[str] = (), generation: str = "") -> None:
        self.segments = list(segments)
        self.offsets = np.cumsum([0, *(s.records for s in self.segments)]).tolist()
        self.records = int(self.offsets[-1])
        self.norm = self.segments[0].norm if len(self.segments) == 1 else np.concatenate([s.norm for s in self.segments])
        self.ranges: dict[str, list[tuple[int, int]]] = {}
        gone = set(removed)
        self.live: np.ndarray | None = None  # None: every row is live
        for segment, offset in zip(self.segments, self.offsets, strict=False):
            for book_id, (first, count) in segment.ranges.items():
                if offset == 0 and book_id in gone:  # removed books are the base's (segment 0)
                    if self.live is None:
                        self.live = np.ones(self.records, dtype=bool)
                    self.live[first:first + count] = False
                else:
                    self.ranges.setdefault(book_id, []).append((first + offset, count))
        self.live_records = self.records if self.live is None else int(self.live.sum())
        self.generation = generation or self.segments[0].name.removeprefix("postings-")
        self.identity = ""  # the base head file's (inode, ctime, size), set by who opened it
        self.con = self.segments[0].con
        self._bounds: dict[tuple[int, str], float] = {}  # (segment, term) -> its largest document weight

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def _live(self, docs: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.live is None:
            return docs, weights
        keep = self.live[docs]
        return docs[keep], weights[keep]

    def top(self, terms: list[str], prefixes: list[str], top_k: int,
            book_ids: Sequence[str] | None) -> list[tuple[int, float]]:
        """(row, score) best first; rows of books outside `book_ids` are not returned."""
        if top_k <= 0 or self.live_records == 0:
            return []
        for segment in self.segments:
            segment.postings.notice_changes()
        repeats = Counter(terms)  # FTS5 sums a repeated fragment once per repetition
        by_term: dict[str, list[tuple[np.ndarray, np.ndarray, float]]] = {}
        for number, (segment, offset) in enumerate(zip(self.segments, self.offsets, strict=False)):
            for term, docs, weights in segment.terms(list(repeats)):
                live = self._live(docs + offset if offset else docs, weights)
                by_term.setdefault(term, []).append((*live, self._largest(number, term, weights)))
        parts: list[Part] = []
        bounds: list[float] = []
        for term, found in by_term.items():
            df = sum(len(d) for d, _, _ in found)  # the live records holding it
            times = repeats[term] * float(idf(self.live_records, df))
            parts += [(d, w, times) for d, w, _ in found if len(d)]
            bounds += [largest * times for d, _, largest in found if len(d)]
        for docs, impacts in map(self._prefix, prefixes):
            if len(docs):
                parts.append((docs, impacts, 1.0))  # impacts already: x 1.0 is exact
                bounds.append(float(impacts.max()))
        keep = None if book_ids is None else self._rows_of(book_ids)
        return pruned_top(parts, bounds, top_k, self.records, keep)

    def _largest(self, segment: int, term: str, weights: np.ndarray) -> float:
        """The term's largest document weight in a segment (what bounds its impacts), kept."""
        found = self._bounds.get((segment, term))
        if found is None:
            if len(self._bounds) >= BOUNDS_KEPT:
                self._bounds.clear()
            found = self._bounds[(segment, term)] = float(weights.max()) if len(weights) else 0.0
        return found

    def _prefix(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """One prefix phrase as FTS5 scores it: the counts of every term it starts, summed per
        record, under the idf of the records holding any. Each count is recovered from its
        document weight (the formula inverted with the record's length)."""
        docs_parts, freq_parts = [], []
        for segment, offset in zip(self.segments, self.offsets, strict=False):
            for docs, weights in segment.prefixed(prefix):
                docs, weights = self._live(docs + offset if offset else docs, weights)
                docs_parts.append(docs)
                freq_parts.append(frequencies(weights, self.norm[docs]))
        if not docs_parts:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        docs, inverse = np.unique(np.concatenate(docs_parts), return_inverse=True)
        freqs = np.bincount(inverse, weights=np.concatenate(freq_parts))
        impacts = idf(self.live_records, len(docs)) * document_weights(freqs, self.norm[docs])
        return docs, impacts

    def _rows_of(self, book_ids: Sequence[str]) -> np.ndarray:
        keep = np.zeros(self.records, dtype=bool)
        for book_id in book_ids:
            for first, count in self.ranges.get(book_id, ()):
                keep[first:first + count] = True
        return keep

    def ids_of(self, rows: list[int]) -> dict[int, str]:
        """Each row's evidence id (`book_id#record_id`), from the segment holding it."""
        found: dict[int, str] = {}
        for index, segment in enumerate(self.segments):
            low, high = self.offsets[index], self.offsets[index + 1]
            mine = [r - low for r in rows if low <= r < high]
            found.update({r + low: key for r, key in segment.ids_of(mine).items()})
        return found


def _norm_average(meta: dict[str, str]) -> float:
    """The average length a segment's weights were computed with (its own, or the generation's)."""
    try:
        value = float(meta.get("norm_average", meta["average_length"]))
    except (KeyError, ValueError) as exc:
        raise DamagedIndex("its head has no valid norm_average") from exc
    if not value >= 0 or value == float("inf"):
        raise DamagedIndex(f"its head's norm_average {value} is impossible")
    return value


def _count(value: object) -> int:
    """A count or offset read from the head (an int, unless the head was damaged)."""
    if not isinstance(value, int):
        raise DamagedIndex(f"its head holds {value!r} where a posting count or offset belongs")
    return value
