"""Evidence-weighted vector shares for tools/study/fusion_study.py (issue 28, item 3).

The product's fusion (book_agent.domain.search.fusion: scores over their best plus rank votes) with a
vector share that follows how strong a channel's evidence is for this query, read from the
channel runs alone (nothing the service would have to fetch again):

- `cosine`: the vector channel's best cosine against the model's typical range: at or below
  `lo` the share is `weak`, at or above `hi` it is `strong`, linear between (a flat, low best
  cosine says the model found nothing it is sure of);
- `margin`: BM25's lead, 1 - second / best score: a lexical winner far ahead lowers the vector
  share from `weak` (no lead) to `strong` (a lead of `hi` or more);
- `attain` (the family of the first round): BM25's best over what the query can attain;
- `zgap` (round 3): how far each channel's best stands out of its own candidates, as a z-score
  (best - mean) / sd over the channel's list, the vector's minus BM25's: scale-free, so no
  model's cosine range is written into it.

Round 3 also measures the normalisation itself (`normalised_fusion`): each channel over its best
(the product), min-max over its candidates (RAGFlow's), or a mix, and where a missing candidate
counts (`fill`: a quantile of the channel's normalised scores instead of its lowest).

`family()` is the grid the study reports; choose on dev splits only.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

Run = dict[str, Any]


def _ramp(value: float, lo: float, hi: float) -> float:
    if hi <= lo:
        return 1.0 if value >= hi else 0.0
    return min(1.0, max(0.0, (value - lo) / (hi - lo)))


def feature(run: Run, name: str) -> float | None:
    lexical, vector = run["lexical"], run["vector"]
    if name == "cosine":
        return float(vector[0][1]) if vector else None
    if name == "margin":
        if len(lexical) < 2 or float(lexical[0][1]) <= 0:
            return None
        return 1.0 - float(lexical[1][1]) / float(lexical[0][1])
    if name == "attain":
        attainable = run.get("attainable")
        return min(1.0, float(lexical[0][1]) / attainable) if lexical and attainable else None
    if name == "zgap":
        return (_standout(vector) - _standout(lexical)) if len(vector) > 1 and len(lexical) > 1 else None
    raise ValueError(name)


def _standout(pairs: list[list[Any]]) -> float:
    values = [float(score) for _, score in pairs]
    return (values[0] - statistics.fmean(values)) / (statistics.pstdev(values) or 1.0)


def _scaled(pairs: list[list[Any]], how: str, fill: float) -> tuple[dict[str, float], float]:
    """A channel's scores over its best ("best") or min-max over its candidates ("pool"), and
    the value a candidate it did not return gets: the `fill` quantile of its scaled scores."""
    values = [float(score) for _, score in pairs]
    top, low = max(values), min(values)
    floor = low if how == "pool" else 0.0
    span = (top - floor) or 1.0
    scaled = {rid: (float(score) - floor) / span for rid, score in pairs}
    ordered = sorted(scaled.values())
    return scaled, ordered[int(fill * (len(ordered) - 1))]


def normalised_fusion(lexical_how: str, vector_how: str, share: float, agreement: float = 0.1,
                      fill: float = 0.0, k: int = 60) -> Callable[[Run], list[str]]:
    """The product's scores-and-votes fusion with another normalisation per channel (round 3)."""
    def method(run: Run) -> list[str]:
        weights = {"lexical": 1 - share, "vector": share * run["gate"]}
        fused: dict[str, float] = {}
        best: dict[str, int] = {}
        for channel in ("lexical", "vector"):
            for rank, (rid, _) in enumerate(run[channel], start=1):
                best[rid] = min(best.get(rid, rank), rank)
        for channel, how in (("lexical", lexical_how), ("vector", vector_how)):
            if not run[channel] or weights[channel] == 0:
                continue
            scaled, missing = _scaled(run[channel], how, fill)
            ranks = {rid: rank for rank, (rid, _) in reversed(list(enumerate(run[channel], start=1)))}
            for rid in best:
                vote = (k + 1) / (k + ranks[rid]) if rid in ranks else 0.0
                fused[rid] = fused.get(rid, 0.0) + weights[channel] * (
                    (1 - agreement) * scaled.get(rid, missing) + agreement * vote)
        if not fused:  # gate shut and no lexical hit: the vector channel's own order
            return [rid for rid, _ in run["vector"]]
        counted = sorted(fused, key=lambda r: (-fused[r], best[r], r))
        return counted + [rid for rid, _ in run["vector"] if rid not in fused]
    return method


def weighted(name: str, weak: float, strong: float, lo: float, hi: float,
             agreement: float = 0.1) -> Callable[[Run], list[str]]:
    """The vector share moves from `weak` to `strong` as the feature rises from lo to hi."""
    from book_agent.domain.search.fusion import VECTOR_SHARE, ScoredChannel, fuse_scores

    def method(run: Run) -> list[str]:
        value = feature(run, name)
        share = VECTOR_SHARE if value is None else weak + (strong - weak) * _ramp(value, lo, hi)
        lexical = [(r, float(x)) for r, x in run["lexical"]]
        vector = [(r, float(x)) for r, x in run["vector"]]
        return [h.record_id for h in fuse_scores([ScoredChannel("lexical", lexical, 1 - share),
                                                  ScoredChannel("vector", vector, share * run["gate"])],
                                                 agreement=agreement)]
    return method


def family() -> dict[str, Callable[[Run], list[str]]]:
    out: dict[str, Callable[[Run], list[str]]] = {}
    for lo, hi in ((0.3, 0.6), (0.4, 0.7), (0.5, 0.8), (0.4, 0.6), (0.5, 0.7)):
        for weak, strong in ((0.3, 0.5), (0.3, 0.6), (0.2, 0.5), (0.4, 0.5), (0.4, 0.6), (0.35, 0.55)):
            out[f"cosine {lo}-{hi} share {weak}-{strong}"] = weighted("cosine", weak, strong, lo, hi)
    for hi in (0.2, 0.4, 0.6):
        for weak, strong in ((0.5, 0.3), (0.5, 0.4), (0.6, 0.4), (0.55, 0.35)):
            out[f"margin 0-{hi} share {weak}-{strong}"] = weighted("margin", weak, strong, 0.0, hi)
    for share in (0.35, 0.4, 0.45):
        out[f"fixed share {share}"] = weighted("cosine", share, share, 0.0, 1.0)
    # round 3: the z-score gap, the normalisation, the fill
    for lo, hi in ((-3, 0), (-2, 0), (-1.5, 0), (-2, 1), (-1, 1)):
        for weak, strong in ((0.3, 0.5), (0.35, 0.55), (0.3, 0.6), (0.4, 0.6)):
            out[f"zgap {lo}..{hi} share {weak}-{strong}"] = weighted("zgap", weak, strong, lo, hi)
    for lexical_how, vector_how in (("pool", "pool"), ("best", "pool"), ("pool", "best")):
        for share in (0.2, 0.3, 0.4, 0.5):
            out[f"norm {lexical_how}/{vector_how} share {share}"] = normalised_fusion(lexical_how, vector_how, share)
    for fill in (0.1, 0.25, 0.5):
        out[f"norm best/best fill q{fill}"] = normalised_fusion("best", "best", 0.5, fill=fill)
    return out
