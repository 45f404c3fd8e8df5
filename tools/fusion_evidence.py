"""Evidence-weighted vector shares for tools/fusion_study.py (issue 28, item 3).

The product's fusion (book_agent.domain.fusion: scores over their best plus rank votes) with a
vector share that follows how strong a channel's evidence is for this query, read from the
channel runs alone (nothing the service would have to fetch again):

- `cosine`: the vector channel's best cosine against the model's typical range: at or below
  `lo` the share is `weak`, at or above `hi` it is `strong`, linear between (a flat, low best
  cosine says the model found nothing it is sure of);
- `margin`: BM25's lead, 1 - second / best score: a lexical winner far ahead lowers the vector
  share from `weak` (no lead) to `strong` (a lead of `hi` or more);
- `attain` (the family of the first round): BM25's best over what the query can attain.

`family()` is the grid the study reports; choose on dev splits only.
"""

from __future__ import annotations

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
    raise ValueError(name)


def weighted(name: str, weak: float, strong: float, lo: float, hi: float,
             agreement: float = 0.1) -> Callable[[Run], list[str]]:
    """The vector share moves from `weak` to `strong` as the feature rises from lo to hi."""
    from book_agent.domain.fusion import VECTOR_SHARE, ScoredChannel, fuse_scores

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
    return out
