"""Member-name rules for archive import: pure string logic, no file system.

A name is split on "/" into components; the importer only ever joins these components
under its own temporary folder, so a name that passes here cannot point outside it.
Refusals carry the stable codes listed in contracts/archives.md.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.archives.limits import ArchiveLimits

_DRIVE = re.compile(r"^[A-Za-z]:")
# Bidi overrides/isolates can make "evil\u202etxt.pdf" display as another name.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Cc: C0/C1 controls incl. NUL; Cs: lone surrogates (undecodable bytes under
# surrogateescape); Zl/Zp: line and paragraph separators.
_BAD_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def refuse(code: str, message: str, name: str, **details: Any) -> BookAgentError:
    return BookAgentError(
        code,
        message,
        details={"member": name, **details},
        remediation="rebuild the archive from a clean package folder (zip -r / tar -czf)",
    )


def _check_characters(name: str) -> None:
    for char in name:
        if char in ("\\", ":") or char in _BIDI or unicodedata.category(char) in _BAD_CATEGORIES:
            raise refuse(
                "archive.bad_name",
                f"member name contains a forbidden character {char!r}",
                name,
                character=f"U+{ord(char):04X}",
            )


def member_parts(name: str, limits: ArchiveLimits) -> tuple[str, ...]:
    """The safe relative path components of `name`, or a refusal.

    "." and empty components are dropped ("./book.md" is how tar writes a folder's
    contents). Returns () for the archive root itself ("./"), which callers skip.
    """
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise refuse("archive.absolute_path", "member name is an absolute path", name)
    _check_characters(name)
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    for part in parts:
        # NFKC maps U+FF0E FULLWIDTH FULL STOP to "." and U+FF0F to "/": a file system
        # or tool that normalises would read these as traversal, so refuse them too.
        folded = unicodedata.normalize("NFKC", part)
        if part == ".." or folded in ("..", ".") or "/" in folded or "\\" in folded:
            raise refuse("archive.path_traversal", "member name climbs out of the archive", name)
    if len(parts) > limits.max_depth:
        raise refuse(
            "archive.too_deep",
            f"member path has {len(parts)} levels, limit {limits.max_depth}",
            name,
            depth=len(parts),
            limit=limits.max_depth,
        )
    length = len("/".join(parts).encode("utf-8"))
    longest = max((len(part.encode("utf-8")) for part in parts), default=0)
    if length > limits.max_path_length or longest > limits.max_component_length:
        raise refuse(
            "archive.path_too_long",
            "member path is too long",
            name,
            path_bytes=length,
            component_bytes=longest,
            limit=limits.max_path_length,
            component_limit=limits.max_component_length,
        )
    return parts


def fold(part: str) -> str:
    """The key two names collide under on case-insensitive or normalising file systems."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", part).casefold())


class NameRegistry:
    """Refuses duplicate names, including case-only and NFC/NFD/NFKC collisions, and a
    name used both as a file and as a folder. Repeating a folder entry is allowed."""

    def __init__(self) -> None:
        # folded path -> (original spelling, is_dir)
        self._seen: dict[tuple[str, ...], tuple[tuple[str, ...], bool]] = {}

    def add(self, parts: tuple[str, ...], is_dir: bool, name: str) -> None:
        for depth in range(1, len(parts) + 1):
            prefix = parts[:depth]
            prefix_is_dir = is_dir or depth < len(parts)
            key = tuple(fold(part) for part in prefix)
            seen = self._seen.get(key)
            if seen is None:
                self._seen[key] = (prefix, prefix_is_dir)
                continue
            spelling, seen_is_dir = seen
            if spelling == prefix and seen_is_dir and prefix_is_dir:
                continue
            raise refuse(
                "archive.duplicate_name",
                "member name collides with another member"
                + (
                    " (same name)"
                    if spelling == prefix
                    else " (differs only in case or Unicode form)"
                ),
                name,
                other="/".join(spelling),
            )
