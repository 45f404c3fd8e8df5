"""A library: several registered books searched as one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LibraryMember:
    """One book as the library's indexes hold it."""

    book_id: str
    database_path: Path
    record_count: int
    stamp: str  # what the book's records were built from (manifest and database hashes)


def library_stamp(members: list[LibraryMember], tokenizer_version: str) -> dict[str, str]:
    """The library index's stamp: every member, so a registration or removal makes it stale."""
    books = ";".join(f"{m.book_id}={m.stamp}" for m in sorted(members, key=lambda m: m.book_id))
    return {"books": books, "tokenizer_version": tokenizer_version}
