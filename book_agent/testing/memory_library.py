"""In-memory fakes of the library's roles and of a book's vector store (no files).

    books = MemoryLibraryBooks()                       # database path -> records, as packages hold them
    member = books.member("b0", records, stamp="v1")   # a LibraryMember whose records it serves
    agent = build_agent(tmp, library=MemoryLibraryIndex(books), library_vectors=MemoryLibraryVectors())

MemoryLibraryIndex is BM25 (k1 1.2, b 0.75, FTS5's idf floor) over lower-cased words with the
library's statistics; MemoryLibraryVectors searches each book's store exactly. Both keep one
generation per build and hand readers the generation they opened, as the ports require.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.book.runtime_states import RecordPlace, StoreInspection
from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryIndexState, LibraryMember, VectorIndexState
from book_agent.domain.records import LexicalHit, Record, Vector, VectorHit
from book_agent.ports import Progress, VectorStore
from book_agent.ports.library import (
    LibraryIndex,
    LibraryLexicalIndex,
    LibraryVectorIndex,
    LibraryVectorIndexes,
)

K1, B, MIN_IDF = 1.2, 0.75, 1e-6
_generations = itertools.count(1)


class MemoryLibraryBooks:
    """The records of the books the fakes index, by the database path a member names."""

    def __init__(self) -> None:
        self.records: dict[Path, list[Record]] = {}

    def member(self, book_id: str, records: Sequence[Record], stamp: str) -> LibraryMember:
        path = Path("/memory") / book_id / stamp / "index.sqlite"
        self.records[path] = list(records)
        return LibraryMember(book_id, path, len(records), stamp)

    def records_of(self, member: LibraryMember) -> list[Record]:
        if member.database_path not in self.records:
            raise BookAgentError("lexical.build_failed", f"cannot read the records of {member.book_id}",
                                 remediation="check that the book's package is readable")
        return self.records[member.database_path]


@dataclass(frozen=True)
class _Postings:
    stamp: dict[str, str]
    generation: str
    words: dict[str, Counter[str]]  # evidence id -> word counts
    lengths: dict[str, int]


class MemoryLibraryIndex(LibraryIndex):
    def __init__(self, books: MemoryLibraryBooks) -> None:
        self.books = books
        self.current: _Postings | None = None

    def state(self, expected: dict[str, str]) -> LibraryIndexState:
        if self.current is None:
            return LibraryIndexState(present=False, fresh=False, records=0, reason="missing")
        fresh = _matches(self.current.stamp, expected)
        return LibraryIndexState(True, fresh, len(self.current.lengths), self.current.generation,
                                 None if fresh else "stale: built for other books", intact=True,
                                 held=self.current.stamp.get("books"))

    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
              wait: bool = True) -> int:
        if self.current is not None and _matches(self.current.stamp, expected):
            return len(self.current.lengths)
        return self.compact(members, expected, progress)

    def compact(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
                wait: bool = True) -> int:
        """Every build is exact here (statistics computed at query time): a compaction is a rebuild."""
        words: dict[str, Counter[str]] = {}
        for member in members:
            for record in self.books.records_of(member):
                words[f"{member.book_id}#{record.record_id}"] = Counter(_words(record.text, *record.headings))
        self.current = _Postings(dict(expected), str(next(_generations)), words,
                                 {key: sum(c.values()) for key, c in words.items()})
        if progress:
            progress(len(words), len(words))
        return len(words)

    def open(self) -> LibraryLexicalIndex:
        return MemoryLibraryLexical(self.current or _Postings({}, "0", {}, {}))


class MemoryLibraryLexical(LibraryLexicalIndex):
    def __init__(self, postings: _Postings) -> None:
        self.postings = postings
        self.generation = postings.generation if postings.stamp else None

    def search(self, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        p = self.postings
        terms = set(_words(query))
        if top_k <= 0 or not terms or not p.lengths:
            return []
        total, average = len(p.lengths), sum(p.lengths.values()) / len(p.lengths)
        frequency = {t: sum(1 for c in p.words.values() if t in c) for t in terms}
        idf = {t: max(math.log((total - n + 0.5) / (n + 0.5)), MIN_IDF) for t, n in frequency.items() if n}
        wanted = None if book_ids is None else set(book_ids)
        scored = []
        for key, counts in p.words.items():
            if wanted is not None and key.partition("#")[0] not in wanted:
                continue
            norm = K1 * (1 - B + B * p.lengths[key] / average)
            score = sum(w * counts[t] * (K1 + 1) / (counts[t] + norm) for t, w in idf.items() if counts[t])
            if score > 0:
                scored.append(LexicalHit(key, score))
        return sorted(scored, key=lambda h: (-h.score, h.record_id))[:top_k]

    def close(self) -> None:
        pass


class MemoryVectorStore(VectorStore):
    """A book's vectors as rows in memory, searched exactly (cosine on unit rows, or dot)."""

    def __init__(self, records: Sequence[Record], matrix: Any, metric: str = "cosine") -> None:
        self.records = list(records)
        self.matrix = np.asarray(matrix, dtype=np.float32)
        self.metric = metric
        self.by_id = {r.record_id: r for r in self.records}

    def inspect(self) -> StoreInspection:
        return {"record_count": len(self.records), "vector_count": len(self.records),
                "dimensions": int(self.matrix.shape[1]), "metric": self.metric, "matrix_loaded": True}

    def validate(self) -> list[Diagnostic]:
        return []

    def get_record(self, record_id: str) -> Record:
        if record_id not in self.by_id:
            raise BookAgentError("record.not_found", f"no record {record_id!r}")
        return self.by_id[record_id]

    def iter_records(self) -> Iterator[Record]:
        return iter(self.records)

    def get_source_metadata(self, record_id: str) -> RecordPlace:
        record = self.get_record(record_id)
        return {"record_id": record.record_id, "seq": record.seq, "headings": list(record.headings),
                "source": dict(record.source), "markdown_span": None}

    def search(self, query_vector: Vector, top_k: int) -> list[VectorHit]:
        return [VectorHit(self.by_id[rid], score) for rid, score in self.search_ids(query_vector, top_k)]

    def search_ids(self, query_vector: Vector, top_k: int) -> list[tuple[str, float]]:
        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query)) if np.isfinite(query).all() else 0.0
        if query.shape != (self.matrix.shape[1],) or norm == 0.0:
            raise BookAgentError("query.vector_invalid", f"the query vector must be {self.matrix.shape[1]} "
                                 "finite numbers, not all zero", remediation="encode the query with the book's model")
        scores = self.matrix @ (query / norm if self.metric == "cosine" else query)
        order = sorted(range(len(self.records)), key=lambda i: (-float(scores[i]), i))[:max(top_k, 0)]
        return [(self.records[i].record_id, float(scores[i])) for i in order]

    def load(self) -> object:
        return self.matrix

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class _Group:
    stamp: dict[str, str]
    generation: str
    stores: dict[str, VectorStore]
    vectors: int


