"""A library's warm-up: its own indexes loaded, as its first search would load them.

A library search uses the library's lexical index and, per model group, its approximate
vector index (or, below 100k vectors, each book's matrix, searched exactly), never a book's
own lexical index. So a library warms up by running one dry library search per vector
dimension its books have (a unit vector, no encoder), after each book's member warm-up
(OpenBook.warm_up_as_member: the encoder, a small book's passages); the lexical index also
starts checking its files in the background (a local index's postings blocks).
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

from book_agent.domain.errors import BookAgentError
from book_agent.services.open_book import unit_vector

if TYPE_CHECKING:
    from book_agent.domain.book.book_refs import BookRef
    from book_agent.services.library.search import Library
    from book_agent.services.library.vectors import ModelGroups


def warm_up_library(library: Library, ref: BookRef, query: str, dry_search: bool = True) -> bool:
    """Open the library's lexical index (True when it opened) and, with `dry_search`, search for
    `query` once per vector dimension (a Chinese book's dry query loads the word segmenter's
    dictionary now rather than at the first Chinese query: OpenBook.dry_query)."""
    searcher, report = library.searcher(ref)
    lexical = searcher.channels.lexical
    check = getattr(getattr(lexical, "index", None), "warm_up", None)  # a remote engine's index has none
    if callable(check):
        check()
    if dry_search:
        groups: ModelGroups = report["groups"]
        for dimensions in sorted({dims for _, dims in groups.groups}) or [0]:
            with suppress(BookAgentError):  # the first real search reports it
                library.search(ref, query, 1, False, unit_vector(dimensions), None)
    return lexical is not None
