"""Evidence that reads the passage: term proximity on the fused top N, for tools/study/fusion_study.py
(issue 28, round 4).

The channel runs carry scores only; round 3 found no rule over them that serves both the
one-answer sets (covid-qa, fairytaleqa) and the topical ones (cacm, cfc). Here the product's
fusion is re-scored on its first `top_n` candidates by how close the query's terms sit in
each passage's text, the rest keeping their order below them:

    score(d) = fused(d) / fused(first) + beta * proximity(d)        (`post`)

or, before fusion, BM25's score of a lexical candidate in its first `top_n` multiplied by
(1 + beta * proximity(d)) (`pre`). Terms are the product's own: the record text through
`FtsTerms` (FTS5's porter unicode61 tokens, CJK bigrams, traditional folded to simplified)
and the query through `FtsTerms.query_terms` (stopwords dropped, stemmed, CJK bigrams; each
term once, in query order). Token positions count every word of the passage, stopwords too.

Proximity features (each in [0, 1]; 0 when the query has fewer than two terms, so a
one-term query keeps the fused order):

- `pairs W`: the share of query-adjacent term pairs (q_i, q_i+1) that occur within W
  tokens of each other, in either order (for Chinese, adjacent bigrams at distance 1 are
  the query's characters in sequence: a phrase);
- `phrase`: the same at W = 1, in the query's order (an exact two-term phrase);
- `idfpairs W`: `pairs W` with each pair weighted by the smaller idf of its two terms;
- `mindist`: Tao & Zhai (2007)'s MinDist, log(0.3 + exp(-delta)) scaled to [0, 1], delta
  the smallest distance between two distinct query terms in the passage;
- `tp`: BM25TP's term-pair evidence (Rasolofo & Savoy 2003): for every pair of distinct
  query terms, sum 1 / d^2 over their occurrences within 5 tokens, saturated as s / (1 + s)
  and weighted by the pair's smaller idf, over the query's total.

`family()` is round 4's grid, `round5_family()` round 5's; choose on dev splits only.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

Run = dict[str, Any]
Method = Callable[[Run], list[str]]
_PASSAGES: dict[str, _Passages] = {}
_NEAR: dict[tuple[str, int, str, str], float] = {}


class _Passages:
    """A set's record texts as FTS5 term ids, each record's tokens in order, and its idf."""

    def __init__(self, name: str) -> None:
        import sys
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
        from book_agent_adapters.bench import FtsTerms
        from tools.eval.eval_sets import load_set

        docs = load_set(name).docs
        self.stemmer = FtsTerms()
        flat, sizes = self.stemmer.batch_ids([d["text"] for d in docs])
        ends = np.cumsum(sizes)
        self.tokens = {d["_id"]: flat[end - size:end] for d, end, size in zip(docs, ends, sizes, strict=True)}
        held = np.zeros(len(self.stemmer.terms), np.int64)
        for tokens in self.tokens.values():
            held[np.unique(tokens)] += 1
        self.idf = np.log((len(docs) - held + 0.5) / (held + 0.5)).clip(min=1e-6)
        self._queries: dict[str, list[int]] = {}

    def query(self, text: str) -> list[int]:
        """The query's distinct terms in order, as term ids (-1: not in the set's texts)."""
        found = self._queries.get(text)
        if found is None:
            terms, _ = self.stemmer.query_terms(text)
            found = self._queries[text] = [self.stemmer.ids.get(t, -1) for t in dict.fromkeys(terms)]
        return found


def passages(name: str) -> _Passages:
    if name not in _PASSAGES:
        _PASSAGES[name] = _Passages(name)
    return _PASSAGES[name]


def _nearest(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each position in a, the distance to the nearest position in b (b sorted, not empty)."""
    at = np.searchsorted(b, a)
    right = np.abs(b[np.minimum(at, len(b) - 1)] - a)
    left = np.abs(a - b[np.maximum(at - 1, 0)])
    nearest: np.ndarray = np.minimum(left, right)
    return nearest


def proximity(feature: str, tokens: np.ndarray, query: list[int], idf: np.ndarray, window: int = 3) -> float:
    if len(query) < 2:
        return 0.0
    where = {t: np.flatnonzero(tokens == t) for t in query if t >= 0}
    where = {t: p for t, p in where.items() if len(p)}
    adjacent = list(zip(query, query[1:], strict=False))
    if feature in ("pairs", "phrase", "idfpairs"):
        total = found = 0.0
        for a, b in adjacent:
            weight = float(min(idf[a], idf[b])) if feature == "idfpairs" and a >= 0 and b >= 0 else 1.0
            total += weight
            if a not in where or b not in where:
                continue
            if feature == "phrase":
                hit = bool(np.isin(where[a] + 1, where[b]).any())
            else:
                hit = bool(_nearest(where[a], where[b]).min() <= window)
            found += weight * hit
        return found / total if total else 0.0
    present = sorted(where)
    if feature == "mindist":
        if len(present) < 2:
            return 0.0
        delta = min(int(_nearest(where[a], where[b]).min()) for i, a in enumerate(present) for b in present[i + 1:])
        low, high = math.log(0.3), math.log(1.3)
        return (math.log(0.3 + math.exp(-delta)) - low) / (high - low)
    if feature == "tp":
        distinct = [t for t in dict.fromkeys(query) if t >= 0]
        total = sum(float(min(idf[a], idf[b])) for i, a in enumerate(distinct) for b in distinct[i + 1:])
        got = 0.0
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                d = _nearest(where[a], where[b])
                s = float((1.0 / np.square(d[d <= 5].astype(float))).sum())
                got += float(min(idf[a], idf[b])) * s / (1 + s)
        return got / total if total else 0.0
    raise ValueError(feature)


