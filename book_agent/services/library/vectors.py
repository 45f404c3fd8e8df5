"""A library's vector channel: books grouped by embedding model, each group searched as one.

Cosines of one model compare across books, so a group's hits merge by score as if its books
were one. Different models' scores do not compare: with more than one group, each group's
scores are divided by its best (the fusion's own normalisation), so no model wins by scale.
A query is encoded once per group; a caller's query vector serves only the groups whose
dimensions it matches, and the other books say why their vector channel did not run.

A group is searched book by book, exactly, unless the library hands it an approximate index
(a large group: book_agent/services/library/vector_indexes.py decides, the LibraryVectorIndexes port
holds it); that index's scores are exact too (its candidates are rescored), so the merge is
the same. When the index fails, the group is searched exactly and its description says why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import Vector
from book_agent.domain.search.query_encoding import QueryEncoding
from book_agent.domain.search.search_results import (
    ChannelInfo,
    GroupRun,
    ModelGroupRow,
    QueryRepresentation,
)
from book_agent.domain.search.vector_background import Background, pooled
from book_agent.domain.search.vector_trust import LanguageEvidence
from book_agent.ports import QueryVectorizer
from book_agent.ports.library import LibraryVectorIndex
from book_agent.services.open_book import OpenBook

Ranked = list[tuple[str, float]]


@dataclass(frozen=True)
class Approximate:
    """A model group's approximate index, and the books to keep (None: every book it holds);
    `exact`: books of the group it does not hold yet (added since its generation), searched
    exactly and merged by score (both halves score exactly, so the merge ranks honestly)."""

    index: LibraryVectorIndex
    book_ids: list[str] | None
    exact: tuple[str, ...] = ()


# (model, dimensions, the group's searchable books) -> (its approximate index, or None to search
# it exactly; what the group's description says about that: the index used, or why not)
LookupResult = tuple[Approximate | None, dict[str, Any]]  # the index (None: search exactly) and what to say of it
ApproximateLookup = Callable[[str, int, list[OpenBook]], LookupResult]


class ModelGroups:
    def __init__(self, books: dict[str, OpenBook], approximate: ApproximateLookup | None = None) -> None:
        self.groups: dict[tuple[str, int], list[OpenBook]] = {}
        self._notes: dict[str, str] = {}
        self._approximate = approximate
        self._searched: dict[tuple[str, int], dict[str, Any]] = {}  # how each group was searched
        for book in books.values():
            manifest = book.package.vector_manifest or {}
            if not manifest:
                self._notes[book.book_id] = "no vectors: lexical channel only"
                continue
            key = (str(manifest.get("model")), int(manifest.get("dimensions") or 0))
            self.groups.setdefault(key, []).append(book)

    def notes(self) -> dict[str, str]:
        return dict(self._notes)

    def describe(self) -> list[ModelGroupRow]:
        # cast: how a group was searched holds the library port's description of its index
        return [cast(ModelGroupRow, {"model": model, "dimensions": dims, "books": [b.book_id for b in books],
                                     **self._searched.get((model, dims), {"search": "none"})})
                for (model, dims), books in sorted(self.groups.items())]

    def language_evidence(self) -> LanguageEvidence | None:
        """The largest group's evidence gates the channel (exact when there is one model)."""
        if not self.groups:
            return None
        books = max(self.groups.values(), key=len)
        for book in books:
            _, runtime, evidence, problem = book.vector_parts
            if problem is None and runtime is not None:
                return evidence
        return None

    def search(self, query: str, depth: int, query_vector: Sequence[float] | None
               ) -> tuple[list[str], dict[str, float] | None, ChannelInfo, QueryRepresentation, Background | None]:
        """The groups' hits merged (best first), their scores, the channel's info, the query's
        representation, and its background (one group searched exactly: its books' pooled, as
        the one book holding them measures it; else None, and the fusion measures from 0)."""
        merged: Ranked = []
        backgrounds: list[Background | None] = []
        ran: list[GroupRun] = []
        representation: QueryRepresentation = {"kind": "text", "status": "not-encoded"}
        for (model, dims), books in sorted(self.groups.items()):
            found, encoding, background = self._search_group(model, dims, books, query, depth, query_vector)
            if encoding is not None:
                representation = encoding.to_dict(include_vector=False)
            if found is None:
                continue
            backgrounds.append(background)
            ran.append({"model": model, "candidates": len(found), "route": encoding.route if encoding else None,
                        "search": self._searched[(model, dims)]["search"]})
            merged += _normalised(found) if len(self.groups) > 1 else found
        if not ran:
            return [], None, self._not_ran(), representation, None
        merged.sort(key=lambda pair: -pair[1])
        merged = merged[:depth]
        info: ChannelInfo = {"ran": True, "status": representation.get("status", "ok"), "candidates": len(merged),
                             "groups": ran}
        background = backgrounds[0] if len(backgrounds) == 1 else None  # several groups: each over its best
        return [key for key, _ in merged], dict(merged), info, representation, background

    def _search_group(self, model: str, dims: int, books: list[OpenBook], query: str, depth: int,
                      query_vector: Sequence[float] | None
                      ) -> tuple[Ranked | None, QueryEncoding | None, Background | None]:
        if query_vector is not None and len(query_vector) != dims:
            self._note(books, f"not searched by vector: the query vector has {len(query_vector)} dimensions, "
                              f"this book's model {model} has {dims}")
            return None, None, None
        usable = [(b, b.vector_parts) for b in books]
        usable = [(b, parts) for b, parts in usable if parts[0] is not None and parts[3] is None]
        if not usable:
            self._note(books, "vector channel unavailable for this book")
            return None, None, None
        encoding = _encode(usable[0][1][1], query, query_vector)
        if encoding is None or encoding.vector is None:
            reason = (encoding.error.get("message") if encoding and encoding.error else None) or "the query could not be encoded"
            self._note(books, f"vector channel did not run: {reason}")
            return None, encoding, None
        approximate, described = self._lookup(model, dims, [b for b, _ in usable])
        if approximate is not None:
            try:
                found = approximate.index.search(encoding.vector, depth, approximate.book_ids)
            except BookAgentError as exc:
                if exc.code == "query.vector_invalid":
                    raise  # the caller's vector: as exact search would say
                described = {"note": f"{exc.message}: searched exactly"}
            else:
                self._searched[(model, dims)] = {"search": "approximate", **described}
                if approximate.exact:
                    found += _exact([b for b, _ in usable if b.book_id in approximate.exact], encoding.vector, depth)
                    found.sort(key=lambda pair: -pair[1])
                return found[:depth], encoding, _background(usable, encoding.vector)
        self._searched[(model, dims)] = {"search": "exact", **described}
        return _exact([b for b, _ in usable], encoding.vector, depth), encoding, _background(usable, encoding.vector)

    def _lookup(self, model: str, dims: int, books: list[OpenBook]) -> LookupResult:
        """The group's approximate index, or None (search exactly): an index that cannot even be
        looked up (its engine gone between two searches, say) costs the channel nothing but speed."""
        if not self._approximate:
            return None, {}
        try:
            return self._approximate(model, dims, books)
        except BookAgentError as exc:
            return None, {"note": f"{exc.message}: searched exactly", "code": exc.code}

    def _note(self, books: list[OpenBook], note: str) -> None:
        for book in books:
            self._notes[book.book_id] = note

    def _not_ran(self) -> ChannelInfo:
        status = "unavailable" if self.groups else "not-applicable"
        reason = ("no book searched has vectors" if not self.groups
                  else "no book's vector channel could run (see each book's `vector` note)")
        return {"ran": False, "status": status, "reason": reason, "code": "search.no_vectors",
                "remediation": None}


