"""In-memory parts of one fake book: records, a word-overlap index, Markdown (see memory.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.query_runtime_spec import QueryRuntimeSpecDict
from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import LexicalHit, Record
from book_agent.domain.sources.source_results import MarkdownSlice, Skill
from book_agent.ports import (
    BookParts,
    LexicalIndex,
    MarkdownReader,
    QueryVectorizer,
    RecordSource,
    Reranker,
    SourceAndPages,
    VectorStore,
)


class ShelvedBook(Protocol):
    """A fake package's contents (memory.FakeBook is one)."""

    records: list[Record]
    skill: str


class Shelf(Protocol):
    """What the parts read of the fake package store (memory.MemoryPackages is one): named
    here, so that this module does not import the module that imports it."""

    def book(self, root: Path) -> ShelvedBook: ...
    def by_database(self, database: Path) -> ShelvedBook: ...


class Sidecars(Protocol):
    """What the parts read of the fake runtime store (memory.MemoryRuntime is one)."""

    sidecars: dict[Path, dict[str, str]]


class MemoryRecords(RecordSource):
    def __init__(self, records: Sequence[Record]) -> None:
        self.by_id = {r.record_id: r for r in records}

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Record]:
        return {i: self.by_id[i] for i in record_ids if i in self.by_id}

    def get(self, record_id: str) -> Record:
        if record_id not in self.by_id:
            raise BookAgentError("record.not_found", f"no record {record_id!r}")
        return self.by_id[record_id]

    def close(self) -> None:
        pass


class WordOverlapIndex(LexicalIndex):
    """Scores a record by how many of the query's words it holds (a stand-in for BM25)."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.words = {r.record_id: set(_words(r.text)) for r in records}

    def search(self, query: str, top_k: int) -> list[LexicalHit]:
        wanted = set(_words(query))
        scored = [(len(wanted & words), rid) for rid, words in self.words.items() if wanted & words]
        return [LexicalHit(rid, float(score)) for score, rid in sorted(scored, key=lambda s: (-s[0], s[1]))[:top_k]]

    def close(self) -> None:
        pass


class MemoryBookParts(BookParts):
    """Records and a word-overlap index for each fake book; no vectors, reranker or sources."""

    def __init__(self, packages: Shelf, runtime: Sidecars | None = None) -> None:
        self.packages = packages
        self.runtime = runtime
        self.opened: list[str] = []

    def records(self, package: PackageInfo) -> RecordSource:
        self.opened.append(f"records:{package.book_id}")
        return MemoryRecords(self.packages.book(package.root).records)

    def lexical_index(self, sidecar_path: Path) -> LexicalIndex:
        self.opened.append(f"lexical:{sidecar_path}")
        database = Path((self.runtime.sidecars[sidecar_path] if self.runtime else {})["database"])
        return WordOverlapIndex(self.packages.by_database(database).records)

    def vector_store(self, package: PackageInfo, runtime_dir: Path, database_sha256: str | None) -> VectorStore:
        raise AssertionError("fake books have no vectors")

    def query_runtime(self, spec: QueryRuntimeSpecDict, config: RuntimeConfig, cache_dir: Path) -> QueryVectorizer:
        raise AssertionError("fake books have no vectors")

    def reranker(self, config: RuntimeConfig, runtime_dir: Path) -> Reranker | None:
        if config.reranker.provider != "none":
            raise BookAgentError("rerank.unknown_provider", f"no fake reranker {config.reranker.provider!r}")
        return None

    def sources(self, package: PackageInfo, runtime_dir: Path) -> SourceAndPages:
        raise BookAgentError("source.original_missing", "fake books have no original")


class MemoryMarkdown(MarkdownReader):
    def __init__(self, packages: Shelf) -> None:
        self.packages = packages

    def read_markdown(self, package: PackageInfo, *, record_span: tuple[int | None, int | None] | None,
                      record_id: str | None, start: int | None, end: int | None,
                      heading: str | None, context_chars: int) -> MarkdownSlice:
        text = "\n\n".join(r.text for r in self.packages.book(package.root).records)
        return {"book_id": str(package.book_id), "mode": "range", "text": text[start or 0:end], "record_id": record_id}

    def read_skill(self, package: PackageInfo) -> Skill:
        skill = self.packages.book(package.root).skill
        return {"book_id": str(package.book_id), "path": "SKILL.md", "name": None, "description": None,
                "front_matter": {}, "body": skill, "text": skill, "extra_files": []}


def _words(text: str) -> Iterator[str]:
    return (w.lower() for w in re.findall(r"\w+", text))
