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
from book_agent.services.books import OpenBooks

HitPages = Callable[[Mapping[str, object]], PageProfile | None]


def hit_pages(books: OpenBooks, ref: BookRef) -> HitPages:
    """The profile of a hit's page: its book is the one searched, or (a library) the hit's own
    `book_id`. None when the book's sources cannot tell (an EPUB, a fake, an unreadable page)."""

    def profile(hit: Mapping[str, object]) -> PageProfile | None:
        locator = hit.get("source_locator")
        page = locator.get("page_index") if isinstance(locator, Mapping) else None
        book_id = ref.text if ref.single else hit.get("book_id")
        if isinstance(page, bool) or not isinstance(page, int) or not isinstance(book_id, str):
            return None
        try:
            profiles = books.open(book_id).page_profiles
        except BookAgentError:
            return None
        return profiles.page_profile(page) if profiles is not None else None

    return profile
