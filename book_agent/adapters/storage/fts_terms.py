"""Text to FTS5's own terms, in Python, for the library's impact index.

The impact index (impact_index.py) must hold the terms a book's FTS5 sidecar holds, or a
library would rank differently from one book. FTS5's `porter unicode61 remove_diacritics 2`
tokenizer has no Python binding, so this splits text into words the way unicode61 does
(runs of letters and digits, case-folded) and asks FTS5 itself for each *distinct* word's
terms: an in-memory FTS5 table stems a batch of new words, read back through fts5vocab.
Stemming is then exact (it is SQLite's code) and costs only per distinct word, which a
book repeats thousands of times; the per-token work is a regex and a dict lookup.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable

from book_agent.adapters.storage.cjk_fold import fold_chinese
from book_agent.domain.lexical_text import index_text, is_cjk, query_terms

_WORD = re.compile(r"[^\W_]+")  # unicode61's token characters: letters and digits (L*, N*)
_STEM_BATCH = 5000


def _unchanged(word: str) -> bool:
    """A word FTS5 keeps as it is: CJK (no case, no diacritics; the porter stemmer only
    rewrites ASCII letter suffixes) or ASCII digits. Most of a Chinese book's distinct terms
    are bigrams, so this spares stemming nearly all of them."""
    return is_cjk(word) or (word.isascii() and word.isdigit())


class FtsTerms:
    """Maps text to term ids: `ids` grows as new terms appear (`terms[i]` is term i)."""

    def __init__(self) -> None:
        self.terms: list[str] = []
        self.ids: dict[str, int] = {}
        self._word_terms: dict[str, tuple[int, ...]] = {}
        self._fts = sqlite3.connect(":memory:", check_same_thread=False)
        self._fts.executescript(
            "CREATE VIRTUAL TABLE w USING fts5(word, tokenize='porter unicode61 remove_diacritics 2');"
            "CREATE VIRTUAL TABLE wv USING fts5vocab(w, 'instance');"
        )

    def text_ids(self, texts: Iterable[str]) -> list[list[int]]:
        """Each record text (as stored in the package) as its term ids, in order."""
        words = [_WORD.findall(index_text(t, fold_chinese).lower()) for t in texts]
        self._learn(w for ws in words for w in ws)
        known = self._word_terms
        out: list[list[int]] = []
        for ws in words:
            ids: list[int] = []
            for w in ws:
                ids += known[w]
            out.append(ids)
        return out

    def query_terms(self, query: str) -> tuple[list[str], list[str]]:
        """A query's (terms, prefixes), as FTS5 reads `match_expression(query)`.

        Words and CJK bigrams are terms; a one-character CJK query `"c"*` is a prefix (every
        term starting with c). A CJK phrase fragment adds no term: its bigrams are terms already
        (the impact index ranks by terms, not adjacency)."""
        words: list[str] = []
        prefixes: list[str] = []
        for fragment in query_terms(query, fold_chinese):
            if fragment.endswith("*"):
                prefixes.append(fragment[1:-2].replace('""', '"').lower())
            elif " " not in fragment:
                words += _WORD.findall(fragment[1:-1].replace('""', '"').lower())
        words = list(dict.fromkeys(words))
        to_stem = [w for w in words if not _unchanged(w)]
        stemmed = dict(zip(to_stem, self._stem(to_stem) if to_stem else [], strict=True))
        terms = [t for w in words for t in stemmed.get(w, [w])]
        return list(dict.fromkeys(terms)), prefixes

    def _learn(self, words: Iterable[str]) -> None:
        new = list(dict.fromkeys(w for w in words if w not in self._word_terms))
        for word in [w for w in new if _unchanged(w)]:
            self._word_terms[word] = (self._term_id(word),)
        new = [w for w in new if not _unchanged(w)]
        for start in range(0, len(new), _STEM_BATCH):
            batch = new[start : start + _STEM_BATCH]
            for word, terms in zip(batch, self._stem(batch), strict=True):
                self._word_terms[word] = tuple(self._term_id(t) for t in terms)

    def _term_id(self, term: str) -> int:
        found = self.ids.get(term)
        if found is None:
            found = self.ids[term] = len(self.terms)
            self.terms.append(term)
        return found

    def _stem(self, words: list[str]) -> list[list[str]]:
        """FTS5's terms of each word (usually one; none for a word unicode61 drops)."""
        con = self._fts
        con.execute("DELETE FROM w")
        con.executemany("INSERT INTO w(rowid, word) VALUES (?, ?)", enumerate(words))
        out: list[list[tuple[int, str]]] = [[] for _ in words]
        for term, doc, offset in con.execute("SELECT term, doc, offset FROM wv"):
            out[doc].append((offset, term))
        return [[t for _, t in sorted(found)] for found in out]

    def close(self) -> None:
        self._fts.close()
