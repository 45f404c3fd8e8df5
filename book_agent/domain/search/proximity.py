"""Reading the passages: which of several passages of one document holds the query's words together.

The vector channel reads what a passage is about. Among passages cut from one document (the
sections of one chapter, the paragraphs of one article) every passage is about the same
thing, so its scores barely tell them apart, and with an equal share it can lift the
document's other passages above the one that answers (issue 28, round 3: 98 of covid-qa's
118 losses to RAGFlow's rule). What tells them apart is whether the query's words stand
together in the passage. So, on the fused ranking's first PROXIMITY_TOP_N hits, a hit that
shares its document with another of them gains

    score(d) = fused(d) / fused(first) + PROXIMITY_WEIGHT * pairs(d)

where `pairs(d)` is the share of the query's adjacent term pairs (q_i, q_i+1, its distinct
terms in query order) found within PROXIMITY_WINDOW tokens of each other in d, in either
order. A hit alone of its document, or without a document (no heading), gains nothing:
between independent documents the vector channel's evidence is the right one, and a bonus
there cost the topical sets (round 4). The hits after the first PROXIMITY_TOP_N keep their
places. A query of fewer than two distinct terms scores 0 everywhere: the fused order.

The constants were chosen on the eval suite's dev splits (contracts/fusion.md, issue 28
round 5, with the sensitivity of each). Pure: terms and positions come from the lexical
side's reading of the texts (ports.storage.PassageTerms), so that a passage is read as BM25
reads it (stems, CJK bigrams).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

PROXIMITY_WINDOW = 12  # tokens: two query terms this close count as standing together
PROXIMITY_WEIGHT = 0.4  # beside the fused score over the best one (1.0 at the top)
PROXIMITY_TOP_N = 20  # hits read: the first two pages of answers, not the long tail

Term = TypeVar("Term", bound=Hashable)


def pair_proximity(query_terms: Sequence[Term], positions: Mapping[Term, Sequence[int]],
                   window: int = PROXIMITY_WINDOW) -> float:
    """The share of the query's adjacent term pairs that stand within `window` tokens of
    each other in the passage, in [0, 1]; 0 for a query of fewer than two distinct terms.
    `positions`: each query term's token positions in the passage, ascending (a term the
    passage lacks is absent or empty). A repeated query term counts once, at its first place."""
    return pair_proximities(query_terms, [positions], window)[0]


def pair_proximities(query_terms: Sequence[Term], passages: Sequence[Mapping[Term, Sequence[int]]],
                     window: int = PROXIMITY_WINDOW) -> list[float]:
    """`pair_proximity` of each passage, the query's pairs made once."""  # the one implementation
    terms = list(dict.fromkeys(query_terms))
    if len(terms) < 2:
        return [0.0] * len(passages)
    pairs = list(zip(terms, terms[1:], strict=False))
    out = []
    for positions in passages:
        found = 0
        for first, second in pairs:
            a = positions.get(first)
            if a:
                b = positions.get(second)
                # the lists' spans more than a window apart: no need to look inside
                if b and a[0] - window <= b[-1] and b[0] - window <= a[-1] and within(a, b, window):
                    found += 1
        out.append(found / len(pairs))
    return out


def within(a: Sequence[int], b: Sequence[int], window: int) -> bool:
    """Whether some x in a and y in b stand at most `window` apart (both ascending, not empty),
    answered at the first such pair, not by their nearest distance (issue 29: a search makes
    about 160 of these checks, and common words stand in many places)."""
    if len(a) > len(b):
        a, b = b, a  # walk the shorter list, search the longer
    at, end = 0, len(b)
    for x in a:
        at = bisect.bisect_left(b, x - window, at, end)  # the first y >= x - window (never left of the last)
        if at == end:
            return False
        if b[at] <= x + window:
            return True
    return False


def with_siblings(documents: Sequence[Hashable | None]) -> list[bool]:
    """For each hit, whether another hit of the list belongs to its document (None: none)."""
    counts = Counter(documents)
    return [document is not None and counts[document] > 1 for document in documents]


def proximity_order(fused: Sequence[float], proximity: Sequence[float],
                    weight: float = PROXIMITY_WEIGHT) -> list[int]:
    """The new order (indices into the inputs) of a fused ranking's first hits: by the fused
    score over the first one's plus `weight` x proximity, ties in their fused order."""
    if not fused:
        return []
    top = fused[0] or 1.0
    lowered = [-(f / top + weight * p) for f, p in zip(fused, proximity, strict=True)]
    return sorted(range(len(lowered)), key=lowered.__getitem__)  # stable: ties keep the fused order
