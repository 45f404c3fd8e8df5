"""Lazily re-exported names (book_agent/lazy.py `exported_lazily`): a package's `__all__`, its
name -> module map and, where it has one, its TYPE_CHECKING import block (what type checkers
read) name the same things, and every name resolves, in a fresh process, to the object its module
defines. The lists are written twice by design (issue 29): this is what keeps them equal."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "book_agent", ROOT / "adapters" / "book_agent_adapters"]


def lazy_packages() -> list[Path]:
    """Every package __init__ that calls exported_lazily (found, not listed: a new one is checked too)."""
    found = [path for source in SOURCES for path in sorted(source.rglob("__init__.py"))
             if "exported_lazily(" in path.read_text(encoding="utf-8")]
    assert found, "no package exports lazily: the test lost its subject"
    return found


def module_name(init: Path) -> str:
    parts = init.parent.relative_to(ROOT).parts
    return ".".join(parts[1:] if parts[0] == "adapters" else parts)


def literal(tree: ast.Module, name: str) -> object:
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return ast.literal_eval(node.value) if name == "_EXPORTS" else node.value
    raise AssertionError(f"no {name} in the module")


def type_checking_imports(tree: ast.Module) -> dict[str, str] | None:
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return {alias.asname or alias.name: stmt.module or "" for stmt in node.body
                    if isinstance(stmt, ast.ImportFrom) for alias in stmt.names}
    return None


PROBE = """
import importlib, json, sys
package = importlib.import_module(sys.argv[1])
exports = package._EXPORTS
wrong = [name for name in package.__all__ if name != "__version__"
         and getattr(package, name) is not getattr(importlib.import_module(exports[name]), name)]
print(json.dumps({"all": sorted(package.__all__), "wrong": wrong, "dir": sorted(dir(package))}))
"""


@pytest.mark.parametrize("init", lazy_packages(), ids=module_name)
def test_every_lazily_exported_name_is_listed_alike_and_resolves(init: Path) -> None:
    tree = ast.parse(init.read_text(encoding="utf-8"))
    exports = literal(tree, "_EXPORTS")
    assert isinstance(exports, dict) and exports
    checked = type_checking_imports(tree)
    if checked is not None:
        assert checked == exports  # the type checkers' view is the runtime's
    answer = subprocess.run([sys.executable, "-c", PROBE, module_name(init)], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, check=True)
    probe = json.loads(answer.stdout)
    assert set(probe["all"]) - {"__version__"} == set(exports)
    assert probe["wrong"] == []
    assert set(exports) <= set(probe["dir"])
