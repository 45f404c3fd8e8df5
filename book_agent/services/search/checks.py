"""What a search refuses or warns about: malformed arguments (raised), and channels that
could not run (a warning each, or search.channel_degraded for a strict search).

Every entry point (the CLI, the MCP tools over stdio and HTTP, the Python API; one book or
a library) reaches `check_arguments` before any work, so a bad argument is refused the same
way whichever path brings it (issue 44): the MCP schema refuses first what it can describe,
with the same bounds (domain/limits.py), and this check refuses the rest.
"""

import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real

from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import HINT_KINDS, MAX_QUERY_CHARS, MAX_QUERY_DIMENSIONS, MAX_TOP_K
from book_agent.domain.search.search_results import ChannelInfo
from book_agent.services.unloaded_reranker import UnloadedReranker

_PLAIN_NUMBERS = frozenset({float, int})
MAX_HINT_DEPTH = 20  # hints are a few flat keys; nesting past this is refused, not walked


def check_arguments(query: object, top_k: object, query_vector: object, hints: object = None,
                    strict: object = False) -> None:
    """Raises the argument's coded error (search.*, query.vector_invalid) for a malformed one."""
    if not isinstance(query, str):
        raise BookAgentError("search.bad_query", "the query must be text")
    if len(query) > MAX_QUERY_CHARS:
        raise BookAgentError("search.query_too_long",
                             f"the query has {len(query)} characters; at most {MAX_QUERY_CHARS} are searched",
                             details={"chars": len(query), "limit": MAX_QUERY_CHARS},
                             remediation="ask a shorter question, or search its key words")
    if not query.strip() and query_vector is None:
        raise BookAgentError("search.empty_query", "the query is empty",
                             remediation="ask a question or give a few words to look for")
    if isinstance(top_k, bool) or not isinstance(top_k, Integral) or not 1 <= int(top_k) <= MAX_TOP_K:
        raise BookAgentError(
            "search.bad_top_k", f"top_k must be a whole number between 1 and {MAX_TOP_K}, not {top_k!r:.40}",
            remediation=f"pass --top-k between 1 and {MAX_TOP_K}",
        )
    if not isinstance(strict, bool):
        raise BookAgentError("search.bad_strict", f"strict must be true or false, not {type(strict).__name__}",
                             remediation="pass strict=True or strict=False")
    if query_vector is not None:
        check_query_vector(query_vector)
    if hints is not None:
        check_hints(hints)


def check_query_vector(vector: object) -> None:
    """A flat array of 1..MAX_QUERY_DIMENSIONS finite numbers, not all zero; whether its length
    fits the books searched is the search's to say (HybridSearch, against their models)."""
    if _float_array_checked(vector):
        return
    tolist = getattr(vector, "tolist", None)  # a numpy array: its items as Python numbers
    if callable(tolist) and getattr(vector, "ndim", None) == 1:
        vector = tolist()
    if not isinstance(vector, Sequence) or isinstance(vector, str | bytes):
        raise _bad_vector(f"the query vector must be an array of numbers, not {type(vector).__name__}")
    size = len(vector)
    if not 1 <= size <= MAX_QUERY_DIMENSIONS:
        raise _bad_vector(f"the query vector has {size} numbers; it needs 1 to {MAX_QUERY_DIMENSIONS}", size)
    # C-speed passes first (a search round trip is a few ms; a per-item Python test of 384 numbers
    # cost ~0.1 ms): the items' types as a set, their sum for finiteness (a NaN or infinity makes
    # it non-finite), the exact per-item tests only when those do not settle it
    if not set(map(type, vector)) <= _PLAIN_NUMBERS and not all(
            isinstance(x, Real) and not isinstance(x, bool) for x in vector):
        raise _bad_vector("every item of the query vector must be a number (not text, true/false, null or an array)",
                          size)
    if not math.isfinite(sum(vector)) and not all(map(math.isfinite, vector)):
        raise _bad_vector("the query vector holds a NaN or infinite number", size)
    if not any(vector):
        raise _bad_vector("the query vector is all zeros: it points nowhere", size)


