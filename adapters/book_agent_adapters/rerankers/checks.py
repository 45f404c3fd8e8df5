"""What a rerank result must satisfy, as data: used to guard plug-ins at run time and by
the contract suite in book_agent.testing. Each problem is one readable sentence."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

RESULT_KEYS = ("hits", "rerank_requested", "rerank_applied", "warnings", "error")
ADDED_FIELDS = ("rank", "scores", "rerank")  # what an applied rerank may change


def result_problems(result: Any, candidates: Sequence[Mapping[str, Any]], top_n: int) -> list[str]:
    if not isinstance(result, dict):
        return [f"rerank returned {type(result).__name__}, not a dict"]
    problems = [f"the result lacks {k!r}" for k in RESULT_KEYS if k not in result]
    if problems:
        return problems
    hits, applied = result["hits"], result["rerank_applied"]
    if not isinstance(hits, list) or not all(isinstance(h, dict) for h in hits):
        return ["`hits` is not a list of dicts"]
    for key in ("rerank_requested", "rerank_applied"):
        if not isinstance(result[key], bool):
            problems.append(f"`{key}` is not a bool")
    if not isinstance(result["warnings"], list):
        problems.append("`warnings` is not a list")
    error = result["error"]
    if error is not None and not (isinstance(error, dict) and "code" in error and "message" in error):
        problems.append("`error` is neither None nor a {code, message, ...} dict")
    if applied and error is not None:
        problems.append("an applied rerank reports an error")
    if applied and not result["rerank_requested"]:
        problems.append("rerank_applied is true but rerank_requested is false")
    if len(hits) != min(top_n, len(candidates)):
        problems.append(f"{len(hits)} hits for top_n={top_n} and {len(candidates)} candidates")
    if applied is True:
        problems += _applied_problems(hits, candidates)
    elif hits != list(candidates[: len(hits)]):
        problems.append("a rerank that was not applied changed the hits or their order")
    return problems


def _applied_problems(hits: list[dict[str, Any]], candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    problems: list[str] = []
    used: set[int] = set()
    for position, hit in enumerate(hits):
        index = _match(hit, candidates, used)
        if index is None:
            problems.append(f"hit {position} is not one of the candidates (or a field changed)")
            continue
        used.add(index)
        if hit.get("rank") != position + 1:
            problems.append(f"hit {position} has rank {hit.get('rank')!r}, expected {position + 1}")
        block = hit.get("rerank")
        if not isinstance(block, dict) or "provider" not in block:
            problems.append(f"hit {position} lacks the `rerank` metadata block")
        elif block.get("reranked", True):
            score = (hit.get("scores") or {}).get("rerank")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                problems.append(f"hit {position} has no finite scores.rerank")
    return problems


def _match(hit: dict[str, Any], candidates: Sequence[Mapping[str, Any]], used: set[int]) -> int | None:
    """The unused candidate this hit came from: all fields equal except the added ones, and
    the candidate's own scores kept."""
    for index, candidate in enumerate(candidates):
        if index in used:
            continue
        same = all(hit.get(k) == v for k, v in candidate.items() if k not in ADDED_FIELDS)
        same = same and set(candidate) - {"rank"} <= set(hit)
        old_scores, new_scores = candidate.get("scores"), hit.get("scores")
        if isinstance(old_scores, dict):
            same = same and isinstance(new_scores, dict) and all(
                new_scores.get(k) == v for k, v in old_scores.items()
            )
        if same:
            return index
    return None
