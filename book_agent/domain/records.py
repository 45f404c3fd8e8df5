"""Records of a book's database and the hits that point at them."""

# No `from __future__ import annotations`: a TypedDict reads NotRequired at class creation.
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, NotRequired, TypedDict

if TYPE_CHECKING:  # numpy costs ~100 ms to import: the lexical path must not pay for it
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]
else:
    Vector = Any


class MarkdownSpan(TypedDict):
    """Character offsets [start, end) into book.md."""

    start: int
    end: int


class RecordDict(TypedDict):
    """Record.to_dict(): the record as `read` and `locate` take and give it."""

    record_id: str
    seq: int | None
    text: str
    headings: list[str]
    source: dict[str, Any]  # the package database's own source fields (page_index, href, ...)
    markdown_span: MarkdownSpan | None
    vector: NotRequired[list[float]]


@dataclass
class Record:
    """One text record of index.sqlite. `text` is the full chunk text.

    Besides the contract's four fields the core keeps the raw source and offsets:
    reading order (`seq`), heading path, and the character span in book.md.
    """

    record_id: str
    text: str
    source: dict[str, Any] = field(default_factory=dict)
    vector: Vector | None = None
    seq: int | None = None
    headings: list[str] = field(default_factory=list)
    md_start: int | None = None
    md_end: int | None = None

    def with_id(self, record_id: str) -> "Record":
        """The same record under another id (a library's evidence id): a copy sharing its
        values, made in a third of `dataclasses.replace`'s time (a library search makes 20)."""
        return Record(record_id, self.text, self.source, self.vector, self.seq, self.headings,
                      self.md_start, self.md_end)

    def to_dict(self, include_vector: bool = False) -> RecordDict:
        data: RecordDict = {
            "record_id": self.record_id,
            "seq": self.seq,
            "text": self.text,
            "headings": list(self.headings),
            "source": dict(self.source),
            "markdown_span": markdown_span(self.md_start, self.md_end),
        }
        if include_vector and self.vector is not None:
            data["vector"] = [float(x) for x in self.vector]
        return data


class LexicalHit(NamedTuple):
    """Immutable, as a frozen dataclass was, and built in a fifth of its time: a lexical channel
    builds fifty per search (issue 29)."""

    record_id: str
    score: float  # higher is better (negated BM25)


class VectorHit(NamedTuple):
    """A record found by the vector channel, with its similarity (immutable; a NamedTuple, as
    LexicalHit: every search imports this module, and a frozen dataclass costs ~0.5 ms to define)."""

    record: Record
    score: float


def markdown_span(start: int | None, end: int | None) -> MarkdownSpan | None:
    """`{start, end}` character offsets into book.md, or None when unknown."""
    if start is None or end is None:
        return None
    return {"start": int(start), "end": int(end)}


def evidence_id(book_id: str, record_id: str) -> str:
    """Stable and citable: the same book and record always give the same id."""
    return f"{book_id}#{record_id}"


def ids_by_book(evidence_ids: Sequence[str], books: Mapping[str, object]) -> dict[str, list[str]]:
    """Evidence ids (`book_id#record_id`) grouped into each known book's own record ids, in
    order; an id of another book, or without a record part, is left out."""
    wanted: dict[str, list[str]] = {}
    for key in evidence_ids:
        book_id, _, record_id = key.partition("#")
        if book_id in books and record_id:
            wanted.setdefault(book_id, []).append(record_id)
    return wanted
