"""The library's lexical channel in Milvus: our own BM25 as sparse vectors, never the engine's.

Each record is a sparse vector over term ids whose values are its BM25 *document weights*,
f (k1 + 1) / (f + k1 (1 - b + b D / avgdl)), from the same term counts as the local impact
index (term_counts.py: FTS5's tokenizer, headings weighted 0.4) under the average length frozen
for the channel's epoch. A query is the sparse vector of its terms' idf (from the term table's
document frequencies at the reader's generation, terms.py), times each term's repeats: the
inner product is then exactly the local index's BM25 sum, and Milvus's SPARSE_INVERTED_INDEX
(drop ratio 0) finds the top k. `book_ids` filters in the engine; statistics stay the library's.

Adding a book writes its rows and its terms' new document frequencies only (ledger.py keeps
the generations); the frozen average drifts from the exact one as books come and go, until a
`compact` writes a new epoch with exact statistics (a first build is one). Milvus's own BM25
function is not used: its statistics are per segment, and its scores differ from ours.

A one-character CJK prefix query (`"c"*`) is scored as FTS5 and the local index score it, one
pooled count under one idf: each record carries a pseudo-term `c*` per CJK first character of its
terms (prefix_terms.py), and the query's prefix is that one dimension.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryIndexState, LibraryMember
from book_agent.domain.records import LexicalHit
from book_agent.domain.search.bm25 import idf
from book_agent.ports import Progress
from book_agent.ports.library import LibraryIndex, LibraryLexicalIndex
from book_agent_adapters.book.runtime_files import build_lock
from book_agent_adapters.library.milvus.engine import MilvusEngine
from book_agent_adapters.library.milvus.lease import Held, WriterLease
from book_agent_adapters.library.milvus.ledger import Ledger
from book_agent_adapters.library.milvus.lexical_rows import REBUILD, Build, counted, indices
from book_agent_adapters.library.milvus.prefix_terms import prefix_term
from book_agent_adapters.library.milvus.records import (
    ChannelSpec,
    Member,
    Plan,
    Pointer,
    build_failed,
    member_key,
    stamp_sha,
)
from book_agent_adapters.library.milvus.terms import SUFFIX, TermTable
from book_agent_adapters.text.fts_terms import FtsTerms

CHANNEL = "lexical"


TIE_DIGITS = 6  # scores equal to this many significant digits are ties (float32 carries ~7)
TIE_MARGIN = 50  # candidates fetched past top_k, so records tied at the cut are ordered as local orders them


def _add_fields(schema: Any, data_type: Any) -> None:
    schema.add_field("length", data_type.INT64)  # the record's length, to subtract it when its book leaves
    schema.add_field("seq", data_type.INT64)  # its place in its book: ties go to book order, then reading order
    schema.add_field("vector", data_type.SPARSE_FLOAT_VECTOR)


def _add_index(index: Any) -> None:
    # inner product over every posting (no drop ratio at build or search): exact sums
    index.add_index("vector", index_type="SPARSE_INVERTED_INDEX", metric_type="IP", params={"drop_ratio_build": 0.0})


# format 2: rows carry the pooled prefix pseudo-terms (prefix_terms.py); format 1's lack them
SPEC = ChannelSpec(CHANNEL, "lex", _add_fields, _add_index, companions=(SUFFIX,), format="book-agent-milvus-lexical-2")


class MilvusLibraryIndex(LibraryIndex):
    def __init__(self, engine: MilvusEngine, prefix: str, terms_dir: Path, lease: WriterLease | None = None) -> None:
        self.engine = engine
        self.ledger = Ledger(engine, prefix, SPEC)
        self.lease = lease or WriterLease(engine, prefix)
        self.terms_dir = terms_dir  # per-book term counts, cached as the local backend caches them

    def state(self, expected: dict[str, str]) -> LibraryIndexState:
        pointer, why = self.ledger.pointer()
        if pointer is None:
            return LibraryIndexState(present=False, fresh=False, records=0, reason=why)
        generation = f"{pointer.collection}@{pointer.generation}"
        if why:
            return LibraryIndexState(present=True, fresh=False, records=0, generation=generation, reason=why)
        if not self.ledger.has_collection(pointer.collection) or \
                not self.ledger.has_collection(pointer.collection + SUFFIX):
            return LibraryIndexState(present=True, fresh=False, records=0, generation=generation,
                                     reason=f"damaged: its collection {pointer.collection} is missing")
        records = int(pointer.extra.get("records", pointer.rows))
        if pointer.stamp_sha != stamp_sha(expected):
            return LibraryIndexState(present=True, fresh=False, records=records, generation=generation,
                                     reason="stale: built for other books", intact=True,
                                     drift=float(pointer.extra.get("drift", 0.0)))
        return LibraryIndexState(present=True, fresh=True, records=records, generation=generation, intact=True,
                                 drift=float(pointer.extra.get("drift", 0.0)))

    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
              wait: bool = True) -> int:
        return self._write(members, expected, progress, full=False, wait=wait)

    def compact(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
                wait: bool = True) -> int:
        """A new epoch with the exact statistics of `members` (scores then equal a first build's)."""
        return self._write(members, expected, progress, full=True, wait=wait)

    def _write(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
               full: bool, wait: bool = True) -> int:
        try:
            self.terms_dir.parent.mkdir(parents=True, exist_ok=True)
            # the data dir's lock: this machine's threads and processes (and the cached term counts);
            # the lease: writers on every machine. wait=False: lexical.build_busy from either
            with build_lock(self.terms_dir.parent, wait=wait), self.lease.held(wait) as lease:
                current = self.state(expected)
                if current.fresh and not full:
                    return current.records
                return self._load(members, expected, progress, full, lease)
        except BookAgentError as exc:
            if exc.code.startswith("engine."):
                raise build_failed("lexical.build_failed", "the library's lexical index", exc) from exc
            raise
        except OSError as exc:  # the data dir's build lock cannot be made
            raise BookAgentError("lexical.build_failed", f"the library's lexical index could not be built: {exc}",
                                 remediation="the data dir must be writable to load the library into Milvus; run "
                                             "`book-agent prepare @all` where it is") from exc

    def _load(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
              full: bool, lease: Held) -> int:
        version = expected.get("tokenizer_version", "")
        build = Build()
        wanted = [Member(m.book_id, f"{m.stamp}|{version}", build.rows_of(m.book_id, member_key(m.book_id,
                         f"{m.stamp}|{version}")), m.record_count) for m in members]
        sources = {w.key: m for w, m in zip(wanted, members, strict=True)}

        def prepare(plan: Plan) -> Mapping[str, Any]:
            for member in plan.added:  # every added book's counts before anything is written
                build.counted[member.key] = counted(self.terms_dir, sources[member.key])
            return self._statistics(plan, build)
        self.ledger.build(wanted, expected, progress, prepare=prepare, full=full, lease=lease)
        pointer, _ = self.ledger.pointer()
        return int(pointer.extra.get("records", 0)) if pointer else 0

    def _statistics(self, plan: Plan, build: Build) -> dict[str, Any]:
        """The new generation's statistics and term ids (the term table written first)."""
        table = TermTable(self.engine, plan.collection)
        if plan.previous is None:
            table.create()
            stats: dict[str, Any] = {"records": 0, "total_length": 0.0, "next_term": 0, "avgdl": 0.0}
        else:
            table.roll_back(plan.previous.generation)
            stats = dict(plan.previous.extra)
        gained: Counter[str] = Counter()
        for member in plan.added:
            terms = build.counted[member.key]
            df = np.bincount(terms.term_ids, minlength=len(terms.terms))
            gained.update({t: int(n) for t, n in zip(terms.terms, df.tolist(), strict=True) if n})
            stats["records"] += len(terms.record_ids)
            stats["total_length"] += float(terms.lengths.sum())
        lost: Counter[int] = Counter()
        removed_records = 0
        for key in plan.removed:
            for batch in self.ledger.rows_of(plan.collection, key, ["vector", "length"]):
                for row in batch:
                    lost.update(indices(row["vector"]))
                    removed_records += 1
                    stats["total_length"] -= float(row["length"])
        stats["records"] -= removed_records
        ids, stats["next_term"] = table.apply(gained, lost, plan.generation, int(stats["next_term"]))
        exact = stats["total_length"] / stats["records"] if stats["records"] else 0.0
        if plan.previous is None or not stats.get("avgdl"):
            stats["avgdl"] = exact  # a new epoch (or a library that was empty): exact, frozen from here on
        # the living library's drift: the share of records added or removed since the epoch's statistics
        # were exact (prepare compacts past 0.2); avgdl_drift: how far the frozen average has moved
        fresh_epoch = plan.previous is None
        stats["churn"] = (0 if fresh_epoch else int(stats.get("churn", 0)) + sum(
            len(build.counted[m.key].record_ids) for m in plan.added) + removed_records)
        stats["drift"] = stats["churn"] / stats["records"] if stats["records"] else 0.0
        stats["avgdl_drift"] = abs(float(stats["avgdl"]) - exact) / exact if exact else 0.0
        build.avgdl = float(stats["avgdl"])
        for member in plan.added:
            terms = build.counted[member.key]
            build.tids[member.key] = np.fromiter((ids.get(t, -1) for t in terms.terms), np.int64, len(terms.terms))
        return stats

    def open(self) -> LibraryLexicalIndex:
        pointer, why = self.ledger.pointer()
        return MilvusLibraryLexical(self.ledger, pointer, why)


class MilvusLibraryLexical(LibraryLexicalIndex):
    """One generation of the lexical channel, open. Safe to share between threads (the query
    stemmer is locked; the client is gRPC's, thread-safe)."""

    def __init__(self, ledger: Ledger, pointer: Pointer | None, why: str) -> None:
        self.ledger = ledger
        self.pointer = pointer if pointer is not None and not why else None
        self.generation = f"{self.pointer.collection}@{self.pointer.generation}" if self.pointer else None
        self._terms = FtsTerms()
        self._lock = threading.Lock()

    def search(self, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        if top_k <= 0 or self.pointer is None or (book_ids is not None and not book_ids):
            return []
        with self._lock:
            words, prefixes = self._terms.query_terms(query)
        if not words and not prefixes:
            return []
        pointer = self.pointer
        records = int(pointer.extra.get("records", pointer.rows))
        if records == 0:
            return []
        try:
            vector = self._query_vector(pointer, records, words, prefixes)
            if not vector:
                return []
            engine = self.ledger.engine
            found = engine.call("lexical search", lambda c: c.search(
                pointer.collection, data=[vector], anns_field="vector", limit=min(int(top_k) + TIE_MARGIN, 16384),
                filter=self.ledger.visible(pointer, book_ids), output_fields=["evidence", "seq"],
                search_params={"metric_type": "IP", "params": {"drop_ratio_search": 0.0}},
                consistency_level="Strong", timeout=engine.settings.timeout_s))
        except BookAgentError as exc:
            if exc.code == "engine.collection_missing":  # the library search rebuilds a damaged index and asks again
                raise BookAgentError("lexical.index_damaged", f"the library's lexical index is damaged: {exc.message}",
                                     details=exc.details, remediation=REBUILD) from exc
            raise
        # records the local index scores equal come back within float32 rounding of each other (the
        # engine sums in its own order): order those as the local index does (book, then reading order)
        ranked = sorted((hit for hit in found[0] if float(hit["distance"]) > 0), key=lambda hit: (
            -float(f"{float(hit['distance']):.{TIE_DIGITS}g}"), str(hit["entity"]["evidence"]).partition("#")[0],
            int(hit["entity"]["seq"])))
        return [LexicalHit(str(hit["entity"]["evidence"]), float(hit["distance"])) for hit in ranked[:top_k]]

    def _query_vector(self, pointer: Pointer, records: int, words: list[str], prefixes: list[str]) -> dict[int, float]:
        """{term id: idf x repeats} at the reader's generation (FTS5 sums a repeated fragment once
        per repetition); a prefix is its pooled pseudo-term's dimension."""
        repeats = Counter([*words, *map(prefix_term, prefixes)])
        found = TermTable(self.ledger.engine, pointer.collection).lookup(repeats, pointer.generation)
        return {tid: float(idf(records, df)) * repeats[term] for term, (tid, df) in found.items()}

    def close(self) -> None:
        with self._lock:
            self._terms.close()
