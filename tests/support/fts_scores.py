"""What a book's FTS5 sidecar itself scores: the reference the BM25 reimplementations are held to."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from book_agent_adapters.book.lexical.fts_lexical_index import RANK_SQL, match_expression


def fts_scores(sidecar: Path, query: str) -> dict[str, float]:
    """record_id -> FTS5's bm25() for `query` (sign flipped: higher is better), every match."""
    con = sqlite3.connect(sidecar)
    try:
        rows = con.execute(f"SELECT ids.record_id, {RANK_SQL} FROM fts JOIN ids ON ids.rowid = fts.rowid "
                           "WHERE fts MATCH ?", (match_expression(query),)).fetchall()
    finally:
        con.close()
    return {rid: -score for rid, score in rows}
