"""Shared by the tests/test_hosts_*.py files: a real package with skill files, and file snapshots."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import PackageInfo

from .package_builder import build_package

SKILL_FILES = {"skill/reference.md": "# Reference\n\nChapter list.\n", "skill/notes/cite.md": "Cite pages.\n"}
SECRET = "sk-test-4f9c2e71b8d0a6c3"  # a known value that must never reach a host file
AUTH_ENV = "BOOK_AGENT_TEST_KEY"


def make_package(dest: Path, book_id: str = "test-book") -> PackageInfo:
    from book_agent_adapters.package.inspector import PackageInspector

    root = build_package(dest, kind="epub", book_id=book_id, skill_files=SKILL_FILES)
    info: PackageInfo = PackageInspector().inspect(root)
    return info


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under folder, by relative path, with its bytes."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def decode_deeplink(link: str) -> dict[str, Any]:
    """The JSON a Cherry Studio deep link carries, decoded as its handler does."""
    from urllib.parse import parse_qs, urlsplit

    value = parse_qs(urlsplit(link).query)["servers"][0]
    data: dict[str, Any] = json.loads(base64.b64decode(value).decode("utf-8"))
    return data