def _float_array_checked(vector: object) -> bool:
    """Whether `vector` is a flat float array (numpy's, duck-typed) that passes every check, told
    by its own C loops: no list of 384 Python floats is made (~20 us a search). Anything else,
    or an array that fails (its error is then worded below), takes the general way."""
    dtype = getattr(vector, "dtype", None)
    if getattr(dtype, "kind", None) != "f" or getattr(vector, "ndim", None) != 1:
        return False
    size = getattr(vector, "size", 0)
    if not 1 <= size <= MAX_QUERY_DIMENSIONS:
        return False
    # max and min carry a NaN or an infinity through (and, unlike a sum, never overflow or warn)
    top, bottom = float(vector.max()), float(vector.min())  # type: ignore[attr-defined]
    return math.isfinite(top) and math.isfinite(bottom) and bool(vector.any())  # type: ignore[attr-defined]


def check_against_channels(query_vector: Sequence[float] | None, strict: bool,
                           dimensions: Sequence[int] | None, reranker: object) -> None:
    """What the searched books refuse: a caller's vector whose length fits none of their models
    (for one book as for a library, which searches the model groups it fits), and, for a strict
    search, a reranker that could not load here (services/unloaded_reranker.py)."""
    if query_vector is not None and dimensions and len(query_vector) not in dimensions:
        raise wrong_dimensions(len(query_vector), dimensions)
    if strict and isinstance(reranker, UnloadedReranker):
        raise reranker.strict_error()


def wrong_dimensions(got: int, expected: Sequence[int]) -> BookAgentError:
    """A caller's vector whose length fits none of the searched books' models."""
    wanted = " or ".join(str(d) for d in sorted(set(expected)))
    return BookAgentError(
        "query.vector_invalid", f"the query vector has {got} dimensions; the books searched need {wanted}",
        details={"expected_dimensions": sorted(set(expected)), "got_dimensions": got},
        remediation="Encode the query with the book's own model (see `book-agent status BOOK`), or leave it out.")


def _bad_vector(message: str, size: int | None = None) -> BookAgentError:
    return BookAgentError("query.vector_invalid", message, details={"got_dimensions": size},
                          remediation="pass the query's embedding by the book's own model: a flat array of numbers")


def check_hints(hints: object) -> None:
    """An object of JSON values with text keys; the hints the core reads (HINT_KINDS) of their type."""
    if not isinstance(hints, Mapping):
        raise _bad_hints(f"hints must be an object of key: value, not {type(hints).__name__}")
    for key, value in hints.items():
        if not isinstance(key, str):
            raise _bad_hints(f"a hint's key must be text, not {type(key).__name__}")
        kind = HINT_KINDS.get(key)
        if kind is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            raise _bad_hints(f"hint {key!r:.60} must be {_KIND_NAMES[kind]}", key)
        if kind is int and value < 0:
            raise _bad_hints(f"hint {key!r} must not be negative", key)
        if not _json_value(value, 1):
            raise _bad_hints(f"hint {key!r:.60} is not a JSON value (text, number, true/false, null, array, object)",
                             key)


_KIND_NAMES = {bool: "true or false", int: "a whole number", str: "text"}


def _json_value(value: object, depth: int) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= MAX_HINT_DEPTH:
        return False
    if isinstance(value, list | tuple):
        return all(_json_value(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json_value(v, depth + 1) for k, v in value.items())
    return False


def _bad_hints(message: str, key: str | None = None) -> BookAgentError:
    return BookAgentError("search.bad_hints", message, details={"hint": key},
                          remediation='pass hints as an object, e.g. {"visual": true, "page_index": 12}')


def degraded_warnings(strict: bool, lexical_info: ChannelInfo, vector_info: ChannelInfo,
                      unused_vector: bool = False) -> list[str]:
    """One warning per channel that could not run (a strict search raises instead), and one for
    a caller's query vector that no searched book could use (none has vectors)."""
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
    if unused_vector:
        warnings.append("the query vector was not used: no book searched has vectors")
    return warnings
