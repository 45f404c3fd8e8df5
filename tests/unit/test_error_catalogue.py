"""Every error code the code can raise is documented in contracts/ (the catalogue cannot drift)."""

from __future__ import annotations

import ast
import re

from tests.support import REPO_ROOT, source_files

ROOT = REPO_ROOT
AREAS = ("package", "archive", "query", "network", "vector", "record", "search", "lexical", "book",
         "registry", "storage", "config", "cli", "eval", "library", "source", "render", "rerank", "host", "mcp",
         "markdown", "skill", "http", "model", "engine")
CODE = re.compile(r"^(?:" + "|".join(AREAS) + r")\.[a-z][a-z0-9_]*$")
FILE_SUFFIXES = ("json", "toml", "sqlite", "lock", "md", "npy", "txt", "png")
NOT_CODES = {"http.request", "http.disconnect"}  # ASGI message types (book_agent/mcp/http/limits.py)


def codes_in_source() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in source_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.match(node.value) \
                    and node.value.rsplit(".", 1)[1] not in FILE_SUFFIXES and node.value not in NOT_CODES:
                found.setdefault(node.value, str(path.relative_to(ROOT)))
    return found


def documented_codes() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "contracts").glob("*.md"))
    return set(re.findall(r"`([a-z]+\.[a-z0-9_]+)`", text))


def test_every_error_code_in_the_code_is_documented():
    documented = documented_codes()
    missing = {code: where for code, where in codes_in_source().items() if code not in documented}
    assert missing == {}, "document these codes in a contracts/*.md table: " + repr(missing)


def test_the_catalogue_finds_codes():
    assert "book.not_registered" in codes_in_source()  # the scan itself works
