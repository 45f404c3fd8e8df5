"""A registered book as the registry stores it, and the rules over entries.

Entries stay plain JSON objects on disk (the registry file is a documented format); the
TypedDict gives them a type in code without changing that format.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError

REQUIRED_TEXT = ("package_root",)


class RegistryEntry(TypedDict, total=False):
    book_id: str
    title: str | None
    package_root: str
    source: str
    imported: bool
    registered_at: str
    manifest_sha256: str
    fingerprint: dict[str, list[int]]  # relative path -> [size, mtime_ns, ctime_ns]
    package: dict[str, Any]  # PackageInfo.to_dict() as verified at init


def new_entry(info: PackageInfo, source: Path, imported: bool, fingerprint: dict[str, list[int]],
              manifest_sha: str) -> RegistryEntry:
    return {
        "book_id": str(info.book_id),
        "title": info.title,
        "package_root": str(info.root),
        "source": str(source),
        "imported": imported,
        "registered_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "manifest_sha256": manifest_sha,
        "fingerprint": fingerprint,
        # the inspection as verified at init: later opens reuse it while the fingerprint
        # holds, instead of re-reading the database (and every vector) on each cold start
        "package": info.to_dict(),
    }


def registered_info(entry: RegistryEntry) -> PackageInfo | None:
    """The inspection stored at init (None when absent, as from an older version, or unusable)."""
    try:
        package = entry.get("package")
        return PackageInfo.from_dict(package) if isinstance(package, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def database_sha(info: PackageInfo | None) -> str | None:
    """The SHA-256 the package manifest declares for its database (what sidecars are built from)."""
    files = ((info.archive_manifest if info else None) or {}).get("files") or {}
    sha = (files.get("database") or {}).get("sha256")
    return str(sha) if sha else None


def conflict(current: RegistryEntry | dict[str, Any] | None, entry: RegistryEntry | dict[str, Any],
             replace: bool) -> BookAgentError | None:
    """Why `entry` may not take its book_id from `current` (None when it may)."""
    if current is None or replace or current.get("package_root") == entry.get("package_root"):
        return None
    book_id = entry["book_id"]
    return BookAgentError(
        "book.already_registered",
        f"book {book_id!r} is already registered from another package: {current.get('package_root')}",
        details={"book_id": book_id, "registered_root": current.get("package_root")},
        remediation="pass --replace (Python: replace=True) to take the new package under this id",
    )


def entry_problem(book_id: str, entry: Any) -> str | None:
    """What makes a registry entry unusable (None when it is well-formed)."""
    if not isinstance(entry, dict):
        return "the entry is not an object"
    if entry.get("book_id") != book_id:
        return "its book_id differs from its key"
    missing = [k for k in REQUIRED_TEXT if not isinstance(entry.get(k), str) or not entry.get(k)]
    if missing:
        return "it lacks " + ", ".join(missing)
    for key in ("fingerprint", "package"):
        if not isinstance(entry.get(key) or {}, dict):
            return f"its {key} is not an object"
    return None
