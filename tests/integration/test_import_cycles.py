"""No import cycles in either source root (import-linter's acyclic_siblings contract, run by
`make lint` and `make test`): this shows the contract fails on a planted cycle, type-only ones
included, between two modules and between two sub-packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO_ROOT

ADAPTERS = REPO_ROOT / "adapters" / "book_agent_adapters"
TYPE_ONLY = "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import {module}\n"


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_import_linter_fails_on_a_cycle_between_modules_or_packages(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "book_agent", copy / "book_agent", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ADAPTERS, copy / "adapters" / "book_agent_adapters", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "tools", copy / "tools", ignore=shutil.ignore_patterns("__pycache__"))  # a root too
    shutil.copy(REPO_ROOT / "pyproject.toml", copy / "pyproject.toml")
    planted = copy / "adapters" / "book_agent_adapters"
    # resolver imports verify: verify naming the resolver's class closes a loop of two modules
    _append(planted / "sources" / "verify.py", TYPE_ONLY.format(module="book_agent_adapters.sources.resolver"))
    # storage's vector store imports the package checks: a package check importing storage closes one of packages
    _append(planted / "package" / "record_checks.py", TYPE_ONLY.format(module="book_agent_adapters.book.vectors.sqlite_records"))
    # the testing fakes: the same, in the core's root
    _append(copy / "book_agent" / "testing" / "memory_parts.py", TYPE_ONLY.format(module="book_agent.testing.memory"))
    lint = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "--no-logo"]
    env = {"PYTHONPATH": f"{copy}{os.pathsep}{copy / 'adapters'}", "PATH": os.environ.get("PATH", "")}
    broken = subprocess.run(lint, cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert broken.returncode != 0
    out = broken.stdout
    assert "No import cycles, in either root, at any depth BROKEN" in out, out
    lines = [line.strip() for line in out.splitlines()]
    for package in ("book_agent_adapters.sources", "book_agent_adapters", "book_agent.testing"):
        assert f"No cycles are allowed in {package}." in lines, out
    assert "Layers: CLI" in out and "Contracts: 6 kept, 1 broken." in out, out  # only the cycle contract caught them
