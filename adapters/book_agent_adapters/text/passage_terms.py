"""Passages read into FTS5's own terms, for the search's passage-reading step (book_agent/domain/search/proximity.py).

The terms are the lexical channel's: FtsTerms (fts_terms.py) splits a text as unicode61
does, with CJK bigrams and traditional script folded, and stems each distinct word with
SQLite's own porter stemmer, so a passage is read exactly as BM25 read it (`running` and
`runs` are one term; `高血压` is `高血 血压`).

Reading a passage costs about 50 us of English and 400 us of Chinese, and a search reads up
to 20, so each text's reading (term -> positions) is kept, keyed by the text itself: a
cache that can never answer for another text, whatever book or record it came from. The
cache and FtsTerms' vocabulary are bounded; past a bound they start again (the same answers,
read afresh). One reader serves every book of the process, under a lock (FtsTerms and its
in-memory SQLite are not shared between threads otherwise).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from book_agent.ports import PassageTerms
from book_agent_adapters.text.fts_terms import FtsTerms

Reading = dict[str, tuple[int, ...]]  # a text's terms -> their token positions, ascending

MAX_READINGS = 2048  # texts kept (~6.5 KB each for 650 characters of English: ~13 MB)
MAX_TERMS = 400_000  # vocabulary kept before FtsTerms starts again (~40 MB)
MAX_LEARNT = 60_000  # a book's words learnt at once (a long textbook has 20-40k): ~10 ms, ~6 MB


class FtsPassageTerms(PassageTerms):
    def __init__(self, max_readings: int = MAX_READINGS, max_terms: int = MAX_TERMS) -> None:
        self._lock = threading.Lock()
        self._max_readings = max_readings
        self._max_terms = max_terms
        self._terms_now: FtsTerms | None = None  # opened on first use, again after close()
        self._readings: dict[str, Reading] = {}

    @property
    def _terms(self) -> FtsTerms:
        if self._terms_now is None:
            self._terms_now = FtsTerms()
        return self._terms_now

    def positions(self, query: str, texts: Sequence[str]) -> tuple[list[str], list[Mapping[str, Sequence[int]]]]:
        with self._lock:
            if self._terms_now is not None and len(self._terms_now.terms) > self._max_terms:
                self._start_again()
            terms = self._terms.terms
            query_terms = [terms[i] for i in self._terms.query_term_ids(query)]  # a one-letter CJK prefix: none
            if len(query_terms) < 2:  # no pair of terms to find together: nothing to read
                return query_terms, [{} for _ in texts]
            readings: list[Mapping[str, Sequence[int]]] = list(self._read(texts))
            return query_terms, readings

    def read_ahead(self, texts: Sequence[str]) -> None:
        with self._lock:
            self._read(list(texts)[: self._max_readings // 2])  # room left for the texts of other books

    def learn(self, words: Mapping[str, str]) -> None:
        """Words and their FTS5 terms, as a book's impact file knows them: later readings need
        not stem them. A book of more than MAX_LEARNT words (a synthetic or a vast one), or one
        past the vocabulary's bound, teaches nothing: reading then stems as ever."""
        if len(words) > MAX_LEARNT:
            return
        with self._lock:
            if len(self._terms.terms) + len(words) <= self._max_terms:
                self._terms.learn(words)

    def _read(self, texts: Sequence[str]) -> list[Reading]:
        """Each text's reading, from the cache or read now (kept for the texts to come)."""
        readings = self._readings
        found = {t: readings[t] for t in texts if t in readings}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            terms = self._terms.terms
            for text, ids in zip(missing, self._terms.text_ids(missing), strict=True):
                places: dict[str, list[int]] = {}
                for position, term in enumerate(ids):
                    places.setdefault(terms[term], []).append(position)
                reading: Reading = {term: tuple(at) for term, at in places.items()}  # tuples: a third smaller
                found[text] = reading
                if len(readings) >= self._max_readings:
                    del readings[next(iter(readings))]  # the oldest reading
                readings[text] = reading
        return [found[t] for t in texts]

    def _start_again(self) -> None:
        """A new vocabulary: term ids change, so every reading kept goes too."""
        if self._terms_now is not None:
            self._terms_now.close()
            self._terms_now = None
        self._readings.clear()

    def close(self) -> None:
        """Let go of the vocabulary and the readings; the reader stays usable (it reads afresh)."""
        with self._lock:
            self._start_again()
