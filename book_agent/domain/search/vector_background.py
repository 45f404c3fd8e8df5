"""The vector channel's background: what a query's cosine with a record of no relevance looks like.

Every embedding model has its own scale. MiniLM gives an unrelated passage a cosine near 0 and
its best hit ~0.6; multilingual-e5 gives an unrelated passage ~0.78 and its best hit ~0.88 (its
cosines are bunched). A constant floor fits one model and flattens the other, so the floor is
measured instead: the query's cosines with a fixed sample of the book's own records (evenly spaced
in reading order, up to `SAMPLE_ROWS`), their mean and standard deviation. Most records of a book
are not about any one query, so this is the model's background for this query in this book.

The fusion (fusion.py) reads each hit as a z-score against it, z = (score - mean) / sd: the
normalised score is (z + FLOOR_SD) / (z_best + FLOOR_SD), i.e. min-max from the background's low
edge (invariant to any affine change of the model's scale), and the channel's confidence is how
far its best hit stands above the background against how far the best of the book's records
would stand by chance (`z_confidence`): a channel whose best hit sits in the background weighs
~0. The per-query cost is one product of the query with the sample (~0.05 ms), not a scan of the
book.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

# The sample's size, not tuned: the sd of 512 cosines is within ~3% of the book's (its sampling
# error is sd / sqrt(2n)), the mean within 0.05 sd; one product of 512 x 384 costs ~30-70 us a query.
SAMPLE_ROWS = 512
# The floor, in background standard deviations below its mean: BM25's floor, 0, is the score of a
# record sharing no query term, the bottom of its distribution, not a typical record's; the
# cosine's counterpart is the low edge of its background. Chosen on the dev splits of both models
# (MiniLM, multilingual-e5) at equal shares: 2 had the best worst margin against every baseline
# (issue 41; its sensitivity, 0-8, in contracts/fusion.md).
FLOOR_SD = 2.0


class Background(NamedTuple):
    """The query's score against the book's records of no relevance (a sample of them)."""

    mean: float
    sd: float
    records: int  # the records the channel searched: how many draws the best hit beat


@functools.lru_cache(maxsize=256)  # one value a book: ~40 us to solve, a lookup after
def noise_level(records: int) -> float:
    """The z that the best of `records` draws from a normal background reaches half the time
    (the median of their maximum: Phi(z) ** records = 1/2); 0 for a single record. Solved by
    bisection on math.erfc (statistics.NormalDist would import `random` into a cold search)."""
    if records <= 1:
        return 0.0
    target = -math.log(2.0) / records  # log Phi(z) at the median of the maximum
    low, high = 0.0, 40.0
    for _ in range(64):  # to float precision
        middle = (low + high) / 2
        if math.log1p(-0.5 * math.erfc(middle / math.sqrt(2.0))) < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def z_confidence(best: float, background: Background) -> float:
    """How far the best hit stands above the background, as a share of how far the best of the
    book's records would stand by chance: min(1, z_best / noise_level(records)), at least 0.
    A best hit at the background's mean gives 0; one at or beyond the noise's reach gives 1."""
    z = (best - background.mean) / background.sd
    reach = noise_level(background.records)
    if reach <= 0.0:
        return 1.0 if z > 0 else 0.0
    return max(0.0, min(1.0, z / reach))


def vector_scale(best: float | None, background: Background | None) -> tuple[float, float, str]:
    """The vector channel's floor (the score its normalised scores are measured from), its
    confidence (a factor of its share, in [0, 1]) and the reason shown in the result. Without a
    measured background: cosine's theoretical floor, 0, at full confidence (as before issue 41)."""
    if background is None or best is None:
        return 0.0, 1.0, "scores measured from 0 (no background measured)"
    floor = background.mean - FLOOR_SD * background.sd
    sure = z_confidence(best, background)
    z = (best - background.mean) / background.sd
    return floor, sure, (f"background {background.mean:.3f} ± {background.sd:.3f} over {background.records} "
                         f"records; best hit z = {z:.1f} (noise reaches {noise_level(background.records):.1f}): "
                         f"confidence {sure:.2f}")


def pooled(parts: list[Background | None]) -> Background | None:
    """The background of several books searched as one (a library's model group): their means
    and variances pooled by record count, as one book holding them all would measure it. None
    if any part has none (a channel is measured one way for all its hits)."""
    known = [p for p in parts if p is not None]
    if not known or len(known) < len(parts):
        return None
    records = sum(p.records for p in known)
    mean = sum(p.records * p.mean for p in known) / records
    second = sum(p.records * (p.sd * p.sd + p.mean * p.mean) for p in known) / records
    variance = second - mean * mean
    return Background(mean, math.sqrt(variance), records) if variance > 1e-18 else None
