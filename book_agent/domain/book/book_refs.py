"""Book references: one book id, a comma-separated list of ids (`a,b`), or `@all`.

A single id keeps the one-book behaviour and result shape exactly; a list or `@all` is a
library search. `@all` means every book registered at the time of the call.
"""

from __future__ import annotations

from typing import NamedTuple

from book_agent.domain.errors import BookAgentError

ALL_BOOKS = "@all"
MAX_REF_CHARS = 10_000


class BookRef(NamedTuple):
    """A parsed book reference: one id, several, or `@all` (the library)."""

    text: str
    ids: tuple[str, ...]  # the ids named, duplicates dropped, in order (empty for @all)
    everything: bool = False
    duplicates: tuple[str, ...] = ()  # ids named more than once (dropped, reported)
    library: bool = True  # False for one plain book id: today's one-book search and result shape

    @property
    def single(self) -> bool:
        return not self.library


def library_of(book_ids: list[str]) -> BookRef:
    """A library reference to exactly these books (a library server narrowing its search)."""
    ids = tuple(dict.fromkeys(book_ids))
    return BookRef(",".join(ids), ids)


def parse_book_ref(ref: object) -> BookRef:
    if not isinstance(ref, str) or not ref.strip() or len(ref) > MAX_REF_CHARS:
        raise _bad(ref, "a book reference is a book_id, a comma-separated list of them, or @all")
    text = ref.strip()
    if text == ALL_BOOKS:
        return BookRef(text, (), everything=True)
    if "," not in text:
        return BookRef(ref, (ref,), library=False)  # an id is taken as it is (the registry says if it exists)
    items = [item.strip() for item in text.split(",")]
    if any(not item for item in items):
        raise _bad(ref, "a list of books has an empty item (two commas, or one at an end)")
    if ALL_BOOKS in items:
        raise _bad(ref, "@all stands alone: it already means every registered book")
    seen: dict[str, None] = {}
    duplicates = [item for item in items if item in seen or seen.setdefault(item, None)]
    return BookRef(text, tuple(seen), duplicates=tuple(dict.fromkeys(duplicates)))


def _bad(ref: object, message: str) -> BookAgentError:
    shown = ref if isinstance(ref, str) and len(ref) <= 200 else type(ref).__name__
    return BookAgentError("book.bad_ref", message, details={"ref": shown},
                          remediation="pass a registered book_id (`book-agent list`), `a,b`, or @all")


def one_book(book_ref: str) -> str:
    """`book_ref` when it names one book; a list or @all is refused where one book is read."""
    if book_ref == ALL_BOOKS or "," in book_ref:
        raise BookAgentError("book.bad_ref", f"this reads one book, not a library ({book_ref[:200]!r})",
                             details={"ref": book_ref[:200]},
                             remediation="give one book_id (a search hit's book_id); a,b and @all are "
                             "for search, eval, prepare, mcp and host install")
    return book_ref
