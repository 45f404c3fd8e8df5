"""The top k of a query over the library's impact index (impact_index.py), without adding up every posting.

A query's score of a record is the sum, over the query's parts (a term's postings in one
segment, or a prefix's), of the part's impact for that record: its document weight times the
part's factor (idf x the term's repeats). `full_top` is the definition: every posting added up
per record (one bincount over the library's rows), the records that scored, best first, ties by
row. At a million records a query holding a common word adds up hundreds of thousands of
postings to keep ten or fifty (issue 29).

`pruned_top` gives exactly the same rows and score bits by reading most postings only where
they count (MaxScore, as tantivy and Lucene prune): a part can add at most its largest document
weight times its factor (its *bound*). The rows of the shortest parts are scored exactly first;
the k-th best of them is a floor `theta` the answer's k-th score cannot be under. Parts whose
bounds, summed (with a margin for float rounding), stay under theta are *non-essential*: a
record found in none of the other parts cannot reach theta, so the candidates are the records
of the essential parts (and the seed), and each is scored exactly by looking it up in every part
(searchsorted in the long ones). Every candidate's total is added in the parts' order from 0.0,
the very float64 additions bincount makes, so scores are bit for bit the full pass's; the
records left out all score under theta, so the first k by (score, row) are the same. When the
candidates would be a large share of the rows (every part essential), the full pass is cheaper
and is made instead.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

# a part: the rows holding it (ascending, each once), their document weights, the factor
# applied at query time (impact = float64(weight) * factor)
Part = tuple[npt.NDArray[np.integer], npt.NDArray[np.floating], float]

ROUNDING = 1e-9  # relative margin on a sum of bounds: float64 sums of a few positive terms are far closer
LOOKUP = 6  # a row's lookup in a part (searchsorted) costs about as much as adding up this many postings
MARK_SHARE = 32  # rows to merge past records / MARK_SHARE: marked among all rows rather than sorted


def full_top(parts: list[Part], top_k: int, records: int, keep: np.ndarray | None) -> list[tuple[int, float]]:
    """Every posting added up: (row, score) of the best `top_k` rows that scored, best first,
    ties by row; rows where `keep` is False are left out."""
    docs = np.concatenate([d for d, _, _ in parts])
    impacts = np.concatenate([np.asarray(w, dtype=np.float64) * factor for _, w, factor in parts])
    if keep is not None:
        kept = keep[docs]
        docs, impacts = docs[kept], impacts[kept]
    totals = np.bincount(docs, weights=impacts, minlength=records)
    # Only the rows that can make the top k are ranked (a partition over all rows degenerates on
    # the many equal zeros, 60 ms at 1M rows): those as good as a floor the k-th best reaches.
    hits = np.flatnonzero(totals >= _floor(parts, totals, top_k, keep))
    return _best(hits, totals[hits], top_k)


def _floor(parts: list[Part], totals: np.ndarray, top_k: int, keep: np.ndarray | None) -> float:
    """A score at least `top_k` rows reach (so the k-th best does): the least total of the rows
    weighing most in the part of the largest factor (a rare word's); else the least positive score."""
    docs, weights, _ = max(parts, key=lambda part: part[2])
    if keep is not None:
        kept = keep[docs]
        docs, weights = docs[kept], weights[kept]
    if len(docs) < top_k:
        return float(np.nextafter(0.0, 1.0))
    return float(totals[docs[np.argpartition(-weights, top_k - 1)[:top_k]]].min())


def pruned_top(parts: list[Part], bounds: list[float], top_k: int, records: int,
               keep: np.ndarray | None) -> list[tuple[int, float]]:
    """full_top's answer, from the records of the parts that can matter (see the module
    docstring); `bounds[i]`: no impact of part i is larger (its largest weight times its factor)."""
    if top_k <= 0 or not parts:
        return []
    if len(parts) == 1:  # one part: its impacts are the totals (0.0 + x is x)
        docs, weights, factor = parts[0]
        kept = np.ones(len(docs), dtype=bool) if keep is None else keep[docs]
        return _best(docs[kept], np.asarray(weights[kept], dtype=np.float64) * factor, top_k)
    rows = candidates(parts, bounds, top_k, records, keep)
    if rows is None:
        return full_top(parts, top_k, records, keep)
    return _best(rows, _totals(parts, rows), top_k)


def candidates(parts: list[Part], bounds: list[float], top_k: int, records: int,
               keep: np.ndarray | None) -> np.ndarray | None:
    """The rows the top k is among (ascending, kept): the seed's and the essential parts';
    None when adding up every posting is cheaper."""
    # a row looked up costs about LOOKUP postings added up; the full pass also scans every row once
    full_cost = sum(len(d) for d, _, _ in parts) + records // 4
    seed = _seed(parts, top_k, records, keep)
    if len(seed) < top_k or len(seed) * (len(parts) - 1) * LOOKUP > full_cost:
        return None
    floor = -float(np.partition(-_totals(parts, seed), top_k - 1)[top_k - 1])
    spare, room = [], 0.0
    for i in sorted(range(len(parts)), key=bounds.__getitem__):
        if (room + bounds[i]) * (1 + ROUNDING) >= floor:
            break
        room += bounds[i]
        spare.append(i)
    essential = [d for i, (d, _, _) in enumerate(parts) if i not in spare]
    if sum(map(len, essential)) * (len(parts) - 1) * LOOKUP > full_cost:
        return None
    return _union([seed, *(_kept(d, keep) for d in essential)], records)


def _seed(parts: list[Part], top_k: int, records: int, keep: np.ndarray | None) -> np.ndarray:
    """The rows of the shortest parts, until they hold `top_k` (all the parts' when they never do)."""
    taken: list[np.ndarray] = []
    count = 0
    for i in sorted(range(len(parts)), key=lambda i: len(parts[i][0])):
        taken.append(_kept(parts[i][0], keep))
        count += len(taken[-1])
        if count >= top_k:
            seed = _union(taken, records)
            if len(seed) >= top_k:
                return seed
            count = len(seed)
    return _union(taken, records)


def _kept(docs: np.ndarray, keep: np.ndarray | None) -> np.ndarray:
    return docs if keep is None else docs[keep[docs]]


def _union(arrays: list[np.ndarray], records: int) -> np.ndarray:
    """The distinct rows of `arrays`, ascending: by one sort, or, for many rows, by marking them
    among the library's (np.unique's hashing is slower than both here)."""
    if len(arrays) == 1:
        return arrays[0]
    if not arrays:
        return np.zeros(0, np.int32)
    if sum(map(len, arrays)) * MARK_SHARE > records:
        marked = np.zeros(records, dtype=bool)
        for rows in arrays:
            marked[rows] = True
        return np.flatnonzero(marked)
    rows = np.concatenate(arrays)
    rows.sort()
    return rows[np.r_[True, rows[1:] != rows[:-1]]] if len(rows) else rows


def _totals(parts: list[Part], rows: np.ndarray) -> np.ndarray:
    """Each row's score (rows ascending, distinct): its parts' impacts added in the parts' order
    from 0.0, as bincount adds them."""
    totals = np.zeros(len(rows), dtype=np.float64)
    for docs, weights, factor in parts:
        if len(docs) <= len(rows):  # the part's postings looked up among the rows
            at = np.searchsorted(rows, docs)
            found = at < len(rows)
            found[found] = rows[at[found]] == docs[found]
            totals[at[found]] += np.asarray(weights[found], dtype=np.float64) * factor
        else:  # the rows looked up in the part's postings
            at = np.searchsorted(docs, rows.astype(docs.dtype, copy=False))  # no copy of the long postings
            found = at < len(docs)
            found[found] = docs[at[found]] == rows[found]
            totals[found] += np.asarray(weights[at[found]], dtype=np.float64) * factor
    return totals


def _best(rows: np.ndarray, scores: np.ndarray, top_k: int) -> list[tuple[int, float]]:
    """The first `top_k` of `rows` (ascending) by score, then row: a tie at the cut goes to the
    lowest rows (a common word's records of one length tie by the thousand: never sorted whole)."""
    if len(rows) > top_k:
        cut = -np.partition(-scores, top_k - 1)[top_k - 1]  # a small kth: numpy's quick select
        above = scores > cut
        tied = np.flatnonzero(scores == cut)[:top_k - int(above.sum())]
        chosen = np.concatenate([np.flatnonzero(above), tied])
        rows, scores = rows[chosen], scores[chosen]
    order = np.lexsort((rows, -scores))[:top_k]
    return list(zip(rows[order].tolist(), scores[order].tolist(), strict=True))
