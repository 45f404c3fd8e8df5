"""Searching one book's impact file (book_impact.py builds it and says why it scores as FTS5).

`WarmImpact` is what the book's FtsLexicalIndex asks: from a process's second search on (a
one-shot process never pays the load), the impact file of this very sidecar, loaded and checked,
or, when there is none, built once in the background (FTS5 answering meanwhile; a data dir where
it cannot be written keeps FTS5).
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from book_agent_adapters.book.lexical.book_impact_files import impact_path
from book_agent_adapters.files.safe_files import open_regular

if TYPE_CHECKING:
    import numpy as np

    from book_agent_adapters.book.made_in_background import MadeInBackground

# numpy and book_impact (which imports it) are imported where a file is loaded, searched or
# built, not with this module: every command imports the lexical index, and a process's first
# search (a one-shot's only one) is FTS5's, so it must not pay numpy's import (~50 ms).

_STEMS_KEPT = 20_000  # query phrases remembered with their term


@dataclass
class BookImpact:
    """The loaded file, ready to add up: term -> the bounds of its postings; each posting's row
    and share (idf x weight: a book's idf never changes, so the very product FTS5 adds is made
    once, at load); rowid -> record id."""

    terms: dict[str, tuple[int, int]]
    docs: np.ndarray
    shares: np.ndarray
    record_ids: list[str | None]
    words: dict[str, str]  # the book's words -> their FTS5 term

    def top(self, phrases: list[str], top_k: int) -> tuple[list[str], list[float]]:
        """(record ids, their scores) best first for phrases of one term each, as FTS5 ranks them."""
        import numpy as np

        found = [bounds for bounds in map(self.terms.get, phrases) if bounds is not None]
        if not found or top_k <= 0:
            return [], []
        # every record's sum, added in the expression's order (FTS5's): bincount adds its weights
        # in input order, from 0.0, the very additions the terms' postings made one by one
        if len(found) == 1:
            (first, end), = found
            docs, shares = self.docs[first:end], self.shares[first:end]
        else:
            docs = np.concatenate([self.docs[first:end] for first, end in found])
            shares = np.concatenate([self.shares[first:end] for first, end in found])
        totals = np.bincount(docs, shares, minlength=len(self.record_ids))
        rows = totals.nonzero()[0]
        scores = totals[rows]
        if len(rows) > top_k:  # every row as good as the k-th: a tie at the cut goes by rowid too
            kth = scores.copy()
            kth.partition(len(rows) - top_k)
            kept = scores >= kth[len(rows) - top_k]
            rows, scores = rows[kept], scores[kept]
        order = np.lexsort((rows, -scores))[:top_k]
        # a row with a score holds a record (only records' rows have postings): never None
        ids = cast(list[str], self.record_ids)
        return list(map(ids.__getitem__, rows[order].tolist())), scores[order].tolist()


def impact_shares(starts: np.ndarray, weights: np.ndarray, records: int) -> np.ndarray:
    """Each posting's idf x weight, its term's idf = log((N - n + 0.5) / (n + 0.5)) floored at
    MIN_IDF, by math.log as SQLite's C computes it: one float64 multiplication a posting, the
    one FTS5 makes per query."""
    import numpy as np

    from book_agent_adapters.book.lexical.book_impact import MIN_IDF

    counts = np.diff(starts)
    idfs = [math.log((records - n + 0.5) / (n + 0.5)) for n in counts.tolist()]
    shares: np.ndarray = np.repeat(np.array([idf if idf > 0.0 else MIN_IDF for idf in idfs], dtype=np.float64),
                                   counts) * weights
    return shares


def _one_quoted(fragment: str) -> bool:
    """One FTS5 string, `"..."` with its inner quotes doubled (not a prefix `"c"*`)."""
    return len(fragment) >= 2 and fragment[0] == '"' and fragment[-1] == '"' \
        and '"' not in fragment[1:-1].replace('""', "")


def load_impact(path: Path, sidecar_identity: list[int], con: sqlite3.Connection,
                headings_weight: float) -> BookImpact | None:
    """The impact file of this very sidecar, checked; None when missing, of another sidecar or
    damaged (the search is then FTS5's)."""
    import zipfile

    import numpy as np

    from book_agent_adapters.book.lexical.book_impact_words import made_for, words_of

    try:
        with open_regular(path) as handle, np.load(handle, allow_pickle=False) as data:
            if not made_for(data, sidecar_identity, headings_weight):
                return None
            starts, docs, weights = data["starts"], data["docs"], data["weights"]
            terms = json.loads(data["terms"].tobytes().decode("utf-8"))
            records = int(data["records"][0])
            words = words_of(data)
    except (OSError, KeyError, ValueError, EOFError, IndexError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
    record_ids: list[str | None] = []
    for rowid, record_id in con.execute("SELECT rowid, record_id FROM ids ORDER BY rowid"):
        record_ids.extend([None] * (int(rowid) - len(record_ids)))
        record_ids.append(str(record_id))
    if not _sound(starts, docs, weights, terms, len(record_ids)) or words is None:
        return None
    bounds = starts.tolist()
    return BookImpact({str(t): (bounds[i], bounds[i + 1]) for i, t in enumerate(terms)}, docs,
                      impact_shares(starts, weights, records), record_ids, words)


def _sound(starts: np.ndarray, docs: np.ndarray, weights: np.ndarray, terms: object, rows: int) -> bool:
    """Shapes, dtypes and ranges as built: a damaged file never reaches a search."""
    import numpy as np

    if not isinstance(terms, list) or starts.dtype != np.int64 or docs.dtype != np.int32 \
            or weights.dtype != np.float64 or len(starts) != len(terms) + 1 or len(docs) != len(weights):
        return False
    if len(starts) and (starts[0] != 0 or starts[-1] != len(docs) or (np.diff(starts) <= 0).any()):
        return False
    return not len(docs) or bool(docs.min() >= 0 and docs.max() < rows and np.isfinite(weights).all()
                                 and (weights > 0).all())


class PhraseTerms:
    """MATCH fragments (`"word"`) -> each one's FTS5 term, or None for a fragment FTS5 reads as
    another phrase than one token (a prefix, several tokens, none). The book's own words come
    with the impact file (`seed`); others are tokenised by FTS5 itself, a query's new fragments
    in one batch (0.1-0.2 ms), and remembered."""

    def __init__(self) -> None:
        self._seeded: dict[str, str] = {}
        self._known: dict[str, str | None] = {}
        self._con: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def seed(self, words: dict[str, str]) -> None:
        """Words tokenised when the file was built (one term each; never a quote in them)."""
        self._seeded = {f'"{word}"': term for word, term in words.items()}

    def terms(self, fragments: list[str]) -> list[str | None]:
        seeded, known = self._seeded, self._known
        new = [f for f in dict.fromkeys(fragments) if f not in seeded and f not in known]
        if new:
            from book_agent_adapters.book.lexical.book_impact import tokenizer, tokens_of

            with self._lock:
                quoted = [f for f in new if _one_quoted(f)]
                if quoted and self._con is None:
                    self._con = tokenizer()
                tokens = tokens_of(self._con, [f[1:-1].replace('""', '"') for f in quoted]) if self._con and quoted \
                    else []
                if len(known) + len(new) > _STEMS_KEPT:
                    known.clear()
                known.update(dict.fromkeys(new))  # None unless quoted and of one token
                for fragment, found in zip(quoted, tokens, strict=True):
                    if len(found) == 1:
                        known[fragment] = found[0]
        return [seeded[f] if f in seeded else known.get(f) for f in fragments]

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


class WarmImpact:
    """One sidecar's impact file for its FtsLexicalIndex: `top` answers a query exactly as FTS5
    would, or None (then FTS5 answers)."""

    def __init__(self, sidecar: Path, headings_weight: float,
                 on_words: Callable[[Mapping[str, str]], None] | None = None) -> None:
        self.sidecar = sidecar
        self.headings_weight = headings_weight
        self.on_words = on_words  # told the book's words when the file loads
        self.phrases = PhraseTerms()
        self.state = "unread"  # unread | loaded | building | none
        self._impact: BookImpact | None = None
        self._searches = 0
        self._lock = threading.Lock()
        self._build: MadeInBackground[bool] | None = None  # the file's build, when one was needed

    def top(self, fragments: list[str], top_k: int, identity: list[int] | None,
            con: Callable[[], sqlite3.Connection]) -> tuple[list[str], list[float]] | None:
        """(record ids, their scores) best first; None when this query or this moment is FTS5's.
        `identity`: the sidecar's as its connection opened it (None: it changed meanwhile)."""
        impact = self._ready(identity, con)
        if impact is None:
            return None
        phrases = self.phrases.terms(fragments)
        if None in phrases:
            return None
        return impact.top([p for p in phrases if p is not None], top_k)

    def warm_up(self, identity: list[int] | None, con: Callable[[], sqlite3.Connection]) -> None:
        """This process will search again: load the file now (or start its build), not at the
        next search."""
        self._searches = max(self._searches, 1)
        self._ready(identity, con)

    def _ready(self, identity: list[int] | None, con: Callable[[], sqlite3.Connection]) -> BookImpact | None:
        if self.state == "loaded":
            return self._impact
        self._searches += 1
        if self._searches < 2 or self.state in ("building", "none"):
            return None
        with self._lock:
            if self.state == "unread":
                self._load_or_build(identity, con)
        return self._impact

    def _load_or_build(self, identity: list[int] | None, con: Callable[[], sqlite3.Connection]) -> None:
        if identity is None:
            self.state = "none"
            return
        try:
            self._impact = load_impact(impact_path(self.sidecar), identity, con(), self.headings_weight)
        except sqlite3.Error:
            self._impact = None
        if self._impact is not None:
            self.phrases.seed(self._impact.words)
            if self.on_words is not None:
                self.on_words(self._impact.words)
            self.state = "loaded"
            return
        from book_agent_adapters.book.made_in_background import (
            MadeInBackground,  # a warm process's only
        )

        self.state = "building"
        self._build = MadeInBackground("book-impact", self._build_and_reread)
        self._build.value()

    def _build_and_reread(self) -> bool | None:
        """Builds the file; the next search loads it ("unread"), or stays with FTS5 ("none")."""
        built = build_quietly(self.sidecar, impact_path(self.sidecar), self.headings_weight)
        with self._lock:
            self.state = "unread" if built else "none"
        return built or None

    def close(self) -> None:
        self.phrases.close()
        self._impact = None
        self.state = "unread"


def build_quietly(sidecar: Path, target: Path, headings_weight: float, words: Iterable[str] = ()) -> bool:
    """The sidecar's impact file; a failure only leaves its searches to FTS5."""
    from book_agent_adapters.book.lexical.book_impact import build_impact

    try:
        build_impact(sidecar, target, headings_weight, words)
    except (sqlite3.Error, OSError, ValueError, MemoryError):
        return False
    return True
