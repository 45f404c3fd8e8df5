"""Retrieval metrics for the eval harness: recall@k, MRR@k, nDCG@k with graded relevance."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def recall_at_k(ranking: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    wanted = {r for r, grade in relevant.items() if grade > 0}
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranking[:k])) / len(wanted)


def mrr_at_k(ranking: Sequence[str], relevant: Mapping[str, float], k: int = 10) -> float:
    for position, record_id in enumerate(ranking[:k], start=1):
        if relevant.get(record_id, 0) > 0:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranking: Sequence[str], relevant: Mapping[str, float], k: int = 10) -> float:
    gains = [relevant.get(record_id, 0.0) for record_id in ranking[:k]]
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def grades(relevant: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    """`[id, ...]` (each grade 1) or `{id: grade}` as a grade map."""
    if isinstance(relevant, Mapping):
        return {str(k): float(v) for k, v in relevant.items()}
    return {str(r): 1.0 for r in relevant}
