from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent_adapters.hosts.naming import (
    BOOK_AGENT_SKILL,
    book_name,
    is_reserved,
    library_name,
)

HOST_SAFE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")


def is_host_safe(name: str) -> bool:
    """What every host accepts as a server or skill name: lower-case letters, digits and single
    inner hyphens, 1..64 characters."""
    return bool(HOST_SAFE.match(name)) and "--" not in name

BOOK_IDS = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,63}", fullmatch=True)


def test_simple_ids_map_readably() -> None:
    assert book_name("pride-and-prejudice") == "book-pride-and-prejudice"
    assert book_name("sun_tzu.art.of.war") == "book-sun-tzu-art-of-war"
    assert book_name("A..B__c") == "book-a-b-c"


def test_long_ids_are_truncated_with_a_hash() -> None:
    long_id = "x" * 64
    name = book_name(long_id)
    assert len(name) == 64
    assert re.fullmatch(r"book-x+-[0-9a-f]{8}", name)
    other = book_name("x" * 63 + "y")
    assert other != name and len(other) == 64


def test_the_shipped_skill_name_is_never_taken_by_a_book() -> None:
    assert book_name("agent") != BOOK_AGENT_SKILL
    assert book_name("agent").startswith("book-agent-")


@settings(max_examples=60)
@given(BOOK_IDS)
def test_every_book_id_gives_a_host_safe_deterministic_name(book_id: str) -> None:
    name = book_name(book_id)
    assert is_host_safe(name), name
    assert len(name) <= 64
    assert name == book_name(book_id)
    assert name != BOOK_AGENT_SKILL
    assert not is_reserved(name)  # never the shipped skill's name, nor a library's


def test_library_names() -> None:
    assert library_name(None) == "book-library"
    name = library_name(["b", "a", "a"])
    assert name == library_name(["a", "b"])  # the set of books, not the order named
    assert re.fullmatch(r"book-library-[0-9a-f]{10}", name) and is_host_safe(name)
    assert name != library_name(["a", "c"])


def test_books_never_take_a_library_name() -> None:
    assert book_name("library") != "book-library" and book_name("library").startswith("book-library-")
    taken = book_name("library-" + library_name(["a", "b"]).rsplit("-", 1)[1])
    assert taken != library_name(["a", "b"]) and not is_reserved(taken)
    assert book_name("library-shelf") == "book-library-shelf"  # only the exact shapes are reserved


@settings(max_examples=60)
@given(BOOK_IDS, BOOK_IDS)
def test_long_distinct_ids_stay_distinct(a: str, b: str) -> None:
    # Truncated names carry a hash of the full id, so two long ids never collide by cutting.
    if a != b and len(book_name(a)) == 64 and len(book_name(b)) == 64:
        assert book_name(a) != book_name(b)
