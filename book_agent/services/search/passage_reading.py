"""The search's passage-reading step: the first fused hits that share their document with
another of them, re-scored by how close the query's words stand in them (book_agent/domain/search/proximity.py,
contracts/fusion.md). A record's document is its heading path (the section it is a passage
of); a record without headings is a document of its own and is never re-scored. A library
reads its hits as one book would (the same heading paths), so a corpus split between books
ranks as the one book holding it.
"""

from __future__ import annotations

from collections.abc import Mapping

from book_agent.domain.records import Record
from book_agent.domain.search.fusion import FusedHit
from book_agent.domain.search.proximity import (
    PROXIMITY_TOP_N,
    PROXIMITY_WEIGHT,
    PROXIMITY_WINDOW,
    pair_proximities,
    proximity_order,
    with_siblings,
)
from book_agent.domain.search.search_results import PassageReading
from book_agent.ports import PassageTerms, RecordSource


def not_read() -> PassageReading:
    """What a result says when no passage was read (no reader, or no query words)."""
    return {"applied": False, "passages_read": 0, "window": PROXIMITY_WINDOW, "weight": PROXIMITY_WEIGHT,
            "top_n": PROXIMITY_TOP_N}


def read_passages(reader: PassageTerms | None, query: str, fused: list[FusedHit], records: Mapping[str, Record]
                  ) -> tuple[list[FusedHit], PassageReading]:
    """The fused ranking with its first PROXIMITY_TOP_N hits re-scored (the rest keep their
    places), and what was done. `records`: at least the first hits' records. No reader: as it was."""
    if reader is None:
        return fused, not_read()
    head = fused[:PROXIMITY_TOP_N]
    found = [records.get(hit.record_id) for hit in head]
    siblings = with_siblings([tuple(r.headings) or None if r is not None else None for r in found])
    texts = [r.text for r, read in zip(found, siblings, strict=True) if read and r is not None]
    reading = not_read()
    reading["passages_read"] = len(texts)
    if not texts:
        return fused, reading
    terms, positions = reader.positions(query, texts)
    if len(terms) < 2:
        return fused, reading
    near = pair_proximities(terms, positions)
    if not any(near):  # no passage holds two of the query's words together: the fused order
        return fused, reading
    read_near = iter(near)
    proximity = [next(read_near) if read and r is not None else 0.0 for r, read in zip(found, siblings, strict=True)]
    order = proximity_order([hit.fused for hit in head], proximity)
    reading["applied"] = True
    return [head[i] for i in order] + fused[PROXIMITY_TOP_N:], reading


def read_first_passages(reader: PassageTerms | None, query: str, fused: list[FusedHit],
                        source: RecordSource) -> list[FusedHit]:
    """`read_passages`'s ranking, the first hits' records fetched from `source` (none without a reader)."""
    if reader is None:
        return fused
    return read_passages(reader, query, fused, source.fetch([hit.record_id for hit in fused[:PROXIMITY_TOP_N]]))[0]
