"""The lexical channel's term table in Milvus: each term's id (the sparse vectors' dimension)
and its document frequency, versioned by generation.

A build writes a new version (`gen` = the generation being written) only of the terms whose
document frequency its added and removed books change, so adding a book costs its own
vocabulary. A reader of generation G takes each term's latest version with `gen <= G`: the
statistics of the generation it opened, even while a later build writes. Ids never change
(a new term takes the next id, kept in the pointer), so the rows already written stay valid.
Versions no reader can need (older than the newest at or below G) go when the term is next
written; a failed build's versions (`gen > G`) are rolled back by the next build.

Collection `<rows collection>_terms`: key (`<gen>:<term>`), term, tid, df, gen, and the constant
vector Milvus wants in every collection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from book_agent_adapters.library.milvus.engine import MilvusEngine, import_pymilvus
from book_agent_adapters.library.milvus.schema import (
    CATALOG_VECTOR,
    PAGE,
    QUERY_LIMIT,
    expression,
    scalar_indexes,
)

SUFFIX = "_terms"
TERM_MAX = 4096  # longer tokens are not indexed (FTS5 never makes them from prose)
LOOKUP_BATCH = 500  # terms per `in` filter
Version = tuple[int, int, int]  # (tid, df, gen)


class TermTable:
    def __init__(self, engine: MilvusEngine, rows_collection: str) -> None:
        self.engine = engine
        self.name = rows_collection + SUFFIX

    def create(self) -> None:
        data_type = import_pymilvus().DataType
        timeout = self.engine.settings.timeout_s

        def create(client: Any) -> None:
            schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("key", data_type.VARCHAR, is_primary=True, max_length=TERM_MAX + 24)
            schema.add_field("term", data_type.VARCHAR, max_length=TERM_MAX)
            schema.add_field("tid", data_type.INT64)
            schema.add_field("df", data_type.INT64)
            schema.add_field("gen", data_type.INT64)
            schema.add_field("v", data_type.FLOAT_VECTOR, dim=len(CATALOG_VECTOR))
            index = client.prepare_index_params()
            index.add_index("v", index_type="FLAT", metric_type="L2")
            scalar_indexes(index, "term", "tid", "gen")
            client.create_collection(self.name, schema=schema, index_params=index, consistency_level="Strong",
                                     timeout=max(60.0, timeout))
        self.engine.call("create term table", create)

    def lookup(self, terms: Iterable[str], generation: int, level: str = "Strong") -> dict[str, tuple[int, int]]:
        """term -> (tid, df) at `generation`, for the terms it holds (df 0 ones left out), read
        at consistency `level` (a reader's: engine.read_level)."""
        latest = self._latest(self._versions(sorted(set(terms)), generation, level), generation)
        return {t: (tid, df) for t, (tid, df, _) in latest.items() if df > 0}

    def apply(self, added: Mapping[str, int], removed: Mapping[int, int], generation: int, next_tid: int
              ) -> tuple[dict[str, int], int]:
        """Write version `generation` of every term `added` (term -> records gained) or `removed`
        (tid -> records lost) touch; returns the added terms' ids and the next free id."""
        names = sorted(t for t in added if len(t) <= TERM_MAX)
        versions = self._versions(names, generation - 1)
        by_tid = self._versions_by_tid(sorted(set(removed) - {v[0] for vs in versions.values() for v in vs}),
                                       generation - 1)
        versions.update(by_tid)
        latest = self._latest(versions, generation - 1)
        ids: dict[str, int] = {}
        rows: list[dict[str, Any]] = []
        doomed: list[str] = []
        tid_of = {tid: term for term, (tid, _, _) in latest.items()}
        touched = set(names) | {tid_of[t] for t in removed if t in tid_of}
        for term in sorted(touched):
            tid, df, _ = latest.get(term, (-1, 0, 0))
            if tid < 0:
                tid, next_tid = next_tid, next_tid + 1
            ids[term] = tid
            df += added.get(term, 0) - removed.get(tid, 0)
            rows.append({"key": f"{generation}:{term}", "term": term, "tid": tid, "df": max(df, 0), "gen": generation,
                         "v": CATALOG_VECTOR})
            keep = latest.get(term, (0, 0, -1))[2]  # the version readers of the current generation use
            doomed += [f"{g}:{term}" for _, _, g in versions.get(term, []) if g != keep]
        for start in range(0, len(rows), PAGE):
            batch = rows[start:start + PAGE]
            self.engine.call("write terms", lambda c, batch=batch: c.upsert(  # type: ignore[misc]
                self.name, batch, timeout=max(60.0, self.engine.settings.timeout_s)))
        for start in range(0, len(doomed), PAGE):
            keys = doomed[start:start + PAGE]
            self.engine.call("drop old terms", lambda c, keys=keys: c.delete(  # type: ignore[misc]
                self.name, ids=keys, timeout=self.engine.settings.timeout_s))
        return {t: ids[t] for t in names}, next_tid

    def roll_back(self, generation: int) -> None:
        """Drop the versions a failed build wrote after `generation`."""
        self.engine.call("roll back terms", lambda c: c.delete(self.name, filter=f"gen > {generation}",
                                                               timeout=self.engine.settings.timeout_s))

    def _versions(self, terms: list[str], generation: int, level: str = "Strong") -> dict[str, list[Version]]:
        found: dict[str, list[Version]] = {}
        for start in range(0, len(terms), LOOKUP_BATCH):
            batch = [t for t in terms[start:start + LOOKUP_BATCH] if len(t) <= TERM_MAX]
            if batch:
                self._collect(expression("term in {t}", t=batch) + f" and gen <= {generation}", found, level)
        return found

    def _versions_by_tid(self, tids: list[int], generation: int) -> dict[str, list[Version]]:
        found: dict[str, list[Version]] = {}
        for start in range(0, len(tids), LOOKUP_BATCH):
            self._collect(f"tid in {tids[start:start + LOOKUP_BATCH]} and gen <= {generation}", found)
        return found

    def _collect(self, where: str, found: dict[str, list[Version]], level: str = "Strong") -> None:
        # a batch of LOOKUP_BATCH terms holds at most a few versions each: one query, under its limit
        rows = self.engine.call("read terms", lambda c: c.query(
            self.name, filter=where, output_fields=["term", "tid", "df", "gen"], limit=QUERY_LIMIT,
            consistency_level=level, timeout=self.engine.settings.timeout_s))
        for row in rows:
            found.setdefault(str(row["term"]), []).append((int(row["tid"]), int(row["df"]), int(row["gen"])))

    @staticmethod
    def _latest(versions: Mapping[str, list[Version]], generation: int) -> dict[str, Version]:
        out: dict[str, Version] = {}
        for term, each in versions.items():
            usable = [v for v in each if v[2] <= generation]
            if usable:
                out[term] = max(usable, key=lambda v: v[2])
        return out
