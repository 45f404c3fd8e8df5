"""A channel's answer in the shapes the hybrid search (book_agent/services/search/hybrid.py) uses."""

from __future__ import annotations

from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.search_results import ChannelInfo


def scored_pairs(ids: list[str], scores: dict[str, float] | None) -> list[tuple[str, float]]:
    """(record id, its score) of each id, in the ids' order."""
    return list(zip(ids, map((scores or {}).__getitem__, ids), strict=True))


def unique_pairs(pairs: list[tuple[str, float]], scores: dict[str, float]) -> list[tuple[str, float]]:
    """A channel's (id, score) pairs as `scored_pairs` makes them of its ids and `scores` (its
    pairs' dict): the pairs themselves when no id repeats (nearly every search: no second list)."""
    return pairs if len(scores) == len(pairs) else scored_pairs([record_id for record_id, _ in pairs], scores)


def not_ran(error: BookAgentError, status: str = "unavailable") -> ChannelInfo:
    """A channel that could not run: why, and what to do."""
    return {"ran": False, "status": status, "reason": error.message, "code": error.code,
            "remediation": error.remediation}
