"""The edges stay typed: ports and services return the domain's TypedDicts, not `Any`; the
drivers take the BookAgent facade; and what the facade returns has exactly the keys its
types declare (so a new key in a result is a new key in its type, and the JSON is the dict).
"""

from __future__ import annotations

import ast
import types
import typing
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from book_agent.agent import build_agent
from book_agent.domain.book.book_reports import BookRow, BookStatus, Prepared, Removal, Resolved
from book_agent.domain.records import Record
from book_agent.domain.search.search_results import SearchResult
from book_agent.domain.sources.source_results import RecordEntry
from book_agent.testing.memory import FakeBook, memory_adapters

CORE = Path(__file__).resolve().parents[2] / "book_agent"
# `Any` left in services: the library's result rows (services/library*.py) and a descriptor's
# `instance`. Lower it as they are typed; never raise it.
ANY_CEILING = 12


def _any_uses(folder: Path) -> dict[str, int]:
    """`Any` as a name in each module's code (annotations and aliases), imports aside."""
    found: dict[str, int] = {}
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        count = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "Any")
        count += sum(1 for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value == "Any")
        if count:
            found[str(path.relative_to(CORE))] = count
    return found


def test_ports_and_services_do_not_gain_any():
    uses = _any_uses(CORE / "ports") | _any_uses(CORE / "services")
    assert sum(uses.values()) <= ANY_CEILING, (
        f"`Any` in ports/services went up to {sum(uses.values())} (ceiling {ANY_CEILING}): {uses}. "
        "Type the value with a TypedDict or dataclass in book_agent/domain/ instead")


def test_ports_declare_no_any():
    assert _any_uses(CORE / "ports") == {}


def _agent_parameters(folder: Path) -> list[tuple[str, int, str]]:
    """Every parameter named `agent` (or `a`) in the drivers, with its annotation's text."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                for arg in node.args.args + node.args.kwonlyargs:
                    if arg.arg in ("agent", "a") and not isinstance(node, ast.Lambda):
                        text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                        found.append((str(path.relative_to(CORE)), arg.lineno, text))
    return found


@pytest.mark.parametrize("driver", ["mcp", "cli"])
def test_drivers_take_the_facade_not_any(driver):
    params = _agent_parameters(CORE / driver)
    untyped = [p for p in params if "BookAgent" not in p[2]]
    assert untyped == [], f"a driver takes the agent untyped (use book_agent.agent.BookAgent): {untyped}"


# --- the results have the keys their types declare --------------------------------------


def _typeddicts(hint: Any) -> list[type]:
    """The TypedDicts a field's type names: itself, or inside X | None, list[X], dict[str, X]."""
    if is_typeddict(hint):
        return [hint]
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return [t for arg in get_args(hint) for t in _typeddicts(arg)]
    if origin in (list, typing.Required, typing.NotRequired):
        return [t for arg in get_args(hint)[:1] for t in _typeddicts(arg)]
    if origin is dict:
        return _typeddicts(get_args(hint)[1])
    return []


def _problems(value: Any, shape: type, where: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    declared = set(shape.__required_keys__) | set(shape.__optional_keys__)  # type: ignore[attr-defined]
    problems = [f"{where}: {k!r} is not declared in {shape.__name__}" for k in value if k not in declared]
    problems += [f"{where}: required {k!r} of {shape.__name__} is missing"
                 for k in shape.__required_keys__ if k not in value]  # type: ignore[attr-defined]
    hints = get_type_hints(shape)
    for key, item in value.items():
        for inner in _typeddicts(hints.get(key)):
            items = item if isinstance(item, list) else (
                list(item.values()) if isinstance(item, dict) and get_origin(hints[key]) is dict else [item])
            for i, one in enumerate(items):
                problems += _problems(one, inner, f"{where}.{key}[{i}]")
    return problems


@pytest.fixture
def agent(tmp_path):
    texts = ["All warfare is based on deception.", "Water shapes its course according to the ground.",
             "The skillful fighter puts himself into a position which makes defeat impossible."]
    records = [Record(f"r{i:04d}", t, {"kind": "pdf", "page_index": i}, seq=i) for i, t in enumerate(texts)]
    adapters = memory_adapters({"/books/art": FakeBook("art-of-war", records)})
    agent = build_agent(tmp_path / "data", **adapters)
    agent.init("/books/art")
    return agent


def test_the_facade_returns_what_its_types_declare(agent):
    results: list[tuple[object, type, str]] = [
        (agent.search("art-of-war", "water ground"), SearchResult, "search"),
        (agent.search("art-of-war", "?!"), SearchResult, "wordless search"),
        (agent.status("art-of-war"), BookStatus, "status"),
        (agent.resolve("art-of-war"), Resolved, "resolve"),
        (agent.read_entry("art-of-war", "r0001"), RecordEntry, "read_entry"),
        (agent.prepare("art-of-war"), Prepared, "prepare"),
    ] + [(row, BookRow, "list_books") for row in agent.list_books()]
    problems = [p for value, shape, where in results for p in _problems(value, shape, where)]
    assert agent.search("art-of-war", "water ground")["hits"], "the search found nothing to check"
    assert problems == []
    assert _problems(agent.remove("art-of-war"), Removal, "remove") == []


def test_the_checker_sees_an_undeclared_key(agent):
    result = agent.search("art-of-war", "water ground")
    result["hits"][0]["surprise"] = 1  # type: ignore[typeddict-unknown-key]
    del result["fusion"]  # type: ignore[misc]
    problems = _problems(result, SearchResult, "search")
    assert any("'surprise' is not declared in SearchHit" in p for p in problems)
    assert any("required 'fusion'" in p for p in problems)
