"""Limits for importing an archive: sane defaults, each one overridable.

Kept apart from the importer so the name rules (archive_names) and the writer
(archive_writer) can share them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from book_agent.domain.errors import BookAgentError

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class ArchiveLimits:
    """What an archive may hold. Every limit is checked against the headers before
    extraction and again against the bytes actually written while streaming."""

    max_members: int = 10_000
    max_total_bytes: int = 2 * GIB
    max_member_bytes: int = 1 * GIB
    # Uncompressed / compressed. Deflate tops out near 1032:1; real books (PDF, SQLite
    # with float vectors, Markdown) sit far below 20:1.
    max_ratio: float = 100.0
    # Small files compress absurdly well (1 KB of spaces -> 15 bytes), so a ratio only
    # counts once more than this many bytes came out.
    ratio_floor_bytes: int = 1 * MIB
    max_path_length: int = 512  # UTF-8 bytes of the relative path inside the archive
    max_component_length: int = 255  # UTF-8 bytes of one path component (NAME_MAX)
    max_depth: int = 32  # path components

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise BookAgentError(
                    "archive.invalid_limits",
                    f"ArchiveLimits.{item.name} must be a positive number, got {value!r}",
                    details={"limit": item.name, "value": repr(value)},
                    remediation="pass positive numbers to ArchiveLimits(...)",
                )

    def to_dict(self) -> dict[str, float]:
        return {item.name: getattr(self, item.name) for item in fields(self)}
