"""Builds the one result shape every reranker returns.

    {"hits": [...], "rerank_requested": bool, "rerank_applied": bool,
     "warnings": [str, ...], "error": None | {code, message, details, remediation}}

Hits are deep copies of the candidates (the caller's dicts are never touched), at most
`top_n` of them. Only an applied rerank changes order or fields: it sets `rank`, adds
`scores.rerank` (the provider's raw score, not a probability) and a `rerank` block.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

from book_agent.domain.errors import BookAgentError, ErrorInfo
from book_agent.domain.search.search_results import RerankOutcome, SearchHit
from book_agent_adapters.rerankers import errors

Scored = list[tuple[int, float]]  # (candidate index, raw score), best first


_ATOMS = (str, int, float, bool, type(None))


def clone(value: Any) -> Any:
    """A deep copy of JSON-shaped data, several times faster than copy.deepcopy (which
    would cost ~1.5 ms for 50 hits and break the `none` provider's < 1 ms budget)."""
    kind = type(value)
    if kind is dict:
        return {k: clone(v) for k, v in value.items()}
    if kind is list:
        return [clone(v) for v in value]
    if kind in _ATOMS:
        return value
    if kind is tuple:
        return tuple(clone(v) for v in value)
    return copy.deepcopy(value)


def check_request(candidates: Sequence[SearchHit], top_n: int) -> None:
    """Caller mistakes are raised in every mode: they are bugs, not provider failures."""
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise errors.rerank_error(errors.INVALID_REQUEST, f"top_n must be an int >= 1, not {top_n!r}")
    if isinstance(candidates, (str, bytes, dict)) or not all(isinstance(c, dict) for c in candidates):
        raise errors.rerank_error(errors.INVALID_REQUEST, "candidates must be a list of hit dicts")


def texts_of(candidates: Sequence[SearchHit]) -> list[str]:
    return [c["text"] if isinstance(c.get("text"), str) else "" for c in candidates]


def result(
    hits: list[SearchHit],
    requested: bool,
    applied: bool,
    warnings: list[str] | None = None,
    error: ErrorInfo | None = None,
) -> RerankOutcome:
    return {
        "hits": hits,
        "rerank_requested": requested,
        "rerank_applied": applied,
        "warnings": list(warnings or []),
        "error": error,
    }


def passthrough(
    candidates: Sequence[SearchHit], top_n: int, requested: bool = False
) -> RerankOutcome:
    """The original order, untouched (the `none` provider)."""
    return result(clone(list(candidates[:top_n])), requested, False)


def failure(
    candidates: Sequence[SearchHit], top_n: int, error: BookAgentError, provider: str
) -> RerankOutcome:
    """The original order, the error, a warning; never a fake `applied`."""
    warning = f"{error.code}: rerank by {provider} failed, results keep their original order ({error.message})"
    return result(
        clone(list(candidates[:top_n])), True, False, [warning], error.to_dict()
    )


def validate_scored(scored: Sequence[Any], count: int) -> Scored:
    """Indices in range and unique, scores finite numbers; else rerank.bad_response."""
    seen: set[int] = set()
    clean: Scored = []
    for position, pair in enumerate(scored):
        index, score = pair
        if isinstance(index, bool) or not isinstance(index, int):
            raise _bad("a result has no integer index", position=position, index=repr(index))
        if not 0 <= index < count:
            raise _bad("a result index is out of range", position=position, index=index, count=count)
        if index in seen:
            raise _bad("a result index appears twice", position=position, index=index)
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise _bad("a result score is not a finite number", position=position, score=repr(score))
        seen.add(index)
        clean.append((index, float(score)))
    # Best first; ties keep the candidates' original order.
    clean.sort(key=lambda pair: (-pair[1], pair[0]))
    return clean


def applied(
    candidates: Sequence[SearchHit],
    scored: Scored,
    top_n: int,
    meta: dict[str, Any],
) -> RerankOutcome:
    """Reranked hits first (best first), then, if the provider scored fewer than asked,
    the unscored candidates in their original order, with a warning."""
    wanted = min(top_n, len(candidates))
    order = [index for index, _ in scored[:wanted]]
    warnings: list[str] = []
    if len(order) < wanted:
        warnings.append(
            f"{errors.PARTIAL_RESULTS}: the reranker scored {len(order)} of {wanted} candidates; "
            "the rest follow in their original order without a rerank score"
        )
        taken = set(order)
        order += [i for i in range(len(candidates)) if i not in taken][: wanted - len(order)]
    scores = dict(scored)
    hits = []
    for rank, index in enumerate(order, start=1):
        hit = clone(candidates[index])
        block = dict(meta, original_rank=hit.get("rank"), reranked=index in scores)
        if index in scores:
            hit_scores = hit.get("scores")
            hit["scores"] = dict(hit_scores) if isinstance(hit_scores, dict) else {}
            hit["scores"]["rerank"] = scores[index]
        hit["rank"] = rank
        hit["rerank"] = block
        hits.append(hit)
    return result(hits, True, True, warnings)


def _bad(message: str, **details: Any) -> BookAgentError:
    return errors.rerank_error(
        errors.BAD_RESPONSE,
        f"the reranker's response is unusable: {message}",
        "Check that the endpoint speaks the configured rerank API; the results were left unreranked.",
        **details,
    )
