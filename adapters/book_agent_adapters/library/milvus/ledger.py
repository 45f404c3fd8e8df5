"""Generations of one channel's rows in Milvus, and the pointer record that names the current one.

milvus-lite has no aliases and no collection properties, and an alias alone could not carry a
generation's stamp anyway (moving an alias and writing a stamp are two steps). So each channel
(the lexical index; each model group's vectors) keeps a *pointer record* in the prefix's catalog
collection, one row upserted in one call (a delete and an insert for Milvus: a reader that finds
no row reads again, schema.read_catalog_record):

    pointer|<channel>  ->  {format, collection, generation, stamp_sha, rows, hidden, retired}

Rows live in one collection per channel; each row carries its book's *member* hash (book id
and stamp) and the generation that `added` it. Bringing the channel to a set of members
(`Ledger.build`) inserts the rows of new or changed books only, with `added = G + 1`, marks
the members that left (`removed_at = G + 1`), and then moves the pointer to G + 1. A reader of
generation G sees `added <= G` and not the members `hidden` at G (those that left in the step
to G), so it never sees a half-written generation; the rows of members that left are deleted
at the next build (a reader one generation behind keeps its books until then).

A failed build leaves the pointer at G: the next build first rolls its leftovers back (rows and
member records added after G, removal marks after G). A collection of an older format, or one
that went missing, is replaced by a new collection (a new *epoch*) filled in full; the pointer
then names it and the old one is dropped at the next build.

Catalog rows `member|<collection>|<hash>` record each member: {book_id, stamp, added,
removed_at, rows}.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.progress import Tally
from book_agent.ports import Progress
from book_agent_adapters.library.milvus.engine import MilvusEngine
from book_agent_adapters.library.milvus.lease import Held
from book_agent_adapters.library.milvus.records import (
    ChannelSpec,
    Member,
    Plan,
    Pointer,
    stamp_sha,
)
from book_agent_adapters.library.milvus.schema import (
    CATALOG_VECTOR,
    PAGE,
    QUERY_LIMIT,
    create_catalog,
    create_rows_collection,
    expression,
    read_catalog_record,
)


class Ledger:
    """One prefix's catalog, and one channel's generations in it."""

    def __init__(self, engine: MilvusEngine, prefix: str, spec: ChannelSpec) -> None:
        self.engine = engine
        self.prefix = prefix
        self.spec = spec
        self.catalog = f"{prefix}_catalog"
        self.base = f"{prefix}_{spec.kind}_{hashlib.sha256(spec.name.encode()).hexdigest()[:10]}"
        self.answer_rows, self.page_rows = QUERY_LIMIT, PAGE  # one query's rows at most; an iterator's page

    # -- reading ----------------------------------------------------------------------------
    def pointer(self) -> tuple[Pointer | None, str]:
        """The channel's pointer, or None and why (missing, of another format)."""
        if not self.engine.call("has_collection", lambda c: c.has_collection(self.catalog)):
            return None, "missing: nothing loaded into this Milvus under this prefix"
        # a commit racing this read must not make the channel look never loaded (a search would rebuild it)
        rows, _ = read_catalog_record(self.engine, self.catalog, f"pointer|{self.spec.name}", "read pointer")
        if not rows:
            return None, "missing: this channel was never loaded"
        try:
            body = json.loads(rows[0]["body"])
            if body.get("format") != self.spec.format:
                return Pointer(str(body.get("collection") or ""), int(body.get("generation") or 0), "", 0,
                               format=str(body.get("format"))), f"of another format ({body.get('format')})"
            return Pointer(str(body["collection"]), int(body["generation"]), str(body["stamp_sha"]), int(body["rows"]),
                           tuple(str(h) for h in body.get("hidden") or ()), body.get("retired"),
                           format=self.spec.format, extra=dict(body.get("extra") or {}),
                           committed=float(body.get("committed") or 0.0)), ""
        except (ValueError, KeyError, TypeError) as exc:
            return None, f"unreadable pointer record: {exc}"

    def has_collection(self, name: str) -> bool:
        return bool(self.engine.call("has_collection", lambda c: c.has_collection(name)))

    def visible(self, pointer: Pointer, book_ids: Sequence[str] | None = None) -> str:
        """The filter a reader of `pointer`'s generation searches with."""
        parts = [f"added <= {pointer.generation}"]
        if pointer.hidden:
            parts.append(expression("member not in {h}", h=list(pointer.hidden)))
        if book_ids is not None:
            parts.append(expression("book_id in {b}", b=sorted(set(book_ids))))
        return " and ".join(parts)

    # -- writing ----------------------------------------------------------------------------
    def build(self, members: Sequence[Member], expected: Mapping[str, str], progress: Progress | None,
              prepare: Callable[[Plan], Mapping[str, Any]] | None = None, full: bool = False,
              lease: Held | None = None) -> int:
        """Bring the channel to exactly `members` (see the module docstring); the row count.
        `prepare(plan)` runs before any row is written and returns the pointer's `extra`;
        `full`: a new epoch filled in full (a compaction), whatever is in place; `lease`: the
        writer lease held (lease.py), checked at each batch and read back before the commit.
        A new epoch's collections that fail before the pointer names them are dropped at once
        (a refused or broken build leaks nothing; the generation in place keeps serving)."""
        create_catalog(self.engine, self.catalog)
        current, _ = self.pointer()
        for name in self.stray(current):  # the lease is held: no other writer is filling one now
            self.drop_collection(name)
        epoch_change = full or current is None or current.format != self.spec.format \
            or not self.has_collection(current.collection)
        if not epoch_change:
            assert current is not None
            self._roll_back(current.collection, current.generation)
            self._purge(current.collection, current)
            return self._fill(current.collection, current, self._members(current.collection), members, expected,
                              progress, prepare, lease)
        if current is not None and current.retired:  # an epoch change before the last one's was dropped
            self.drop_collection(current.retired)
        collection = f"{self.base}_{secrets.token_hex(4)}"
        committing = [False]
        try:
            create_rows_collection(self.engine, collection, self.spec.add_vector_field, self.spec.add_vector_index)
            return self._fill(collection, None, {}, members, expected, progress, prepare, lease, committing,
                              retired=current.collection if current is not None and current.collection else None)
        except BaseException:
            if not committing[0]:  # the pointer was never asked to name it: nobody reads it
                self.discard(collection)
            raise

    def _fill(self, collection: str, current: Pointer | None, live: dict[str, dict[str, Any]],
              members: Sequence[Member], expected: Mapping[str, str], progress: Progress | None,
              prepare: Callable[[Plan], Mapping[str, Any]] | None, lease: Held | None,
              committing: list[bool] | None = None, retired: str | None = None) -> int:
        """Write generation G + 1 of `collection` (G: `current`'s, or 0 for a new epoch) and move the pointer."""
        wanted = {m.key: m for m in members}
        added = [m for k, m in wanted.items() if k not in live]
        removed = [k for k in live if k not in wanted]
        tally = Tally(sum(m.count for m in added), progress)  # a book may hold more rows than it said

        def tick(rows: int) -> None:
            if lease is not None:
                lease.check()
            tally.add(rows)

        next_generation = (current.generation if current else 0) + 1
        extra = prepare(Plan(collection, next_generation, current, added, removed)) if prepare else {}
        written = {member.key: self._insert(collection, member, next_generation, tick) for member in added}
        tally.finish()
        rows = sum(int(body["rows"]) for k, body in live.items() if k in wanted) + sum(written.values())
        member_rows = [self._member_row(collection, m.key, {"book_id": m.book_id, "stamp": m.stamp,
                                                            "added": next_generation, "removed_at": None,
                                                            "rows": written[m.key]}) for m in added]
        member_rows += [self._member_row(collection, k, {**live[k], "removed_at": next_generation}) for k in removed]
        if lease is not None:  # the commit (member records, then the pointer) is the lease holder's only
            lease.confirm()
        if member_rows:
            self.engine.call("write members", lambda c: c.upsert(self.catalog, member_rows,
                                                                 timeout=self.engine.settings.timeout_s))
        # no flush: Milvus rate-limits it, and rows are durable in its log once inserted; readers
        # of a generation this young read Strong (engine.read_level), so they see all its rows
        pointer = Pointer(collection, next_generation, stamp_sha(expected), rows, tuple(removed), retired,
                          format=self.spec.format, extra=extra, committed=time.time())
        if committing is not None:
            committing[0] = True
        self._write_pointer(pointer)
        return rows

    def discard(self, collection: str) -> None:
        """Drop a new epoch's collections no pointer names (its build failed before the commit), best
        effort: the server may refuse this too, and the next build drops what is left (`stray`)."""
        with contextlib.suppress(BookAgentError):
            self.drop_collection(collection)

    def stray(self, pointer: Pointer | None) -> list[str]:
        """The channel's collections neither `pointer` nor its retired epoch names (a killed writer's)."""
        keep = {pointer.collection, pointer.retired} if pointer else set()
        names = self.engine.call("list collections", lambda c: c.list_collections(timeout=self.engine.settings.timeout_s))
        return sorted(n for n in names if n.startswith(self.base + "_") and n not in keep
                      and not any(n == k + suffix for k in keep if k for suffix in self.spec.companions))

    def _insert(self, collection: str, member: Member, generation: int, tick: Callable[[int], None]) -> int:
        count = 0
        for batch in member.rows():
            if not batch:
                continue
            rows = [{**row, "book_id": member.book_id, "member": member.key, "added": generation} for row in batch]
            self.engine.call("insert rows", lambda c, rows=rows: c.insert(  # type: ignore[misc]
                collection, rows, timeout=max(60.0, self.engine.settings.timeout_s)), idempotent=False)
            count += len(rows)
            tick(len(rows))
        return count

    def _roll_back(self, collection: str, generation: int) -> None:
        """Undo what a build that failed after generation `generation` left: its rows, its member
        records, its removal marks."""
        self.engine.call("roll back rows", lambda c: c.delete(collection, filter=f"added > {generation}",
                                                              timeout=self.engine.settings.timeout_s))
        every = self._members(collection, include_removed=True)
        doomed = [self._key(collection, k) for k, b in every.items() if int(b["added"]) > generation]
        if doomed:
            self.engine.call("roll back members", lambda c: c.delete(self.catalog, ids=doomed,
                                                                     timeout=self.engine.settings.timeout_s))
        unmarked = [self._member_row(collection, k, {**b, "removed_at": None}) for k, b in every.items()
                    if int(b["added"]) <= generation and b.get("removed_at") is not None
                    and int(b["removed_at"]) > generation]
        if unmarked:
            self.engine.call("roll back removals", lambda c: c.upsert(self.catalog, unmarked,
                                                                      timeout=self.engine.settings.timeout_s))

    def _purge(self, collection: str, current: Pointer) -> None:
        """Delete the rows of members that left at or before the current generation (no reader
        of it sees them), their records, and a collection an epoch change retired."""
        every = self._members(collection, include_removed=True)
        gone = [k for k, b in every.items() if b.get("removed_at") is not None
                and int(b["removed_at"]) <= current.generation]
        if gone:
            self.engine.call("purge rows", lambda c: c.delete(collection, filter=expression("member in {g}", g=gone),
                                                              timeout=self.engine.settings.timeout_s))
            self.engine.call("purge members", lambda c: c.delete(
                self.catalog, ids=[self._key(collection, k) for k in gone], timeout=self.engine.settings.timeout_s))
        if current.retired and current.retired != collection:
            self.drop_collection(current.retired)

    def drop_collection(self, name: str) -> None:
        for each in (name, *(name + suffix for suffix in self.spec.companions)):
            if self.has_collection(each):
                self.engine.call("drop collection", lambda c, each=each: c.drop_collection(  # type: ignore[misc]
                    each, timeout=self.engine.settings.timeout_s))
        stale = self._members(name, include_removed=True)
        if stale:
            self.engine.call("drop members", lambda c: c.delete(
                self.catalog, ids=[self._key(name, k) for k in stale], timeout=self.engine.settings.timeout_s))

    def _members(self, collection: str, include_removed: bool = False) -> dict[str, dict[str, Any]]:
        """Member hash -> record, for `collection` (live ones only unless `include_removed`)."""
        found: dict[str, dict[str, Any]] = {}
        prefix = f"member|{collection}|"
        for row in self._catalog_rows(expression("channel == {c} and kind == \"member\"", c=collection)):
            body = json.loads(row["body"])
            if include_removed or body.get("removed_at") is None:
                found[str(row["key"]).removeprefix(prefix)] = body
        return found

    def catalog_members(self, pointer: Pointer) -> list[dict[str, Any]]:
        """The member records of `pointer`'s collection, removed ones too (`{key, body}` rows), as
        a reader of its generation reads them (engine.read_level)."""
        return list(self._catalog_rows(expression("channel == {c} and kind == \"member\"", c=pointer.collection),
                                       self.engine.settings.read_level(pointer.committed)))

    def rows_of(self, collection: str, member: str, fields: list[str]) -> Iterator[list[dict[str, Any]]]:
        """A member's rows, in batches (a removed book's own terms, read back to subtract them)."""
        iterator = self.engine.call("read rows", lambda c: c.query_iterator(
            collection, batch_size=PAGE, filter=expression("member == {m}", m=member), output_fields=fields,
            timeout=self.engine.settings.timeout_s))
        try:
            while batch := self.engine.call("read rows", lambda c: iterator.next()):
                yield list(batch)
        finally:
            iterator.close()

    def _catalog_rows(self, where: str, level: str = "Strong") -> Iterable[dict[str, Any]]:
        """The catalog's rows matching `where`. One query when they fit in one answer (the
        common case); past that, a query iterator (pages by key: no offset, so no 16,384-row
        ceiling). Readers of a settled generation read Bounded (engine.read_level); writers Strong."""
        first = self.engine.call("read catalog", lambda c: c.query(
            self.catalog, filter=where, output_fields=["key", "body"], limit=self.answer_rows, consistency_level=level,
            timeout=self.engine.settings.timeout_s))
        if len(first) < self.answer_rows:
            yield from first
            return
        iterator = self.engine.call("read catalog", lambda c: c.query_iterator(
            self.catalog, batch_size=self.page_rows, filter=where, output_fields=["key", "body"], consistency_level=level,
            timeout=self.engine.settings.timeout_s))
        try:
            while page := self.engine.call("read catalog", lambda c: iterator.next()):
                yield from page
        finally:
            iterator.close()

    def _key(self, collection: str, member: str) -> str:
        return f"member|{collection}|{member}"

    def _member_row(self, collection: str, member: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"key": self._key(collection, member), "channel": collection, "kind": "member",
                "body": json.dumps(dict(body)), "v": CATALOG_VECTOR}

    def _write_pointer(self, pointer: Pointer) -> None:
        row = {"key": f"pointer|{self.spec.name}", "channel": self.spec.name, "kind": "pointer",
               "body": pointer.body(), "v": CATALOG_VECTOR}
        self.engine.call("move pointer", lambda c: c.upsert(self.catalog, [row], timeout=self.engine.settings.timeout_s))
