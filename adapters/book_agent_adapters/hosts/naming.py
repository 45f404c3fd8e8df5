"""Host-safe names for the MCP server and the skill folder of a book or a library.

Every host we target accepts `[a-z0-9-]`, at most 64 characters (Codex server names allow
ASCII letters, digits, `-`, `_`; skill names are lower-case letters, digits and hyphens,
<= 64 chars, matching the folder). One rule serves both, so a server and its skill share
a name:

    book:  "book-" + book_id, lower-cased, every run of other characters -> "-",
           leading/trailing hyphens dropped
           longer than 64 -> first 55 characters (trailing hyphens dropped) + "-" + 8 hex
           of sha256(book_id): deterministic, and distinct books stay distinct
    @all:  "book-library"
    a,b:   "book-library-" + 10 hex of sha256 of the ids sorted and comma-joined
           ("a,b" and "b,a" are the same library, the same name)

Reserved, so no book takes them: the shipped book-agent skill's `book-agent` and the
library names (`book-library`, `book-library-` + exactly 10 hex). A book whose name would
be one of them (ids `agent`, `library`, `library-0123456789`) takes the 8-hex suffix
instead, which never has that shape (`book-library-<8 hex>`, `...-<10 hex>-<8 hex>`).
Two lists collide only if their 40-bit hashes do.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

MAX_NAME = 64
PREFIX = "book-"
BOOK_AGENT_SKILL = "book-agent"
LIBRARY_NAME = "book-library"
LIBRARY_HASH_CHARS = 10
_OTHER = re.compile(r"[^a-z0-9]+")
_LIBRARY = re.compile(rf"^book-library(?:-[0-9a-f]{{{LIBRARY_HASH_CHARS}}})?$")


def short_hash(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def book_name(book_id: str) -> str:
    """The server and skill name of a book (see the module docstring for the rule)."""
    slug = _OTHER.sub("-", book_id.lower()).strip("-")
    name = PREFIX + slug if slug else PREFIX + short_hash(book_id)
    if len(name) > MAX_NAME or is_reserved(name):
        suffix = "-" + short_hash(book_id)
        name = name[: MAX_NAME - len(suffix)].rstrip("-") + suffix
    return name


def library_name(book_ids: Sequence[str] | None) -> str:
    """The server and skill name of a library: @all (None) or exactly these books."""
    if book_ids is None:
        return LIBRARY_NAME
    return f"{LIBRARY_NAME}-{short_hash(','.join(sorted(set(book_ids))), LIBRARY_HASH_CHARS)}"


def is_reserved(name: str) -> bool:
    """The shipped skill's name, or a library's: never a book's."""
    return name == BOOK_AGENT_SKILL or bool(_LIBRARY.match(name))