class MemoryLibraryVectors(LibraryVectorIndexes):
    """Each group's "index" is its stores, searched exactly: a fake with exact recall."""

    def __init__(self, min_vectors: int = 1) -> None:
        self.min_vectors = min_vectors
        self.groups: dict[tuple[str, int], _Group] = {}

    def state(self, model: str, dimensions: int, expected: dict[str, str]) -> VectorIndexState:
        group = self.groups.get((model, dimensions))
        if group is None:
            return VectorIndexState(present=False, fresh=False, vectors=0, reason="absent")
        fresh = _matches(group.stamp, expected)
        return VectorIndexState(True, fresh, group.vectors, group.generation,
                                None if fresh else "stale: the group's books changed", intact=True)

    def build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
              progress: Progress | None, wait: bool = True) -> int:
        current = self.groups.get((model, dimensions))
        if current is not None and _matches(current.stamp, expected):
            return current.vectors
        return self.compact(model, dimensions, expected, stores, progress, wait)

    def compact(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
                progress: Progress | None, wait: bool = True) -> int:
        """Every build is exact here: a compaction is a rebuild."""
        vectors = sum(sum(1 for _ in store.iter_records()) for store in stores.values())
        if vectors == 0:
            raise BookAgentError("vector.index_build_failed", "the model group has no searchable vectors",
                                 remediation="search the group exactly")
        self.groups[(model, dimensions)] = _Group(dict(expected), str(next(_generations)), dict(stores), vectors)
        return vectors

    def open(self, model: str, dimensions: int, expected: dict[str, str],
             stores: Mapping[str, VectorStore], in_place: bool = False) -> LibraryVectorIndex:
        group = self.groups.get((model, dimensions))
        if group is None:
            raise BookAgentError("vector.index_unreadable", "there is no index for this model group",
                                 remediation="run `book-agent prepare @all`")
        if not in_place and not _matches(group.stamp, expected):
            raise BookAgentError("vector.index_stale", "the index was built for other books",
                                 remediation="search again: the index is rebuilt when stale")
        return MemoryGroupIndex(group.stores, dimensions, group.generation, _book_stamps(group.stamp))


class MemoryGroupIndex(LibraryVectorIndex):
    def __init__(self, stores: Mapping[str, VectorStore], dimensions: int, generation: str | None = None,
                 books: Mapping[str, str] | None = None) -> None:
        self.stores = dict(stores)
        self.dimensions = dimensions
        self.generation = generation
        self.books = dict(books) if books is not None else {b: "" for b in self.stores}

    def search(self, query_vector: Vector, depth: int, book_ids: Sequence[str] | None = None
               ) -> list[tuple[str, float]]:
        if np.asarray(query_vector).size != self.dimensions:
            raise BookAgentError("query.vector_invalid", f"the query vector must have {self.dimensions} dimensions")
        found = [(f"{book_id}#{rid}", score) for book_id, store in sorted(self.stores.items())
                 if book_ids is None or book_id in book_ids for rid, score in store.search_ids(query_vector, depth)]
        return sorted(found, key=lambda pair: -pair[1])[:max(depth, 0)]

    def close(self) -> None:
        pass


def _book_stamps(stamp: Mapping[str, str]) -> dict[str, str]:
    """Each book's member stamp, from a group stamp's `books` (`id=stamp;...`)."""
    return {b: s for b, sep, s in (item.partition("=") for item in str(stamp.get("books") or "").split(";")) if sep}


def _matches(stamp: Mapping[str, str], expected: Mapping[str, str]) -> bool:
    return all(stamp.get(k) == v for k, v in expected.items())


def _words(*texts: str) -> Iterator[str]:
    return (w.lower() for text in texts for w in re.findall(r"\w+", text))
