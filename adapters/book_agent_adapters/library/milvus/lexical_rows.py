"""The lexical channel's rows: each record as {term id: BM25 document weight}, and what a build
keeps while it writes them (lexical.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryMember
from book_agent.domain.search.bm25 import K1, length_norm
from book_agent_adapters.library.local.lexical.term_counts import BookTerms, book_terms
from book_agent_adapters.library.milvus.prefix_terms import with_prefix_terms
from book_agent_adapters.library.milvus.records import INSERT_BATCH

REBUILD = "run `book-agent prepare @all` to load the library's lexical channel into Milvus"


class Build:
    """One build's working state: the added books' counts and term ids, and the frozen avgdl
    their weights are computed under (set by `_statistics` before any row is written)."""

    def __init__(self) -> None:
        self.counted: dict[str, BookTerms] = {}
        self.tids: dict[str, np.ndarray] = {}
        self.avgdl = 0.0

    def rows_of(self, book_id: str, key: str) -> Any:
        def rows() -> Iterator[list[dict[str, Any]]]:
            yield from sparse_rows(book_id, self.counted[key], self.tids[key], self.avgdl)
        return rows


def counted(terms_dir: Path, member: LibraryMember) -> BookTerms:
    """The member's term counts (cached as the local backend caches them), with the pooled
    counts of its one-character CJK prefixes (prefix_terms.py; never cached: the local
    backend reads the same cache)."""
    try:
        return with_prefix_terms(book_terms(terms_dir, member))
    except (OSError, ValueError) as exc:
        raise BookAgentError("lexical.build_failed", f"book {member.book_id}'s records cannot be read: {exc}",
                             details={"book_id": member.book_id, "path": str(member.database_path)},
                             remediation=REBUILD) from exc
    except Exception as exc:  # sqlite3.Error and kin from a damaged or missing package database
        raise BookAgentError("lexical.build_failed", f"book {member.book_id}'s records cannot be read: {exc}",
                             details={"book_id": member.book_id, "path": str(member.database_path)},
                             remediation=REBUILD) from exc


def sparse_rows(book_id: str, terms: BookTerms, tids: np.ndarray, avgdl: float) -> Iterator[list[dict[str, Any]]]:
    """The book's records as rows: evidence id, length, and {term id: document weight}."""
    norm = length_norm(terms.lengths.astype(np.float64), avgdl)
    order = np.argsort(terms.docs, kind="stable")
    docs = terms.docs[order]
    ids = tids[terms.term_ids[order]]
    freqs = terms.freqs[order].astype(np.float64)
    weights = (freqs * (K1 + 1) / (freqs + norm[docs])).astype(np.float32)
    bounds = np.searchsorted(docs, np.arange(len(terms.record_ids) + 1))
    batch: list[dict[str, Any]] = []
    for doc, record_id in enumerate(terms.record_ids):
        lo, hi = int(bounds[doc]), int(bounds[doc + 1])
        keep = ids[lo:hi] >= 0
        vector = dict(zip(ids[lo:hi][keep].tolist(), weights[lo:hi][keep].tolist(), strict=True))
        batch.append({"evidence": f"{book_id}#{record_id}", "length": int(terms.lengths[doc]), "seq": doc,
                      "vector": vector})
        if len(batch) >= INSERT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def indices(vector: Any) -> list[int]:
    """A sparse vector's term ids, as pymilvus returns it (a dict, or scipy-like rows)."""
    if isinstance(vector, dict):
        return [int(k) for k in vector]
    indices = getattr(vector, "indices", None)
    return [int(i) for i in indices] if indices is not None else []
