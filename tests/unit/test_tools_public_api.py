"""Issue 47: developer tools (tools/) use the public API, and for an engine's own parts the one
facade `book_agent_adapters.bench` (an import-linter contract in pyproject.toml forbids deeper
imports). Every name a tool takes from it exists and resolves, and the facade imports nothing
until a name is used (a cold-start bench must not pay for the adapters)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from book_agent_adapters import bench
from tests.support import REPO_ROOT

TAKEN = re.compile(r"from book_agent_adapters\.bench import (?:\(([^)]*)\)|([^(\n]+))")


def names_tools_take() -> dict[str, set[str]]:
    """name -> the tools taking it, from every `from book_agent_adapters.bench import ...` in
    tools/ (code run in child processes, held in strings, included)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / "tools").rglob("*.py")):
        for match in TAKEN.finditer(path.read_text(encoding="utf-8")):
            for item in re.split(r"[,\n]", match.group(1) or match.group(2)):
                name = item.split("#")[0].strip().split(" as ")[0].strip()
                if name:
                    found.setdefault(name, set()).add(str(path.relative_to(REPO_ROOT)))
    return found


def test_every_name_a_tool_takes_is_in_the_facade() -> None:
    taken = names_tools_take()
    assert len(taken) > 40  # the scan sees the tools' imports
    assert sorted(set(taken) - set(bench.__all__)) == []


@pytest.mark.parametrize("name", bench.__all__)
def test_every_name_of_the_facade_resolves(name: str) -> None:
    assert getattr(bench, name) is not None
    with pytest.raises(AttributeError):
        bench.__getattr__(name + "_missing")


def test_the_facade_imports_nothing_until_a_name_is_used() -> None:
    code = ("import sys\nimport book_agent_adapters.bench as b\n"
            "print(sorted(m for m in sys.modules if m.startswith('book_agent_adapters.') and m != 'book_agent_adapters.bench'))\n"
            "b.fold_chinese\nprint('book_agent_adapters.text.cjk_fold' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "True"]
