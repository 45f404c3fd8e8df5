"""Library ports: indexes over many books at once, owning their statistics.

A *library backend* provides both roles (`LibraryBackend`): the lexical index and the
approximate vector indexes. The local one keeps files under the data dir (SQLite + numpy
postings, faiss); one living in a server (Milvus, OpenSearch, Postgres) fits the same
contract: nothing here names a file, a lock or a folder. A backend is chosen by a setting
and found through the entry-point group `book_agent.library_backends` (contracts/library.md,
"Library backends"); `book_agent.testing` has the contract suites every backend passes.

The write side is *bring the index to these members*: `build(members, expected)` leaves the
index holding exactly `members`, stamped `expected` (each member's stamp names what its
records were built from). A living backend adds and removes only the members whose stamps
changed, in a new generation, at the cost of those books (BM25 split as book_agent/domain/search/bm25.py
splits it: document-side weights under an average length frozen per generation, idf from the
live document frequencies at query time); `compact(members, expected)` writes the exact
rebuild, which every sequence of builds converges to (`state().drift` says how far the frozen
statistics are from it: 0 right after a compaction). Either way readers keep the complete
generation they opened until they close it (`reader.generation` names it), writers are
serialised by the backend (a file lock, a server's transaction), and a writer asked not to
wait (`wait=False`, what a search asks) gives up at once with `lexical.build_busy` while
another one writes, so a search serves the generation in place instead of waiting.
`state().generation` names the generation a new reader gets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from book_agent.domain.records import LexicalHit, Vector
from book_agent.ports.storage import Progress, VectorStore

if TYPE_CHECKING:  # types only: the root defines its library proxies on every start (bootstrap.py)
    from book_agent.domain.library import (
        LibraryIndexState,
        LibraryMember,
        VectorIndexState,
        WriterJob,
    )

Stamp = dict[str, str]  # what an index must have been built from (domain/library.py makes them)


@runtime_checkable
class LibraryLexicalIndex(Protocol):
    """One open generation of the library's lexical index. Safe to share between threads."""

    generation: str | None  # the generation this reader serves (None: an empty, never built index)

    def search(self, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        """BM25 with the whole library's statistics, best first, at most `top_k` (none for
        `top_k` <= 0); record ids are `book_id#record_id`; `book_ids` narrows the hits, never
        the statistics (a narrowed hit scores as in the whole). Any query text is safe (never
        parsed as query syntax). Raises BookAgentError (`lexical.query_failed`)."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class LibraryIndex(Protocol):
    """The library's lexical index: derived data, brought up to date from the books."""

    def state(self, expected: Stamp) -> LibraryIndexState:
        """What is in place, fresh when it was built for exactly `expected` and is intact."""
        ...
    def build(self, members: Sequence[LibraryMember], expected: Stamp, progress: Progress | None,
              wait: bool = True) -> int:
        """Make the index hold exactly `members` (see the module docstring); returns its record
        count. When it is already fresh for `expected` (another writer just built it) nothing is
        rebuilt and the generation stays. A living backend adds the new members and removes the
        gone ones (a changed stamp: both), costing about those books, and may compact when its
        statistics drifted too far. A build that fails leaves the previous generation in place
        and raises BookAgentError (`lexical.build_failed`); with `wait=False`, one that would
        wait for another writer raises `lexical.build_busy` at once."""
        ...
    def compact(self, members: Sequence[LibraryMember], expected: Stamp, progress: Progress | None,
                wait: bool = True) -> int:
        """The exact rebuild for `members` (statistics of exactly these records, `drift` 0): what
        `prepare @all --full` runs and what builds converge to; scores then equal a fresh index's.
        Same errors as `build`; the previous generation serves until it is done."""
        ...
    def open(self) -> LibraryLexicalIndex:
        """A reader of the newest complete generation."""
        ...


@runtime_checkable
class LibraryVectorIndex(Protocol):
    """One generation of a model group's approximate index, open (its books' rows rescored
    exactly). Safe to share between threads."""

    generation: str | None  # the generation this reader serves
    books: Mapping[str, str]  # the books it holds: book id -> the member stamp their rows were built from

    def search(self, query_vector: Vector, depth: int, book_ids: Sequence[str] | None = None
               ) -> list[tuple[str, float]]:
        """(`book_id#record_id`, score) best first, at most `depth`. Candidates come from the
        approximate index; each score is then computed exactly against the book's own row
        (the cosine or dot product its VectorStore.search_ids would give). `book_ids` keeps
        only those books' records (None: every book it holds). Raises BookAgentError:
        `query.vector_invalid` for a vector of other dimensions, `vector.index_unusable` when
        the index no longer matches its books (the caller then searches exactly)."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class LibraryVectorIndexes(Protocol):
    """Approximate vector indexes of the library's model groups, one per (model, dimensions):
    derived data, brought up to date from the books' own vectors.

    `stores` are the group's books' vector stores by book id; their `load()` gives the rows
    the index is built from and rescored against. The write side is the lexical index's
    (module docstring): `build` brings a group to `stores` at the cost of the books that changed
    (a living backend adds the new books' rows to its trained index and filters the gone ones,
    in a new generation), `compact` is the full rebuild (retrain) builds converge to, and
    `state().drift` says how far the index has drifted from it."""

    min_vectors: int  # a group holding fewer vectors is searched exactly, book by book

    def state(self, model: str, dimensions: int, expected: Stamp) -> VectorIndexState:
        """What is in place for the group; an unreadable or altered index is not fresh (nor intact)."""
        ...
    def build(self, model: str, dimensions: int, expected: Stamp, stores: Mapping[str, VectorStore],
              progress: Progress | None, wait: bool = True) -> int:
        """Make the group's index hold exactly the rows of `stores`; returns its vector count; a
        fresh index is left as it is (another writer just built it). Raises BookAgentError
        (`vector.index_build_failed`, `vector.index_unavailable` when the engine is missing; with
        `wait=False`, `vector.index_busy` at once while another writer holds the library); the
        previous generation then stays in place."""
        ...
    def compact(self, model: str, dimensions: int, expected: Stamp, stores: Mapping[str, VectorStore],
                progress: Progress | None, wait: bool = True) -> int:
        """The full rebuild of the group for `stores` (drift 0): what `prepare @all --full` runs and
        what builds converge to; searches then give a fresh index's results. Same errors as `build`."""
        ...
    def open(self, model: str, dimensions: int, expected: Stamp, stores: Mapping[str, VectorStore],
             in_place: bool = False) -> LibraryVectorIndex:
        """The index built for `expected`; with `in_place`, the generation in place whatever books
        it holds (a search while a writer is busy: its `books` say which, the caller searches the
        others exactly). Raises BookAgentError (`vector.index_unreadable` when there is none or
        it cannot be read, `vector.index_stale` when it was built for other books,
        `vector.index_unavailable`)."""
        ...


class LibraryWriterProcess(Protocol):
    """Runs a long-running server's library writer jobs (book_agent/services/library/writer.py) out of the
    server's process, so a compaction's memory and CPU stay out of it (the local one: a child at
    low priority, the adapters' library/child_writer.py)."""

    def run(self, job: WriterJob) -> None:
        """Run `job` to its end and wait; raises BookAgentError when it fails."""
        ...

    def stop(self) -> None:
        """End the job under way, if any: it leaves the previous generation, as any killed writer."""
        ...


@dataclass(frozen=True)
class LibraryBackend:
    """What a library backend's factory returns (`factory(data_dir, setting) -> LibraryBackend`,
    registered in the entry-point group `book_agent.library_backends`)."""

    name: str
    lexical: LibraryIndex
    vectors: LibraryVectorIndexes
