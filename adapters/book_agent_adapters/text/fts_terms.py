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

import itertools
import re
import sqlite3
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from book_agent.domain.search.lexical_text import index_text, is_cjk, query_terms
from book_agent_adapters.text.cjk_fold import fold_chinese
from book_agent_adapters.text.cjk_words import segment_chinese

if TYPE_CHECKING:
    import numpy as np

_WORD = re.compile(r"[^\W_]+")  # unicode61's token characters: letters and digits (L*, N*)
_STEM_BATCH = 5000
QUERY_STEMS_KEPT = 50_000  # query words remembered with their terms (then forgotten at once)


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
        self._word_id: dict[str, int] = {}  # a word's one term
        self._odd: dict[str, tuple[int, ...]] = {}  # words of no term, or of several
        self._query_stems: dict[str, list[str]] = {}  # query words -> their terms (FTS5 asked once)
        self._fts = sqlite3.connect(":memory:", check_same_thread=False)
        self._fts.executescript(
            "CREATE VIRTUAL TABLE w USING fts5(word, tokenize='porter unicode61 remove_diacritics 2');"
            "CREATE VIRTUAL TABLE wv USING fts5vocab(w, 'instance');"
        )

    def batch_ids(self, texts: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """Record texts (as stored in the package) as (term ids of every text, in order; each
        text's count of terms). Per token only C-level work: findall, a dict lookup by map."""
        import numpy as np  # here, not with the module: a passage reader needs no numpy

        words = self._words(texts)
        flat = list(itertools.chain.from_iterable(words))
        if self._odd and not self._odd.keys().isdisjoint(flat):
            per_text = self._odd_ids(words)
            sizes = np.fromiter(map(len, per_text), np.int64, len(per_text))
            return np.fromiter(itertools.chain.from_iterable(per_text), np.int64, int(sizes.sum())), sizes
        sizes = np.fromiter(map(len, words), np.int64, len(words))
        return np.fromiter(map(self._word_id.__getitem__, flat), np.int64, len(flat)), sizes

    def text_ids(self, texts: Iterable[str]) -> list[list[int]]:
        """As batch_ids, each text's term ids as a list (no numpy: a few passages at a time)."""
        words = self._words(texts)
        if self._odd and any(not self._odd.keys().isdisjoint(ws) for ws in words):
            return self._odd_ids(words)
        return [list(map(self._word_id.__getitem__, ws)) for ws in words]

    def _words(self, texts: Iterable[str]) -> list[list[str]]:
        """Each text's words as unicode61 splits them (case-folded), every new word learnt."""
        words = [_WORD.findall(index_text(t, fold_chinese).lower()) for t in texts]
        self._learn(list(itertools.chain.from_iterable(words)))
        return words

    def _odd_ids(self, words: list[list[str]]) -> list[list[int]]:
        """The rare batch holding a word FTS5 splits in several terms or drops."""
        return [[i for w in ws for i in self._odd.get(w, (self._word_id.get(w, -1),))] for ws in words]

    def query_terms(self, query: str) -> tuple[list[str], list[str]]:
        """A query's (terms, prefixes), as FTS5 reads `match_expression(query)`: terms repeat
        as the expression's fragments do.

        Words and CJK bigrams are terms; a one-character CJK query `"c"*` is a prefix (every
        term starting with c). A CJK phrase fragment adds no term: its bigrams are terms already
        (the impact index ranks by terms, not adjacency)."""
        words, prefixes = self._query_words(query)
        stems = self._query_stems
        if len(stems) > QUERY_STEMS_KEPT:
            stems.clear()
        to_stem = [w for w in dict.fromkeys(words) if w not in stems and not _unchanged(w)]
        if to_stem:
            stems.update(zip(to_stem, self._stem(to_stem), strict=True))
        # Repeats stay: FTS5 scores each OR-ed fragment, so a word the query repeats (or two
        # words with one stem, `running runs`) counts once per fragment; the scorer weighs
        # each distinct term by how often it appears here.
        return [t for w in words for t in stems.get(w, [w])], prefixes

    def query_term_ids(self, query: str) -> list[int]:
        """The query's distinct terms, in query order, as term ids: query_terms' terms, each
        word stemmed once and then known (the vocabulary grows by the query's new words)."""
        words, _ = self._query_words(query)
        words = list(dict.fromkeys(words))
        self._learn(words)
        odd, word_id = self._odd, self._word_id
        return list(dict.fromkeys(i for w in words for i in odd.get(w, (word_id.get(w, -1),)) if i >= 0))

    @staticmethod
    def _query_words(query: str) -> tuple[list[str], list[str]]:
        """The words of the query's fragments, as FTS5 splits them, and its one-letter prefixes."""
        words: list[str] = []
        prefixes: list[str] = []
        for fragment in query_terms(query, fold_chinese, segment_chinese):
            if fragment.endswith("*"):
                prefixes.append(fragment[1:-2].replace('""', '"').lower())
            elif " " not in fragment:
                words += _WORD.findall(fragment[1:-1].replace('""', '"').lower())
        return words, prefixes

    def learn(self, terms_of: Mapping[str, str]) -> None:
        """Words whose one FTS5 term is known already (a book's impact file: SQLite's own
        stemming, made when it was built); a word known already keeps its id."""
        known, odd, term_id = self._word_id, self._odd, self._term_id
        for word, term in terms_of.items():
            if word not in known and word not in odd:
                known[word] = term_id(term)

    def _learn(self, words: list[str]) -> None:
        known, odd = self._word_id, self._odd
        new = set(words).difference(known)  # one argument: iterates the smaller of the batch and the vocabulary
        if odd:
            new.difference_update([w for w in new if w in odd])
        plain = sorted(w for w in new if _unchanged(w))
        for word in plain:
            self._word_id[word] = self._term_id(word)
        to_stem = sorted(new.difference(plain))
        for start in range(0, len(to_stem), _STEM_BATCH):
            batch = to_stem[start : start + _STEM_BATCH]
            for word, terms in zip(batch, self._stem(batch), strict=True):
                if len(terms) == 1:
                    self._word_id[word] = self._term_id(terms[0])
                else:
                    self._odd[word] = tuple(self._term_id(t) for t in terms)

    def _term_id(self, term: str) -> int:
        found = self.ids.get(term)
        if found is None:
            found = self.ids[term] = len(self.terms)
            self.terms.append(term)
        return found

    def _stem(self, words: list[str]) -> list[list[str]]:
        """FTS5's terms of each word (usually one; none for a word unicode61 drops).

        An ASCII word of letters and digits is exactly one token, so all of those go in one row
        (the n-th token is the n-th such word): a row per word cost ~3 ms for the ~900 new
        words of a one-shot search's passages, most of a cold search's reading (issue 29). Any
        other word, which FTS5 may split or drop, has a row of its own, as before."""
        plain = [i for i, word in enumerate(words) if word.isascii() and word.isalnum()]
        others = [i for i, word in enumerate(words) if not (word.isascii() and word.isalnum())]
        con = self._fts
        con.execute("DELETE FROM w")
        rows = [(0, " ".join(words[i] for i in plain))] if plain else []
        con.executemany("INSERT INTO w(rowid, word) VALUES (?, ?)",
                        rows + [(row, words[i]) for row, i in enumerate(others, start=1)])
        out: list[list[tuple[int, str]]] = [[] for _ in words]
        for term, doc, offset in con.execute("SELECT term, doc, offset FROM wv"):
            if doc == 0:
                out[plain[offset]].append((0, term))
            else:
                out[others[doc - 1]].append((offset, term))
        return [[found[0][1]] if len(found) == 1 else [t for _, t in sorted(found)] for found in out]

    def close(self) -> None:
        self._fts.close()
