"""Search arguments shared by the typer command and the JSON fast path (no typer here).

`book-agent search BOOK QUERY --json` is what agents run, often once per question, so its
cold start matters: typer (and the pydantic it imports) costs more than the search. The
fast path parses exactly the search command's options; anything else it does not
recognise (--help, a typo, human output) goes to typer, which stays the reference.
"""

from __future__ import annotations

from typing import Any

from book_agent.cli.output import argument_error, load_json_argument
from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_TOP_K

# option -> (destination, takes a value); must match the typer command in book_agent/cli/commands/search.py
SEARCH_OPTIONS = {
    "--top-k": ("top_k", True), "-k": ("top_k", True), "--strict": ("strict", False),
    "--query-vector": ("query_vector", True), "--hint": ("hint", True),
}


def parse_search_argv(args: list[str]) -> dict[str, Any] | None:
    """`BOOK QUERY [options]` as keyword arguments, or None when typer should handle it."""
    positional: list[str] = []
    parsed: dict[str, Any] = {"top_k": str(DEFAULT_TOP_K), "strict": False, "query_vector": None, "hint": []}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg == "--":
            positional.extend(args[i + 1 :])
            break
        if arg.startswith("-") and len(arg) > 1 and name in SEARCH_OPTIONS:
            dest, takes_value = SEARCH_OPTIONS[name]
            if not takes_value:
                if eq:
                    return None
                parsed[dest] = True
            else:
                if not eq:
                    i += 1
                    if i >= len(args):
                        return None
                    inline = args[i]
                if dest == "hint":
                    parsed["hint"].append(inline)
                else:
                    parsed[dest] = inline
        elif arg.startswith("-") and len(arg) > 1:
            return None  # unknown option, --help: typer's job
        else:
            positional.append(arg)
        i += 1
    if len(positional) != 2:
        return None
    try:
        top_k = int(parsed["top_k"])
    except ValueError:
        return None
    return {"book": positional[0], "query": positional[1], "top_k": top_k, "strict": parsed["strict"],
            "query_vector": parsed["query_vector"], "hint": parsed["hint"]}


def read_vector(source: str) -> list[float]:
    try:
        value = load_json_argument(source)
    except (OSError, ValueError) as exc:
        raise argument_error(exc, source, "query.vector_invalid", f"cannot read a JSON array from {source}",
                             "pass a file holding a JSON array of numbers, or - for stdin") from exc
    if not isinstance(value, list):
        raise BookAgentError("query.vector_invalid", "the query vector must be a JSON array of numbers",
                             remediation="write it as [0.1, -0.2, ...]")
    return value


def parse_hints(items: list[str]) -> dict[str, Any]:
    hints: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BookAgentError("cli.bad_hint", f"hint {item!r} is not key=value", remediation="e.g. --hint visual=true")
        hints[key] = {"true": True, "false": False}.get(value.lower(), value)
    return hints


