"""Records of a book's database and the hits that point at them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy costs ~100 ms to import: the lexical path must not pay for it
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]
else:
    Vector = Any


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

    def to_dict(self, include_vector: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
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


@dataclass(frozen=True)
class LexicalHit:
    record_id: str
    score: float  # higher is better (negated BM25)


@dataclass(frozen=True)
class VectorHit:
    record: Record
    score: float


def markdown_span(start: int | None, end: int | None) -> dict[str, int] | None:
    """`{start, end}` character offsets into book.md, or None when unknown."""
    if start is None or end is None:
        return None
    return {"start": int(start), "end": int(end)}


def evidence_id(book_id: str, record_id: str) -> str:
    """Stable and citable: the same book and record always give the same id."""
    return f"{book_id}#{record_id}"
