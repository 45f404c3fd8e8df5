"""Fusing the lexical and vector channels into one ranking.

The method (chosen on the eval suite's dev splits, see contracts/fusion.md): per channel c
of share w_c, its normalised score beside its rank vote,

    fused(d) = sum_c w_c * ((1 - AGREEMENT_SHARE) * score_c(d) / max score_c
                            + AGREEMENT_SHARE * (AGREEMENT_K + 1) / (AGREEMENT_K + rank_c(d)))

where each channel's score is divided by its best score for this query (BM25 and cosine
both have 0 as "no relevance", so this is min-max with the theoretical minimum), a
candidate a channel did not return counts at that channel's lowest returned score and has
no vote there (w_lexical = 1 - VECTOR_SHARE, w_vector = VECTOR_SHARE x the gate). Scores,
unlike ranks, say how far ahead a channel's winner is: a BM25 winner far above the rest
keeps the lead, a flat vector ranking moves little. Plain reciprocal rank fusion treats a
weak channel's ranks like a strong one's; on the dev splits it lost to BM25 alone.

A channel that cannot be trusted for this query (an English-only model asked in Chinese,
see book_agent/domain/search/vector_trust.py) gets weight 0: it orders nothing the other channel found, and only its
own extra hits follow, in its order (recall when the lexical channel comes up short).

Invariants (property-tested): the result is a permutation of the union of the inputs; ties
are broken stably (best single-channel rank, then first appearance); raising a candidate's
score in one channel never lowers it in the fused ranking. `fuse` (plain RRF) is kept as
the baseline the eval reports beside ours.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import NamedTuple

# Chosen on dev: nDCG@10 was flat (within 0.001) from 0.3 to 0.5 and fell off above 0.6;
# 0.5 (equal shares) is the end of the plateau that also served books where the vector
# channel is the stronger one. Sensitivity table in contracts/fusion.md. (Issue 28: a share
# that follows BM25's evidence for the query did not win on the dev splits; fusion.md.)
VECTOR_SHARE = 0.5
# Agreement between the channels (issue 28): each channel's rank vote, (k + 1) / (k + rank),
# beside its normalised score. A record both channels return gains over one that only one
# returns even where the scores are flat (RRF's strength), while the scores still say how
# far a winner is ahead. Chosen on the dev splits (0.1: the best mean of the settings that
# beat every baseline on every dev set); sensitivity in contracts/fusion.md.
AGREEMENT_SHARE = 0.1
AGREEMENT_K = 60  # RRF's customary k: a vote falls slowly with rank
TIE_TOLERANCE = 1e-6  # relative: scores this close vote alike (float32 carries ~6e-8)
PLAIN_RRF_K = 60  # the customary RRF constant (Cormack et al. 2009): the baseline we must beat
# RAGFlow's hybrid rule, the second baseline: 0.7 keyword + 0.3 vector over each channel's
# min-max scores (a candidate a channel did not return scores 0 there)
RAGFLOW_KEYWORD_SHARE = 0.7

# The channels' inputs are NamedTuples, immutable as frozen dataclasses were: every search defines
# them, and a frozen dataclass takes ~0.4 ms to define, a NamedTuple ~0.08 (issue 29, cold start)


class ChannelRanking(NamedTuple):
    """One channel's record ids, best first, for plain reciprocal rank fusion."""

    name: str
    record_ids: list[str]  # best first, no duplicates
    weight: float = 1.0


@dataclass(slots=True)
class FusedHit:
    """A record in the fused ranking: its fused score and its 1-based rank in each channel that returned it."""

    record_id: str
    fused: float
    ranks: dict[str, int] = field(default_factory=dict)  # channel -> 1-based rank


def fuse(rankings: list[ChannelRanking], k: int = PLAIN_RRF_K) -> list[FusedHit]:
    """Weighted reciprocal rank fusion (the baseline). A channel of weight 0 scores
    nothing: its own hits come last, in its order."""
    hits: dict[str, FusedHit] = {}
    first_seen: dict[str, int] = {}
    for ranking in rankings:
        for position, record_id in enumerate(ranking.record_ids, start=1):
            hit = _hit(hits, first_seen, record_id)
            if ranking.name in hit.ranks:
                continue  # a duplicate inside one channel counts once, at its best rank
            hit.ranks[ranking.name] = position
            hit.fused += ranking.weight / (k + position)
    return _ordered(hits, first_seen)


class ScoredChannel(NamedTuple):
    """One channel's (record id, score) pairs, best first, with its share of the fusion."""

    name: str
    hits: list[tuple[str, float]]  # (record_id, score), best first; higher is better
    weight: float = 1.0
    floor: float = 0.0  # the score of no relevance (0 for BM25 and for cosine)


