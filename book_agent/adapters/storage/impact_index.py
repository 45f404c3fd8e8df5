"""The library's lexical index: every book's postings with library-wide BM25 statistics.

FTS5 computes bm25() for every record matching any query term, so at a million records a
query holding a common word costs a second (contracts/scale-study.md). This index keeps,
per term, its posting list (records and weighted counts) as two arrays, and scores a query
with numpy: for each of its terms, FTS5's own formula over that term's postings, summed per
record, then the top k. Same terms (fts_terms.py asks FTS5 to stem), same formula, same
statistics (document frequency, record count and average length of the whole library), so
it ranks as the book sidecar's `bm25(fts, 1.0, 0.4)` ranks, in milliseconds.

One SQLite file, replaced atomically: `meta` (stamp, record count, average length), `ids`
(row -> book_id, record_id), `books` (each book's row range), `lengths` (each record's
length, one blob) and `terms` (term, df, docs blob int32, freqs blob float32).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from book_agent.adapters.storage.term_counts import BookTerms

K1 = 1.2  # FTS5's bm25() constants (sqlite/ext/fts5/fts5_aux.c)
B = 0.75
MIN_IDF = 1e-6  # FTS5 floors a non-positive idf (a term in over half the records) here
INSERT_BATCH = 5000


def write_index(out: sqlite3.Connection, books: Sequence[tuple[str, BookTerms]], stamp: dict[str, str],
                progress: Callable[[str], None] | None = None) -> int:
    """Merge the books' counts into `out` (an empty database). Returns the record count."""
    out.execute("PRAGMA journal_mode=OFF")
    out.execute("PRAGMA synchronous=OFF")
    out.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE ids (rowid INTEGER PRIMARY KEY, book_id TEXT NOT NULL, record_id TEXT NOT NULL);
        CREATE TABLE books (book_id TEXT PRIMARY KEY, first_row INTEGER NOT NULL, row_count INTEGER NOT NULL);
        CREATE TABLE lengths (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
        CREATE TABLE terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL, docs BLOB NOT NULL, freqs BLOB NOT NULL);
        """
    )
    first = 0
    for book_id, counts in books:
        out.executemany("INSERT INTO ids VALUES (?, ?, ?)",
                        ((first + i, book_id, rid) for i, rid in enumerate(counts.record_ids)))
        out.execute("INSERT INTO books VALUES (?, ?, ?)", (book_id, first, len(counts.record_ids)))
        first += len(counts.record_ids)
    if progress:
        progress("merging the books' postings")
    lengths = np.concatenate([c.lengths for _, c in books]).astype(np.float32) if books else np.zeros(0, np.float32)
    out.execute("INSERT INTO lengths VALUES (1, ?)", (lengths.tobytes(),))
    _write_terms(out, books)
    average = float(lengths.mean()) if len(lengths) else 0.0
    meta = {**stamp, "record_count": str(first), "average_length": repr(average), "format": "impact-1"}
    out.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    out.commit()
    return first


def _write_terms(out: sqlite3.Connection, books: Sequence[tuple[str, BookTerms]]) -> None:
    vocabulary: dict[str, int] = {}
    term_parts, doc_parts, freq_parts = [], [], []
    first = 0
    for _, counts in books:
        to_global = np.fromiter((vocabulary.setdefault(t, len(vocabulary)) for t in counts.terms), np.int32,
                                len(counts.terms))
        term_parts.append(to_global[counts.term_ids])
        doc_parts.append(counts.docs + np.int32(first))
        freq_parts.append(counts.freqs)
        first += len(counts.record_ids)
    if not vocabulary:
        return
    terms = np.concatenate(term_parts)
    order = np.argsort(terms, kind="stable")  # books in row order, so each term's docs stay ascending
    terms = terms[order]
    docs = np.concatenate(doc_parts)[order].astype("<i4")
    freqs = np.concatenate(freq_parts)[order].astype("<f4")
    del order
    bounds = np.searchsorted(terms, np.arange(len(vocabulary) + 1), side="left")
    names = list(vocabulary)
    rows = ((names[t], int(bounds[t + 1] - bounds[t]), docs[bounds[t]:bounds[t + 1]].tobytes(),
             freqs[bounds[t]:bounds[t + 1]].tobytes()) for t in range(len(vocabulary)))
    out.executemany("INSERT INTO terms VALUES (?, ?, ?, ?)", rows)


class ImpactScorer:
    """Scores queries against an open index: FTS5's bm25() over the query terms' postings."""

    def __init__(self, con: sqlite3.Connection) -> None:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        self.records = int(meta["record_count"])
        average = float(meta["average_length"]) or 1.0
        (blob,) = con.execute("SELECT data FROM lengths WHERE id = 1").fetchone()
        lengths = np.frombuffer(blob, dtype="<f4").astype(np.float64)
        # the length part of BM25's denominator, per record: k1 * (1 - b + b * D / avgdl)
        self.norm = K1 * (1 - B + B * lengths / average)
        self.ranges = {str(b): (int(f), int(n)) for b, f, n in con.execute("SELECT * FROM books")}
        self.con = con

    def top(self, terms: list[str], prefixes: list[str], top_k: int,
            book_ids: Sequence[str] | None) -> list[tuple[int, float]]:
        """(row, score) best first; rows of books outside `book_ids` are not returned."""
        postings = [self._postings("term = ?", (t,)) for t in terms]
        postings += [self._postings("term >= ? AND term < ?", (p, p + "\U0010ffff")) for p in prefixes]
        postings = [p for p in postings if len(p[0])]
        if not postings or top_k <= 0 or self.records == 0:
            return []
        docs = np.concatenate([d for d, _ in postings])
        scores = np.concatenate([self._bm25(d, f) for d, f in postings])
        if book_ids is not None:
            keep = self._rows_of(book_ids)[docs]
            docs, scores = docs[keep], scores[keep]
        totals = np.bincount(docs, weights=scores, minlength=self.records)
        hits = np.flatnonzero(totals)
        if len(hits) > top_k:
            hits = hits[np.argpartition(-totals[hits], top_k - 1)[:top_k]]
        hits = hits[np.lexsort((hits, -totals[hits]))]
        return [(int(row), float(totals[row])) for row in hits]

    def _postings(self, where: str, args: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """A term's (docs, freqs); a prefix sums the freqs of every term it starts, per record,
        as FTS5 counts one prefix phrase."""
        rows = self.con.execute(f"SELECT docs, freqs FROM terms WHERE {where}", args).fetchall()
        if len(rows) == 1:
            return np.frombuffer(rows[0][0], "<i4"), np.frombuffer(rows[0][1], "<f4")
        if not rows:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        docs = np.concatenate([np.frombuffer(d, "<i4") for d, _ in rows])
        freqs = np.concatenate([np.frombuffer(f, "<f4") for _, f in rows])
        unique, inverse = np.unique(docs, return_inverse=True)
        return unique.astype(np.int32), np.bincount(inverse, weights=freqs).astype(np.float32)

    def _bm25(self, docs: np.ndarray, freqs: np.ndarray) -> np.ndarray:
        hits = len(docs)
        idf = max(float(np.log((self.records - hits + 0.5) / (hits + 0.5))), 0.0) or MIN_IDF
        f = freqs.astype(np.float64)
        return idf * (f * (K1 + 1)) / (f + self.norm[docs])

    def _rows_of(self, book_ids: Sequence[str]) -> np.ndarray:
        keep = np.zeros(self.records, dtype=bool)
        for book_id in book_ids:
            first, count = self.ranges.get(book_id, (0, 0))
            keep[first:first + count] = True
        return keep
