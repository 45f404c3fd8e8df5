"""Checks of every row of index.sqlite's `records` table, at inspect/init.

The reader (adapters/book_agent_adapters/book/vectors/sqlite_records.py) turns a bad field into a default so a search never
crashes; that would hide a broken package behind hits without a `kind` or with empty text.
So each row is held to the contract here, once, before the book is registered: record_id a
unique non-empty string, seq a unique integer, text a string, headings a JSON array of
strings, md_start/md_end integers in order (or NULL), source a JSON object whose `kind`
matches the original and carries its place (`page_index` / `href`). Findings are counted per
reason with a few record ids each, so a million bad rows make one short diagnostic.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from book_agent.domain.diagnostics import Diagnostic

BATCH = 2000
SAMPLE = 10
REL = "index.sqlite"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json(raw: Any) -> Any:
    if not isinstance(raw, str):
        return _INVALID
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return _INVALID


_INVALID = object()


def _headings_problem(raw: Any) -> str | None:
    value = _json(raw)
    if value is _INVALID:
        return "headings is NULL or not JSON" if raw is None or isinstance(raw, str) else "headings is not text"
    if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
        return "headings is not a JSON array of strings"
    return None


def _source_problem(raw: Any, kind: str | None) -> str | None:
    value = _json(raw)
    if value is _INVALID:
        return "source is NULL or not JSON"
    if not isinstance(value, dict):
        return "source is not a JSON object"
    found = value.get("kind")
    if found not in ("pdf", "epub"):
        return "source.kind is not pdf or epub"
    if kind is not None and found != kind:
        return f"source.kind is {found}, the original is {kind}"
    if found == "pdf" and not (_is_int(value.get("page_index")) and value["page_index"] >= 0):
        return "source.page_index is not a non-negative integer"
    if found == "epub" and not (isinstance(value.get("href"), str) and value["href"]):
        return "source.href is not a non-empty string"
    start, end = value.get("char_start"), value.get("char_end")
    if (start is not None or end is not None) and not _span_ok(start, end):
        return "source.char_start/char_end are not integers with 0 <= start <= end"
    return None


def _span_ok(start: Any, end: Any) -> bool:
    if start is None or end is None:
        return (start is None or (_is_int(start) and start >= 0)) and (end is None or (_is_int(end) and end >= 0))
    return _is_int(start) and _is_int(end) and 0 <= start <= end


def _row_problems(row: tuple[Any, ...], kind: str | None) -> list[str]:
    record_id, seq, text, headings, md_start, md_end, source = row
    problems: list[str] = []
    if not isinstance(record_id, str) or not record_id:
        problems.append("record_id is not a non-empty string")
    if not _is_int(seq):
        problems.append("seq is not an integer")
    if not isinstance(text, str):
        problems.append("text is NULL" if text is None else "text is not text")
    problems += [p for p in (_headings_problem(headings), _source_problem(source, kind)) if p]
    if not _span_ok(md_start, md_end):
        problems.append("md_start/md_end are not integers with 0 <= start <= end")
    return problems


def check_records(con: sqlite3.Connection, original_kind: str | None) -> list[Diagnostic]:
    """Diagnostics for the records table (which must exist with its columns)."""
    found: dict[str, list[Any]] = {}  # reason -> [count, sample ids]
    cursor = con.execute("SELECT record_id, seq, text, headings, md_start, md_end, source FROM records")
    while rows := cursor.fetchmany(BATCH):
        for row in rows:
            for problem in _row_problems(tuple(row), original_kind):
                entry = found.setdefault(problem, [0, []])
                entry[0] += 1
                if len(entry[1]) < SAMPLE:
                    entry[1].append(str(row[0]))
    out: list[Diagnostic] = []
    if found:
        total = sum(count for count, _ in found.values())
        first, (count, ids) = next(iter(found.items()))
        out.append(Diagnostic(
            "package.record_invalid",
            f"{REL}: {total} record field(s) break the format, e.g. {first} ({count}x, record {ids[0]!r})",
            "error", {"path": REL, "problems": {k: {"count": c, "record_ids": s} for k, (c, s) in found.items()}},
        ))
    out += duplicates(con, "records", "record_id", "package.record_id_duplicate")
    out += duplicates(con, "records", "seq", "package.record_seq_duplicate")
    return out


def duplicates(con: sqlite3.Connection, table: str, column: str, code: str) -> list[Diagnostic]:
    # the package's own schema may lack the UNIQUE constraints of the contract: check the rows
    sql = (f"SELECT {column}, count(*) FROM {table} WHERE {column} IS NOT NULL "
           f"GROUP BY {column} HAVING count(*) > 1")
    rows = con.execute(sql + f" LIMIT {SAMPLE}").fetchall()
    if not rows:
        return []
    (count,) = con.execute(f"SELECT count(*) FROM ({sql})").fetchone()
    values = [str(value) for value, _ in rows]
    return [Diagnostic(
        code, f"{REL}: {count} {column} value(s) occur more than once in {table}, e.g. {values[0]!r}",
        "error", {"path": REL, "table": table, "column": column, "count": int(count), "values": values},
    )]


def original_kind(media_type: Any) -> str | None:
    """pdf/epub from the manifest's media_type (None when unknown: then kind is not compared)."""
    return {"application/pdf": "pdf", "application/epub+zip": "epub"}.get(str(media_type))
