"""How big the source's modules and folders are (tests/integration/test_architecture.py holds the
limits; `make lint` prints the warnings: `python -m tests.support.sizes`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.support import REPO_ROOT, source_files

WARN_MODULE_LINES = 500  # `make lint` names these: time to split by concept, not by count
MAX_MODULE_LINES = 800  # the tests refuse these
MAX_FOLDER_MODULES = 15  # modules side by side in one folder (an __init__.py counts)


def long_modules(limit: int) -> list[tuple[str, int]]:
    found = []
    for path in source_files():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append((str(path.relative_to(REPO_ROOT)), lines))
    return found


def crowded_folders(limit: int) -> list[tuple[Path, int]]:
    """(folder, modules) of every folder holding more than `limit` .py files side by side: the
    source roots, and tools/ (the scripts are read by newcomers too)."""
    files = source_files() + sorted((REPO_ROOT / "tools").rglob("*.py"))
    counts = Counter(p.parent for p in files if "__pycache__" not in p.parts)
    return sorted((folder, n) for folder, n in counts.items() if n > limit)


def main() -> None:
    for name, lines in long_modules(WARN_MODULE_LINES):
        print(f"warning: {name} has {lines} lines (over {WARN_MODULE_LINES}: split it by concept)")


if __name__ == "__main__":
    main()
