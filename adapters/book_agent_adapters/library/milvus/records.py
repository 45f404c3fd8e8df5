"""What the Milvus backend records about its channels: the pointer of a channel's current
generation, the members (books) a build brings it to, and what a build plans (ledger.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from book_agent.domain.errors import BookAgentError

FORMAT = "book-agent-milvus-1"  # a pointer of another format names rows this adapter cannot read
INSERT_BATCH = 2000  # rows per insert call (well under the server's 64 MiB message limit at 1024-d)


@dataclass(frozen=True)
class Pointer:
    """The current generation of a channel, as the catalog holds it."""

    collection: str
    generation: int
    stamp_sha: str
    rows: int
    hidden: tuple[str, ...] = ()  # members that left in the step to `generation`
    retired: str | None = None  # the collection an epoch change replaced (dropped at the next build)
    format: str = FORMAT
    extra: Mapping[str, Any] = field(default_factory=dict)  # the channel's own (the lexical statistics)
    committed: float = 0.0  # the writer's wall clock when it moved the pointer here (0: unknown)

    def body(self) -> str:
        return json.dumps({"format": self.format, "collection": self.collection, "generation": self.generation,
                           "stamp_sha": self.stamp_sha, "rows": self.rows, "hidden": list(self.hidden),
                           "retired": self.retired, "extra": dict(self.extra), "committed": self.committed})


@dataclass(frozen=True)
class Plan:
    """What a build is about to do, for a channel's own preparations (the lexical term table)."""

    collection: str
    generation: int  # the generation being written
    previous: Pointer | None  # the generation in place (None: a new epoch, filled in full)
    added: Sequence[Member]
    removed: Sequence[str]  # member hashes leaving


@dataclass(frozen=True)
class Member:
    """A book's rows in a channel: its id and stamp, and a loader of its rows."""

    book_id: str
    stamp: str
    rows: Callable[[], Iterator[list[dict[str, Any]]]]  # batches of {"evidence", "vector"} (and the channel's fields)
    count: int  # rows it is expected to give (for progress)

    @property
    def key(self) -> str:
        return member_key(self.book_id, self.stamp)


def member_key(book_id: str, stamp: str) -> str:
    return hashlib.sha256(f"{book_id}\n{stamp}".encode()).hexdigest()[:24]


def stamp_sha(stamp: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(stamp), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class ChannelSpec:
    """What differs between channels: the rows' vector field and its index."""

    name: str  # "lexical", or "vectors|<model>|<dims>"
    kind: str  # short, for collection names: "lex" or "vec"
    add_vector_field: Callable[[Any, Any], None]  # (schema, DataType)
    add_vector_index: Callable[[Any], None]  # (index params)
    companions: tuple[str, ...] = ()  # suffixes of collections that live and die with a rows collection
    format: str = FORMAT  # what its pointer says of its rows: another format's are replaced by a full load


def build_failed(code: str, what: str, exc: BookAgentError) -> BookAgentError:
    """A build's engine failure under the port's own code, the engine's code in details."""
    return BookAgentError(code, f"{what} could not be loaded into Milvus: {exc.message}",
                          details={**exc.details, "engine_code": exc.code}, remediation=exc.remediation)
