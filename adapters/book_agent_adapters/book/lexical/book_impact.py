"""One book's lexical channel as numpy work: an impact index read out of its own FTS5 sidecar.

FTS5 computes `bm25(fts, 1.0, 0.4)` in SQLite for every record matching any query term, a
third of a warm one-book search (issue 29). This file holds, per term of the sidecar, the
records holding it and each one's BM25 *document weight*, computed once, in float64, exactly
as FTS5's fts5_aux.c computes it for a row:

    f = 1.0 per body instance, then + 0.4 per heading instance (its xInst order: column 0 first)
    weight = (f * (k1 + 1.0)) / (f + k1 * (1 - b + b * D / avgdl))

with D the row's tokens (its docsize) and avgdl the sidecar's tokens over its rows. A query
adds, phrase by phrase in the order of the MATCH expression, `idf x weight` to each record
holding the phrase's term (idf = log((N - n + 0.5) / (n + 0.5)), floored at 1e-6, by math.log
as SQLite's C does), so every record's score is the very double FTS5 returns, and the hits
come in FTS5's order (score, then rowid: SQLite's sorter keeps a tie in scan order).

The terms are FTS5's own: read from the sidecar (fts5vocab) when it is built, never tokenised
again here; a query's phrases are tokenised by FTS5 too (an in-memory table with the same
tokenizer). A query this cannot answer exactly (a phrase of several tokens, as CJK runs and
`don't` give, a prefix, a phrase of no token) is FTS5's to answer, as is every query while
the file is missing, of another sidecar (inode, size, mtime) or damaged.

The file (`lexical.impact.npz` beside the sidecar) is derived data in the data dir: built with
the sidecar (fts_lexical_index.build_sidecar), or, for a sidecar built before it existed, once
in the background by the first process that searches the book warm (a read-only data dir
keeps FTS5).
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np

from book_agent.domain.search import bm25
from book_agent_adapters.book.lexical.book_impact_files import FILE_NAME as FILE_NAME
from book_agent_adapters.book.lexical.book_impact_files import identity
from book_agent_adapters.book.lexical.book_impact_files import impact_path as impact_path
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.sqlite_readonly import connect_readonly

FORMAT = "book-impact-2"
MIN_IDF = bm25.MIN_IDF  # the search side's floor (book_impact_search.py)
BODY, HEADINGS = 0, 1  # the sidecar's columns (fts_lexical_index.create_index)
_FETCH = 20_000
_STEM_BATCH = 5000
TOKENIZER = "porter unicode61 remove_diacritics 2"  # the sidecar's (fts_lexical_index.create_index)


# -- building -----------------------------------------------------------------------------------

def build_impact(sidecar: Path, target: Path, headings_weight: float, words: Iterable[str] = ()) -> None:
    """Read the sidecar's postings and write the impact file for it, atomically. `words`: the
    book's words (fts_lexical_index.book_words), kept with their FTS5 term so that a query's
    words need no tokenising (words of several tokens or none are left out). Raises
    sqlite3.Error or OSError (the caller keeps FTS5 then)."""
    before = identity(sidecar)
    con = connect_readonly(sidecar, immutable=False)
    try:
        arrays = _postings(con, headings_weight)
    finally:
        con.close()
    if identity(sidecar) != before:
        raise OSError(f"{sidecar} changed while it was read")
    arrays["words"] = _text(_word_terms(sorted(set(words))))
    arrays["meta"] = _text({"format": FORMAT, "sidecar": before, "headings_weight": headings_weight})
    write_atomic(target, lambda out: _write_npz(out, arrays))


def tokenizer() -> sqlite3.Connection:
    """An in-memory FTS5 table with the sidecar's tokenizer: text in, FTS5's terms out."""
    con = sqlite3.connect(":memory:", check_same_thread=False)
    con.executescript(f"CREATE VIRTUAL TABLE p USING fts5(x, tokenize='{TOKENIZER}');"
                      "CREATE VIRTUAL TABLE pv USING fts5vocab(p, 'instance');")
    return con


def tokens_of(con: sqlite3.Connection, texts: list[str]) -> list[list[str]]:
    """Each text's terms, in order, as FTS5 tokenises it (`con` from tokenizer())."""
    con.execute("DELETE FROM p")
    con.executemany("INSERT INTO p(rowid, x) VALUES (?, ?)", enumerate(texts))
    found: list[list[tuple[int, str]]] = [[] for _ in texts]
    for term, doc, offset in con.execute("SELECT term, doc, offset FROM pv"):
        found[doc].append((offset, term))
    return [[term for _, term in sorted(pairs)] for pairs in found]