def normalised(hits: list[tuple[str, float]], floor: float = 0.0) -> dict[str, float]:
    """Each score over the best one, measured from the floor: the best is 1.0."""
    if not hits:
        return {}
    scores = [score for _, score in hits]
    top = max(scores)
    if top <= floor:  # every score at or below "no relevance": fall back to the observed range
        floor = min(scores)
    span = (top - floor) or 1.0
    out: dict[str, float] = {}
    for record_id, score in hits:
        out.setdefault(record_id, (score - floor) / span)
    return out


def fuse_scores(channels: list[ScoredChannel], agreement: float = AGREEMENT_SHARE,
                limit: int | None = None) -> list[FusedHit]:
    """Per channel, (1 - agreement) x its normalised score + agreement x its rank vote, summed
    over the channels by their weights (the shares); see the module doc. Ordered as `_ordered`
    orders. `limit`: only the best so many (the first of the full order: a search shows its top k).
    Each channel has a name of its own (a hit's ranks are keyed by it)."""
    if len({c.name for c in channels}) < len(channels):
        raise ValueError("each fused channel needs a name of its own")
    # Issue 29: this function was a fifth of a search. Each weighted channel's share of each of
    # its hits, and the one share of any hit it did not return (its score taken as the channel's
    # lowest, no vote), are added channel by channel in the channels' order: the same doubles as
    # adding them hit by hit. `ahead`: what a hit new in a channel has summed before it.
    totals: dict[str, float] = {}
    best: dict[str, int] = {}  # the best rank in a weighted channel
    firsts: list[dict[str, int] | None] = []  # each channel's first position of each hit (None: not needed yet)
    ahead = 0.0
    for channel in channels:
        if not (channel.weight > 0 and channel.hits):
            firsts.append(None)
            continue
        share, first, absent = _shares(channel, agreement)
        firsts.append(first)
        if not totals:  # the first weighted channel (nothing ahead yet)
            totals, best = {record_id: ahead + value for record_id, value in share.items()}, dict(first)
        else:
            for record_id in totals.keys() - share.keys():
                totals[record_id] += absent
            for (record_id, value), position in zip(share.items(), first.values(), strict=True):  # one order
                totals[record_id] = totals.get(record_id, ahead) + value
                if position < best.get(record_id, _NOT_COUNTED):
                    best[record_id] = position
        ahead += absent
    positions = [f if f is not None else _first_positions(c.hits) for c, f in zip(channels, firsts, strict=True)]
    if None in firsts:  # the hits no weighted channel returned: no fused score, no weighted rank
        for record_id in dict.fromkeys(r for c in channels for r, _ in c.hits):
            if record_id not in totals:
                totals[record_id] = 0.0
                best[record_id] = _NOT_COUNTED + min(p[record_id] for p in positions if record_id in p)
    # _ordered's key: best fused first, then a weighted channel's hit, then the best (weighted)
    # rank, then first appearance (its channel's place, then its place there); only the hits
    # that can make the cut are keyed
    ranked = sorted(totals, key=totals.__getitem__, reverse=True)
    if limit is not None and 0 < limit < len(ranked):  # the cut: every hit as good as the last one kept
        cut, end = totals[ranked[limit - 1]], limit
        while end < len(ranked) and totals[ranked[end]] >= cut:
            end += 1
        ranked = ranked[:end]
    if any(totals[a] == totals[b] for a, b in itertools.pairwise(ranked)):  # a tie: the rest of the key
        ranked.sort(key=lambda r: (-totals[r], best[r], _first_seen(positions, r)))
    named = [(c.name, p) for c, p in zip(channels, positions, strict=True)]
    return [FusedHit(r, totals[r], {name: p[r] for name, p in named if r in p}) for r in ranked[:limit]]


_NOT_COUNTED = 1 << 62  # added to the rank of a hit no weighted channel returned: after any weighted rank


def _first_seen(positions: list[dict[str, int]], record_id: str) -> tuple[int, int]:
    """Where a hit first appears: its first channel, its first place there."""
    return next((index, found[record_id]) for index, found in enumerate(positions) if record_id in found)


def _first_positions(hits: list[tuple[str, float]]) -> dict[str, int]:
    """Each record's 1-based position in a channel, the first where it is listed twice."""
    ids = [record_id for record_id, _ in reversed(hits)]
    return dict(zip(ids, range(len(ids), 0, -1), strict=True))