def _exact(books: list[OpenBook], vector: Vector, depth: int) -> Ranked:
    """The books searched exactly, book by book, merged by score (ties in book order)."""
    found: Ranked = []
    for book in books:
        store = book.vector_parts[0]
        assert store is not None  # usable: its store opened
        found += [(f"{book.book_id}#{rid}", score) for rid, score in store.search_ids(vector, depth)]
    found.sort(key=lambda pair: -pair[1])
    return found[:depth]


def _encode(runtime: QueryVectorizer | None, query: str, query_vector: Sequence[float] | None) -> QueryEncoding | None:
    if runtime is None:
        return None
    if query_vector is not None:
        return runtime.accept_query_vector(query_vector)  # a bad vector is the caller's error: it raises
    try:
        return runtime.encode_query(query)
    except BookAgentError:
        return None


def _normalised(found: Ranked) -> Ranked:
    best = max((score for _, score in found), default=0.0)
    return [(key, max(score, 0.0) / best) for key, score in found] if best > 0 else found


def _background(usable: list[tuple[OpenBook, Any]], vector: Vector) -> Background | None:
    """The group's pooled background when the group is small enough for the local backend to
    search it exactly (below APPROXIMATE_MIN_VECTORS): whichever backend answered (an engine
    such as Milvus indexes groups of any size), its books' samples are read then, so every
    backend fuses a small library alike. A larger group: None (no book's matrix is loaded for
    it), and the fusion measures the channel from 0."""
    from book_agent.domain.library import APPROXIMATE_MIN_VECTORS
    from book_agent.services.library.vector_groups import vectors_of

    if sum(vectors_of(book) for book, _ in usable) >= APPROXIMATE_MIN_VECTORS:
        return None
    return pooled([parts[0].background(vector) if parts[0] is not None else None for _, parts in usable])
