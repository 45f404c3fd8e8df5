"""Run mypy on the package as it is imported: `book_agent` with `adapters/` at `book_agent.adapters`.

mypy maps module names to folders and knows no import hooks, so it cannot follow the
editable install's `package-dir` mapping. We give it a view that has the installed shape:
.build/typecheck/book_agent/ holds a symlink for each entry of book_agent/ plus
`adapters -> ../../../adapters`. Errors are reported against the real files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VIEW = ROOT / ".build" / "typecheck"


def build_view() -> Path:
    shutil.rmtree(VIEW, ignore_errors=True)
    package = VIEW / "book_agent"
    package.mkdir(parents=True)
    for entry in (ROOT / "book_agent").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "adapters").symlink_to(ROOT / "adapters")
    return VIEW


def main() -> int:
    view = build_view()
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "book_agent"]
    result = subprocess.run(cmd, cwd=view, env={**os.environ, "MYPYPATH": str(view)})
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
