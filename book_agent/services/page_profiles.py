"""The pages behind a search's hits, for the visual-fallback advice.

A hit whose text says nothing about its page (no caption, no broken maths) may still sit on a
page that draws a figure, sets a formula apart or a table in columns: the book's sources
read that from the page's objects (ports.book.PageProfiles) when the advice asks, one page
a cited hit, kept by the open book. Nothing here reads a page the advice does not ask for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from book_agent.domain.book.book_refs import BookRef
from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.page_profile import PageProfile
from book_agent.ports.book import PageProfiles
from book_agent.services.books import OpenBooks
from book_agent.services.open_book import OpenBook

HitPages = Callable[[Mapping[str, object]], PageProfile | None]


def hit_pages(books: OpenBooks, ref: BookRef, searched: OpenBook | None = None) -> HitPages:
    """The profile of a hit's page: its book is the one searched (`searched`, when the search
    opened it), or (a library) the hit's own `book_id`. None when the book's sources cannot tell
    (an EPUB, a fake, an unreadable page)."""

    opened: dict[str, PageProfiles | None] = {}  # each book opened once a search, and the one
    # searched not again: an open checks its package, and a second check in one process arms the
    # package watch (inotify: ~9 ms of imports a one-shot search never needs)

    def profile(hit: Mapping[str, object]) -> PageProfile | None:
        locator = hit.get("source_locator")
        page = locator.get("page_index") if isinstance(locator, Mapping) else None
        book_id = ref.text if ref.single else hit.get("book_id")
        if isinstance(page, bool) or not isinstance(page, int) or not isinstance(book_id, str):
            return None
        if book_id not in opened:
            try:
                book = searched if searched is not None and book_id == searched.book_id else books.open(book_id)
                opened[book_id] = book.page_profiles
            except BookAgentError:
                opened[book_id] = None
        profiles = opened[book_id]
        return profiles.page_profile(page) if profiles is not None else None

    return profile