def _word_terms(words: list[str]) -> dict[str, str]:
    con = tokenizer()
    try:
        out: dict[str, str] = {}
        for start in range(0, len(words), _STEM_BATCH):
            batch = words[start:start + _STEM_BATCH]
            out.update({w: found[0] for w, found in zip(batch, tokens_of(con, batch), strict=True) if len(found) == 1})
        return out
    finally:
        con.close()


def _postings(con: sqlite3.Connection, headings_weight: float) -> dict[str, np.ndarray]:
    lengths, rows = _lengths(con)
    con.execute("CREATE VIRTUAL TABLE temp.book_impact_vocab USING fts5vocab(main, 'fts', 'instance')")
    terms: list[str] = []
    starts: list[int] = []
    docs: list[int] = []
    body: list[int] = []
    heads: list[int] = []
    last_term: str | None = None
    last_doc = -1
    # instances come in (term, doc, column, offset) order: a posting is a run of one (term, doc)
    cursor = con.execute("SELECT term, doc, col FROM temp.book_impact_vocab")
    while chunk := cursor.fetchmany(_FETCH):
        for term, doc, col in chunk:
            if term != last_term:
                terms.append(term)
                starts.append(len(docs))
                last_term, last_doc = term, -1
            if doc != last_doc:
                docs.append(doc)
                body.append(0)
                heads.append(0)
                last_doc = doc
            if col == "body":
                body[-1] += 1
            else:
                heads[-1] += 1
    starts.append(len(docs))
    doc_array = np.asarray(docs, dtype=np.int64)
    if len(doc_array) and (doc_array.min() < 0 or doc_array.max() >= len(lengths)):
        raise sqlite3.DatabaseError("a posting names a row the sidecar does not size")
    total = float(lengths[rows].sum())
    average = total / len(rows) if len(rows) else 1.0
    return {"starts": np.asarray(starts, dtype=np.int64), "docs": doc_array.astype(np.int32),
            "weights": _weights(np.asarray(body, np.int64), np.asarray(heads, np.int64),
                                lengths[doc_array], average, headings_weight),
            "terms": _text(terms), "records": np.asarray([len(rows)], np.int64)}


def _weights(body: np.ndarray, heads: np.ndarray, lengths: np.ndarray, average: float,
             headings_weight: float) -> np.ndarray:
    """Each posting's document weight, the same float64 operations in the same order as fts5_aux.c."""
    freq = body.astype(np.float64)  # 1.0 + 1.0 + ... is exact
    for k in range(int(heads.max()) if len(heads) else 0):  # then the heading instances, one by one
        more = heads > k
        freq[more] = freq[more] + headings_weight
    # BM25 as every local index writes it (domain/search/bm25.py): the same float64 operations
    return bm25.document_weights(freq, bm25.length_norm(lengths, average))


def _lengths(con: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray]:
    """(tokens per rowid, the rowids): FTS5's docsize (xColumnSize(-1): every column's tokens)."""
    sizes: dict[int, int] = {}
    for rowid, blob in con.execute("SELECT id, sz FROM fts_docsize"):
        sizes[int(rowid)] = sum(_varints(bytes(blob)))
    rows = np.asarray(sorted(sizes), dtype=np.int64)
    lengths = np.zeros(int(rows.max()) + 1 if len(rows) else 1, np.int64)
    if len(rows):
        lengths[rows] = [sizes[r] for r in rows.tolist()]
    return lengths, rows


def _varints(data: bytes) -> list[int]:
    """SQLite's big-endian base-128 varints (each column's token count)."""
    out, value = [], 0
    for byte in data:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out


def _text(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def _write_npz(out: IO[bytes], arrays: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
