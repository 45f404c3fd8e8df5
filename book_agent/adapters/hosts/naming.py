"""Host-safe names for the MCP server and the skill folder of a book.

Every host we target accepts `[a-z0-9-]`, at most 64 characters (Codex server names allow
ASCII letters, digits, `-`, `_`; skill names are lower-case letters, digits and hyphens,
<= 64 chars, matching the folder). One rule serves both, so a book's server and skill
share a name:

    name = "book-" + book_id, lower-cased, every run of other characters -> "-",
           leading/trailing hyphens dropped
    longer than 64 -> first 55 characters (trailing hyphens dropped) + "-" + 8 hex of
           sha256(book_id): deterministic, and distinct books stay distinct

The shipped book-agent skill is named `book-agent`; a book whose id is `agent` would
collide with it, so its name takes the hash suffix as well.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
PREFIX = "book-"
BOOK_AGENT_SKILL = "book-agent"
_OTHER = re.compile(r"[^a-z0-9]+")
_VALID = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")


def short_hash(text: str, length: int = 8) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def book_name(book_id: str) -> str:
    """The server and skill name of a book (see the module docstring for the rule)."""
    slug = _OTHER.sub("-", book_id.lower()).strip("-")
    name = PREFIX + slug if slug else PREFIX + short_hash(book_id)
    if len(name) > MAX_NAME or name == BOOK_AGENT_SKILL:
        suffix = "-" + short_hash(book_id)
        name = name[: MAX_NAME - len(suffix)].rstrip("-") + suffix
    return name


def is_host_safe(name: str) -> bool:
    """Lower-case letters, digits and single inner hyphens, 1..64 characters."""
    return bool(_VALID.match(name)) and "--" not in name