def _shares(channel: ScoredChannel, agreement: float) -> tuple[dict[str, float], dict[str, int], float]:
    """A weighted channel's share of each of its hits, their first positions, and the share of
    a hit it did not return: each hit's `normalised` score and its vote at its `tied_ranks` rank."""
    hits = channel.hits
    by_score, by_rank = channel.weight * (1 - agreement), channel.weight * agreement
    scores = [score for _, score in hits]
    if scores[-1] < 0 or scores != sorted(scores, reverse=True):  # the general case: as the functions say
        normal, ranks = normalised(hits, channel.floor), tied_ranks(hits)
        positions = _first_positions(hits)
        return ({rid: by_score * score + by_rank * ((AGREEMENT_K + 1) / (AGREEMENT_K + ranks[rid]))
                 for rid, score in normal.items()}, {rid: positions[rid] for rid in normal},  # in one order
                by_score * min(normal.values()) + by_rank * 0.0)
    # Best first and none below 0, as both channels give them: then `tied_ranks`'s test is
    # lead - score > TIE_TOLERANCE x lead (the same doubles), and the lowest normalised score
    # is the last hit's (normalising is monotonic). One pass, no function call per hit.
    top, floor = scores[0], channel.floor
    if top <= floor:  # every score at or below "no relevance": fall back to the observed range
        floor = scores[-1]
    span = (top - floor) or 1.0
    share: dict[str, float] = {}
    first: dict[str, int] = {}
    lead, margin, vote = top, TIE_TOLERANCE * top, by_rank * ((AGREEMENT_K + 1) / (AGREEMENT_K + 1))
    lowest = 0.0
    for position, (record_id, score) in enumerate(hits, start=1):
        if lead - score > margin:
            lead, margin, vote = score, TIE_TOLERANCE * score, by_rank * ((AGREEMENT_K + 1) / (AGREEMENT_K + position))
        if record_id not in first:  # a record listed twice counts at its first place
            first[record_id] = position
            lowest = (score - floor) / span
            share[record_id] = by_score * lowest + vote
    return share, first, by_score * lowest + by_rank * 0.0


def tied_ranks(hits: list[tuple[str, float]]) -> dict[str, int]:
    """1-based ranks for a vote, equal scores sharing the best of their ranks (1, 2, 2, 4): a
    vote must follow the scores, not the order a backend happened to list a tie in. Equal is
    within TIE_TOLERANCE of the tie's first score: backends that compute in float32 (milvus)
    and float64 (the local index) list a tie's members a rounding apart, in either order."""
    ranks: dict[str, int] = {}
    lead: float | None = None
    rank = 0
    for position, (record_id, score) in enumerate(hits, start=1):
        if lead is None or abs(score - lead) > TIE_TOLERANCE * max(abs(lead), abs(score)):
            rank, lead = position, score
        ranks.setdefault(record_id, rank)
    return ranks


def fuse_minmax(channels: list[ScoredChannel]) -> list[FusedHit]:
    """The RAGFlow rule (a baseline the eval reports): each channel's scores min-max
    normalised over what it returned, weighted by its share, summed; not returned is 0."""
    hits: dict[str, FusedHit] = {}
    first_seen: dict[str, int] = {}
    for channel in channels:
        scores = [score for _, score in channel.hits]
        low, span = (min(scores), (max(scores) - min(scores)) or 1.0) if scores else (0.0, 1.0)
        for position, (record_id, score) in enumerate(channel.hits, start=1):
            hit = _hit(hits, first_seen, record_id)
            if channel.name not in hit.ranks:
                hit.ranks[channel.name] = position
                hit.fused += channel.weight * (score - low) / span
    return _ordered(hits, first_seen)


def _hit(hits: dict[str, FusedHit], first_seen: dict[str, int], record_id: str) -> FusedHit:
    hit = hits.get(record_id)
    if hit is None:
        hit = hits[record_id] = FusedHit(record_id, 0.0)
        first_seen[record_id] = len(first_seen)
    return hit


def _ordered(hits: dict[str, FusedHit], first_seen: dict[str, int],
             weighted: set[str] | None = None, limit: int | None = None) -> list[FusedHit]:
    """Best fused score first; then a weighted channel's hits before a weight-0 channel's
    own; then the best rank in a weighted channel (any channel for RRF); then first
    appearance. A weight-0 channel never breaks a tie: it orders nothing. `limit`: the first
    so many of that order (keys are unique, so the same hits in the same order as a full sort)."""
    def key(hit: FusedHit) -> tuple[float, bool, int, int]:
        ranks = hit.ranks
        if weighted is None:
            return (-hit.fused, False, min(ranks.values()), first_seen[hit.record_id])
        counted = [r for name, r in ranks.items() if name in weighted]
        return (-hit.fused, not counted, min(counted or ranks.values()), first_seen[hit.record_id])

    if limit is not None and limit < len(hits):
        return heapq.nsmallest(limit, hits.values(), key=key)
    return sorted(hits.values(), key=key)
