"""A library: several registered books searched as one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from book_agent.domain.book.book_refs import ALL_BOOKS, BookRef, parse_book_ref
from book_agent.domain.errors import BookAgentError


@dataclass(frozen=True)
class LibraryMember:
    """One book as the library's indexes hold it."""

    book_id: str
    database_path: Path
    record_count: int
    stamp: str  # what the book's records were built from (manifest and database hashes)


@dataclass(frozen=True)
class LibraryIndexState:
    """What the library's lexical index holds, judged against the stamp asked for. Says
    nothing about where it lives (files, a server's collections)."""

    present: bool  # an index exists, perhaps for other books
    fresh: bool  # it holds exactly the books the expected stamp names, intact
    records: int  # records it holds (0 when absent)
    generation: str | None = None  # the complete generation a reader opens now (None when absent)
    reason: str | None = None  # why it is not fresh (None when it is)
    intact: bool = False  # its integrity checks pass (perhaps stale): it may serve while it cannot be rebuilt
    # how far its frozen statistics are from an exact rebuild's, relative: for BM25 split as
    # book_agent/domain/search/bm25.py splits it, |live average length - frozen one| / frozen one (N and df are
    # live at query time); 0 right after a full build or compaction
    drift: float = 0.0
    # books added or removed since its exact rebuild (0 right after a full build or compaction):
    # what a living index holds beside its base, as segments and filters
    changes: int = 0
    # the books the generation in place holds, as the stamp's `books` names them
    # (`id=stamp;...`; None when the backend cannot say): what a search served in place,
    # while a writer has not yet brought the index to the books registered, can serve
    held: str | None = None


@dataclass(frozen=True)
class VectorIndexState:
    """What a model group's approximate vector index holds, against the stamp asked for."""

    present: bool
    fresh: bool  # built for exactly these books, model and metric, and intact
    vectors: int  # vectors it holds (0 when absent)
    generation: str | None = None  # the complete generation a reader opens now
    reason: str | None = None  # why it is not fresh (None when it is)
    intact: bool = False  # readable as it is (perhaps stale): it may serve the books it holds meanwhile
    # how far the index has drifted from a retrain of its books (a living backend's added and
    # removed rows, the added rows' fit to the trained centroids); 0 right after a full build
    drift: float = 0.0


@dataclass(frozen=True)
class LibraryBackendSetting:
    """Which backend serves the library's indexes, where the choice came from, and the
    backend's own options (the data dir config's `[library.<name>]` table)."""

    name: str
    source: str  # "argument", "environment" (or --library-backend), "config" or "default"
    options: Mapping[str, object] = field(default_factory=dict)


def library_stamp(members: list[LibraryMember], tokenizer_version: str) -> dict[str, str]:
    """The library index's stamp: every member, so a registration or removal makes it stale."""
    return {"books": _books_stamp(members), "tokenizer_version": tokenizer_version}


# A model group with at least this many vectors is searched through an approximate index
# (faiss IVF-SQ8, the best candidates rescored exactly); a smaller one book by book, exactly.
# Measured on 2 cores (issue 29; tools/bench/library/bench_library_vectors.py's 100k library, the eval sets'
# real queries): exact search (8-bit pre-filter, certified) takes ~4.4 ms at 100k vectors of 384
# dimensions, the index ~2.0 ms with 128 probes, finding .992 of exact search's top 50 (.995 of
# its top 10; the hybrid top 10 overlaps .996) where 64 probes found .977 (so indexes under 150k
# vectors probe 128 lists: adapters/book_agent_adapters/library/local/vectors/faiss_training.py). Below it exact search is fast enough and
# needs no index build (seconds) or file. (150,000 until issue 29's measurements.)
APPROXIMATE_MIN_VECTORS = 100_000


def vector_group_stamp(model: str, dimensions: int, metric: str, members: list[LibraryMember]) -> dict[str, str]:
    """A model group's approximate index stamp: its model and metric, and every member (id, hashes)."""
    return {"books": _books_stamp(members), "model": model, "dimensions": str(dimensions), "metric": metric}


def _books_stamp(members: list[LibraryMember]) -> str:
    return ";".join(map(member_key, sorted(members, key=lambda m: m.book_id)))


def member_key(member: LibraryMember) -> str:
    """One member as a stamp's `books` names it: its id and the stamp its records were built from."""
    return f"{member.book_id}={member.stamp}"


def held_members(members: Sequence[LibraryMember], held: str) -> list[str]:
    """The ids of `members` that a generation stamped with `books` = `held` holds as they are now."""
    keys = set(held.split(";"))
    return [m.book_id for m in members if member_key(m) in keys]


@dataclass(frozen=True)
class HostLibrary:
    """A library as an AI host install target (contracts/hosts.md, "Libraries"): the
    reference its MCP server is started with, the books it serves now, and the key variables
    those books are configured with (names, never values)."""

    ref: str  # "@all", or the ids sorted and comma-joined: `mcp REF` serves exactly these
    book_ids: tuple[str, ...]  # the registered books it serves now (for @all: at planning time)
    everything: bool = False  # @all: books registered later are served too
    auth_envs: tuple[tuple[str, str], ...] = ()  # (book_id, variable NAME) of books that have one


def host_library(ref: str | BookRef, book_ids: Sequence[str] = (),
                 auth_envs: Mapping[str, str | None] | None = None) -> HostLibrary:
    """The library `ref` names (`@all`, or a list `a,b`) as a host install target.
    `book_ids`: for @all, the books registered now (what the plan shows); a list serves its own ids.
    A list must name two or more different books (one book is installed by its id)."""
    parsed = ref if isinstance(ref, BookRef) else parse_book_ref(ref)
    envs = tuple(sorted((b, v) for b, v in (auth_envs or {}).items() if v))
    if parsed.everything:
        return HostLibrary(ALL_BOOKS, tuple(sorted(dict.fromkeys(book_ids))), everything=True, auth_envs=envs)
    ids = tuple(sorted(parsed.ids))
    if parsed.single or len(ids) < 2:
        raise BookAgentError("book.bad_ref", "a library names two or more different books (a,b) or @all",
                             details={"ref": parsed.text[:200]},
                             remediation="install one book by its book_id, or name several: a,b (or @all)")
    return HostLibrary(",".join(ids), ids, auth_envs=envs)


@dataclass(frozen=True)
class WriterJob:
    """What is due: `lexical` "build" (bring the index to the books registered) or "compact"
    (the exact rebuild), `vectors` "build" (add the books a group's index lacks) or "retrain"
    (groups drifted past book_agent/services/library/writer.py's RETRAIN_DRIFT, and what `build` does); None: nothing. `key` names the
    library state it was judged on (a failed job is not tried again before that changes)."""

    lexical: str | None
    vectors: str | None
    key: str = ""

    def argv(self) -> list[str]:
        """The job as the child writer's arguments (book_agent/cli/commands/library_writer.py)."""
        return ["--lexical", self.lexical or "none", "--vectors", self.vectors or "none"]
