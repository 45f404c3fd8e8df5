"""book-agent's own environment variables are read in book_agent/settings.py only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from book_agent import settings
from tests.support import source_files

SETTINGS = Path(settings.__file__).resolve()
VARIABLE = re.compile(r"BOOK_AGENT_[A-Z0-9_]+")
ENV_READ = re.compile(r"(os\.environ|getenv|environ\.get|environ\[)[^\n]*BOOK_AGENT_")


def env_problems(source: str) -> list[str]:
    """Reads of a BOOK_AGENT_* variable in this source: one on a line, or the variable's name
    held in a string of its own (a constant a read elsewhere in the module would use)."""
    problems = [f"line {n}: {line.strip()}" for n, line in enumerate(source.splitlines(), 1) if ENV_READ.search(line)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and VARIABLE.fullmatch(node.value):
            problems.append(f"line {node.lineno}: the variable name {node.value!r}")
    return problems


def test_book_agent_variables_are_read_only_in_settings() -> None:
    found = {str(path): problems for path in source_files() if path.resolve() != SETTINGS
             if (problems := env_problems(path.read_text(encoding="utf-8")))}
    assert found == {}, "read BOOK_AGENT_* variables through book_agent/settings.py"


@pytest.mark.parametrize("source", [
    "import os\nhome = os.environ.get('BOOK_AGENT_HOME')",
    "import os\nhome = os.getenv(\"BOOK_AGENT_HOME\", '')",
    "ENV = 'BOOK_AGENT_NEW'\n",
    "def f(environ):\n    return environ['BOOK_AGENT_DEBUG']",
])
def test_the_scan_finds_a_read_outside_settings(source: str) -> None:
    assert env_problems(source) != []


def test_the_scan_lets_a_message_name_a_variable() -> None:
    assert env_problems('hint = "export BOOK_AGENT_TOKEN=... and pass --token-env BOOK_AGENT_TOKEN"') == []
    assert env_problems(Path(settings.__file__).read_text(encoding="utf-8")) != []  # settings itself reads them


def test_the_readers_take_an_environment(tmp_path: Path) -> None:
    assert settings.resolve_data_dir(None, {settings.ENV_HOME: str(tmp_path)}) == tmp_path.resolve()
    assert settings.resolve_data_dir(tmp_path / "x", {settings.ENV_HOME: "/elsewhere"}) == (tmp_path / "x").resolve()
    assert settings.blas_threads({settings.ENV_BLAS_THREADS: " Auto "}) == "auto"
    assert settings.blas_threads({}) == ""
    assert [settings.debug_requested({settings.ENV_DEBUG: v}) for v in ("1", "yes", "0", "false", "No", "")] == \
        [True, True, False, False, False, False]


@pytest.mark.parametrize("xdg", [None, "", "   ", "relative/cache", "/tmp/some cache"])
def test_the_user_cache_dir_is_platformdirs_own(xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """settings.user_cache_dir applies platformdirs' rule without importing it on Linux (issue 42's
    per-user models folder is looked up by every search): both give the same folder."""
    import platformdirs

    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert settings.user_cache_dir() == Path(platformdirs.user_cache_dir("book-agent", appauthor=False))