def _channels(run: Run) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    return [(r, float(x)) for r, x in run["lexical"]], [(r, float(x)) for r, x in run["vector"]]


_TITLES: dict[str, dict[str, str]] = {}


def titles(name: str) -> dict[str, str]:
    """A set's record id -> title: its record's heading in the eval package (eval_sets.py)."""
    if name not in _TITLES:
        from tools.eval.eval_sets import load_set

        _TITLES[name] = {d["_id"]: d["title"] for d in load_set(name).docs}
    return _TITLES[name]


def reranked(feature: str, beta: float, top_n: int, window: int = 3, where: str = "post",
             siblings: bool = False, share: float | None = None, agreement: float | None = None) -> Method:
    """The product's fusion, its first `top_n` re-scored by `feature` (see the module doc).
    `siblings` (round 5): only a hit whose title (its record's heading) another of the first
    `top_n` shares is re-scored, as book_agent/services/search/passage_reading.py does. `share`, `agreement`:
    the fusion's vector share and rank-vote share (default: the product's)."""
    from book_agent.domain.search.fusion import (
        AGREEMENT_SHARE,
        VECTOR_SHARE,
        ScoredChannel,
        fuse_scores,
    )

    share = VECTOR_SHARE if share is None else share
    agreement = AGREEMENT_SHARE if agreement is None else agreement

    def method(run: Run) -> list[str]:
        if "set" not in run:  # a regression book's runs: no texts here, the product's order
            return [h.record_id for h in fuse_scores([ScoredChannel("lexical", _channels(run)[0], 1 - share),
                    ScoredChannel("vector", _channels(run)[1], share * run["gate"])], agreement=agreement)]
        book = passages(run["set"])
        query = book.query(run["query"])

        def near(rid: str) -> float:  # cached: the grid asks each (query, record) many times
            key = (feature, window, run["query"], rid)
            if key not in _NEAR:
                tokens = book.tokens.get(rid)
                _NEAR[key] = 0.0 if tokens is None else proximity(feature, tokens, query, book.idf, window)
            return _NEAR[key]

        lexical, vector = _channels(run)
        if where == "pre":
            head = [(rid, score * (1 + beta * near(rid))) for rid, score in lexical[:top_n]]
            lexical = sorted(head, key=lambda h: -h[1]) + lexical[top_n:]
        fused = fuse_scores([ScoredChannel("lexical", lexical, 1 - share),
                             ScoredChannel("vector", vector, share * run["gate"])], agreement=agreement)
        if where == "pre" or not fused:
            return [h.record_id for h in fused]
        top = fused[0].fused or 1.0
        first = fused[:top_n]
        read = {h.record_id for h in first}
        if siblings:  # a title shared by another of the first: the passages of one document
            title = titles(run["set"])
            shared = Counter(title.get(h.record_id, "") for h in first)
            read = {h.record_id for h in first if title.get(h.record_id, "") and shared[title[h.record_id]] > 1}
        score = {h.record_id: h.fused / top + (beta * near(h.record_id) if h.record_id in read else 0.0)
                 for h in first}
        order = sorted(range(len(first)), key=lambda i: (-score[first[i].record_id], i))
        return [first[i].record_id for i in order] + [h.record_id for h in fused[top_n:]]
    return method


def family() -> dict[str, Method]:
    """Round 4's grid (contracts/fusion.md): the chosen `pairs w8 b0.15 n10` and every constant
    at about +-50%, then the other features."""
    out: dict[str, Method] = {}
    for window in (2, 3, 4, 5, 8, 12):
        for beta in (0.075, 0.15, 0.225):
            for top_n in (5, 10, 20):
                out[f"prox pairs w{window} b{beta} n{top_n}"] = reranked("pairs", beta, top_n, window)
    for window in (2, 3, 8):
        for beta in (0.1, 0.15, 0.2):
            out[f"prox idfpairs w{window} b{beta} n10"] = reranked("idfpairs", beta, 10, window)
    for feature in ("phrase", "mindist", "tp"):
        for beta in (0.05, 0.1, 0.2):
            out[f"prox {feature} b{beta} n10"] = reranked(feature, beta, 10)
    for feature in ("pairs", "tp"):
        for beta in (0.1, 0.2):
            out[f"prox pre {feature} w3 b{beta} n50"] = reranked(feature, beta, 50, 3, "pre")
    return out


def round5_family() -> dict[str, Method]:
    """Round 5's grids (contracts/fusion.md): the re-scoring on every first hit beside the
    fusion's shares (`prox shares`), and on the passages of one document only (`prox sib`)."""
    out: dict[str, Method] = {}
    for share in (0.4, 0.45, 0.5, 0.55, 0.6):
        for agreement in (0.1, 0.15, 0.2, 0.3):
            for window in (2, 3, 5, 8, 12):
                for beta in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3):
                    for top_n in (5, 10, 20):
                        out[f"prox shares a{share} l{agreement} pairs w{window} b{beta} n{top_n}"] = reranked(
                            "pairs", beta, top_n, window, share=share, agreement=agreement)
    for window in (2, 3, 5, 8, 12, 16, 24):
        for beta in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0):
            for top_n in (5, 10, 20):
                out[f"prox sib pairs w{window} b{beta} n{top_n}"] = reranked("pairs", beta, top_n, window, siblings=True)
    return out
