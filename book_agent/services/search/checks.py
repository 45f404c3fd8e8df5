"""What a search refuses or warns about: malformed arguments (raised), and channels that
could not run (a warning each, or search.channel_degraded for a strict search)."""

from collections.abc import Sequence

from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import MAX_TOP_K
from book_agent.domain.search.search_results import ChannelInfo


def check_arguments(query: object, top_k: int, query_vector: Sequence[float] | None) -> None:
    if not isinstance(query, str):
        raise BookAgentError("search.bad_query", "the query must be text")
    if not query.strip() and query_vector is None:
        raise BookAgentError("search.empty_query", "the query is empty",
                             remediation="ask a question or give a few words to look for")
    if not 1 <= int(top_k) <= MAX_TOP_K:
        raise BookAgentError(
            "search.bad_top_k", f"top_k must be between 1 and {MAX_TOP_K}, not {top_k}",
            remediation=f"pass --top-k between 1 and {MAX_TOP_K}",
        )


def degraded_warnings(strict: bool, lexical_info: ChannelInfo, vector_info: ChannelInfo) -> list[str]:
    """One warning per channel that could not run; a strict search raises instead."""
    degraded = [name for name, info in (("lexical", lexical_info), ("vector", vector_info))
                if not info["ran"] and info.get("status") != "not-applicable"]
    if strict and degraded:
        info = lexical_info if "lexical" in degraded else vector_info
        raise BookAgentError(
            "search.channel_degraded",
            f"strict search: the {' and '.join(degraded)} channel could not run: {info.get('reason')}",
            details={"channels": {"lexical": lexical_info, "vector": vector_info}},
            remediation=info.get("remediation") or "run without --strict to accept a degraded search",
        )
    warnings: list[str] = []
    for name in degraded:
        info = lexical_info if name == "lexical" else vector_info
        warnings.append(f"{name} channel did not run: {info.get('reason')}"
                        + (f" (fix: {info['remediation']})" if info.get("remediation") else ""))
    return warnings
