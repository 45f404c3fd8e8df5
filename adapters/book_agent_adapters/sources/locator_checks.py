"""Input checking for locate/read_source: hits, records, locators, max_chars, reading windows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_MAX_CHARS, MAX_CHARS_LIMIT

MAX_QUOTE_CHARS = 100_000


def locator_error(message: str, details: dict[str, Any] | None = None) -> BookAgentError:
    return BookAgentError(
        "source.locator_invalid",
        message,
        details=details,
        remediation="pass a locator from `book-agent locate` / the locate_source tool (or a search hit's source_locator)",
    )


def check_max_chars(max_chars: Any) -> int:
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 1 <= max_chars <= MAX_CHARS_LIMIT:
        raise BookAgentError(
            "source.max_chars_invalid",
            f"max_chars must be an integer from 1 to {MAX_CHARS_LIMIT}, not {max_chars!r}",
            details={"max_chars": max_chars, "limit": MAX_CHARS_LIMIT},
            remediation=f"use the default {DEFAULT_MAX_CHARS} (`--max-chars` / max_chars), or read a long page in several windows",
        )
    return max_chars


def optional_int(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise locator_error(f"{key} must be an integer, not {value!r}", {key: value})
    return value


def check_book(expected: str | None, data: dict[str, Any]) -> None:
    given = data.get("book_id")
    if given is not None and expected is not None and given != expected:
        raise BookAgentError(
            "source.wrong_book",
            f"this locator belongs to book {given!r}, not {expected!r}",
            details={"locator_book_id": given, "book_id": expected},
            remediation=(f"read it from book {given!r} (`book-agent source {given} --locator-json FILE` / the read_source "
                         f"tool), or locate the passage in {expected!r} first (`book-agent locate` / locate_source)"),
        )


def check_span(start: int | None, end: int | None, length: int) -> tuple[int, int] | None:
    if start is None and end is None:
        return None
    if start is None or end is None or not 0 <= start <= end <= length:
        raise locator_error(
            f"char_start/char_end {start!r}..{end!r} do not fit the text ({length} characters)",
            {"char_start": start, "char_end": end, "text_chars": length},
        )
    return start, end


def reading_window(length: int, span: tuple[int, int] | None, max_chars: int) -> tuple[int, int]:
    """[lo, hi) of at most max_chars characters, centred on span when there is one."""
    if length <= max_chars:
        return 0, length
    if span is None:
        return 0, max_chars
    start, end = span
    if end - start >= max_chars:
        return start, start + max_chars
    lo = max(0, start - (max_chars - (end - start)) // 2)
    hi = min(length, lo + max_chars)
    return max(0, hi - max_chars), hi


def word_window(text: str, lo: int, hi: int, span: tuple[int, int] | None) -> tuple[int, int]:
    """[lo, hi) narrowed to whole words at a cut edge (a window that starts or ends inside a
    word moves to the word's far side), never into the span, by at most 40 characters."""
    a, b = (span if span is not None else (hi, lo))
    if 0 < lo < len(text) and _in_word(text, lo):
        stop = min(a, lo + 40)
        while lo < stop and _in_word(text, lo):
            lo += 1
    if 0 < hi < len(text) and _in_word(text, hi):
        stop = max(b, hi - 40, lo)
        while hi > stop and _in_word(text, hi):
            hi -= 1
    return lo, hi


def _in_word(text: str, at: int) -> bool:
    """Whether a cut at `at` splits a word (two letters or digits of a spaced script meet)."""
    left, right = text[at - 1], text[at]
    return left.isalnum() and right.isalnum() and not (_cjk(left) or _cjk(right))


def _cjk(ch: str) -> bool:
    return "\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\ufaff"


def _source(raw: Any) -> dict[str, Any]:
    try:
        source = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        source = {}
    return source if isinstance(source, dict) else {}


def _headings(raw: Any) -> list[str]:
    try:
        headings = json.loads(raw) if raw else []
    except (TypeError, ValueError):
        return []
    return [h for h in headings if isinstance(h, str)] if isinstance(headings, list) else []


class RecordLookup:
    """Records by id from the package's index.sqlite, read-only.

    A connection per lookup (about 0.1 ms): holding one would leave an unclosed connection
    to the garbage collector whenever a caller forgets close(), and a ResourceWarning with it.
    """

    def __init__(self, database_path: Path | None) -> None:
        self.path = database_path

    def get(self, record_id: Any) -> dict[str, Any]:
        if not isinstance(record_id, str) or not record_id:
            raise BookAgentError("source.record_not_found", f"record id {record_id!r} is not a string id",
                                 details={"record_id": record_id}, remediation="pass a record_id from a search hit")
        try:
            rows = self._records("WHERE record_id = ?", (record_id,))
        except UnicodeEncodeError:  # undecodable bytes (a lone surrogate): no UTF-8 id matches
            rows = []
        if not rows:
            raise BookAgentError("source.record_not_found", f"no record {record_id!r} in this book",
                                 details={"record_id": record_id}, remediation="pass a record_id from a search hit")
        return rows[0]

    def all(self) -> list[dict[str, Any]]:
        """Every record as `get` gives it, in reading order (seq)."""
        return self._records("ORDER BY seq", ())

    def _records(self, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        """The records `SELECT ... FROM records {where}` finds; a missing or unreadable
        database is `source.database_unreadable`."""
        import sqlite3
        from contextlib import closing

        from book_agent_adapters.files.sqlite_readonly import connect_readonly

        if self.path is None or not Path(self.path).is_file():
            raise BookAgentError("source.database_unreadable", "the package has no index.sqlite",
                                 details={"path": str(self.path) if self.path else None},
                                 remediation="inspect the package: book-agent inspect PACKAGE")
        try:
            with closing(connect_readonly(self.path)) as con:
                rows = con.execute(f"SELECT record_id, text, md_start, md_end, source, headings FROM records {where}",
                                   params).fetchall()
        except sqlite3.Error as exc:
            raise BookAgentError("source.database_unreadable", f"index.sqlite cannot be read: {exc}",
                                 details={"path": str(self.path)},
                                 remediation="validate the package: book-agent inspect PACKAGE") from exc
        return [{"record_id": r[0], "text": r[1], "md_start": r[2], "md_end": r[3], "source": _source(r[4]),
                 "headings": _headings(r[5])} for r in rows]

    def page_labels(self) -> dict[int, str]:
        """{page_index: page_label} as the records' sources give them (first record per page
        wins); {} when the database or SQLite's JSON functions are unavailable."""
        import sqlite3
        from contextlib import closing

        from book_agent_adapters.files.sqlite_readonly import connect_readonly

        if self.path is None or not Path(self.path).is_file():
            return {}
        labels: dict[int, str] = {}
        try:
            with closing(connect_readonly(self.path)) as con:
                rows = con.execute(
                    "SELECT json_extract(source, '$.page_index'), json_extract(source, '$.page_label') FROM records"
                    " WHERE json_valid(source) AND json_extract(source, '$.page_label') IS NOT NULL ORDER BY rowid"
                ).fetchall()
        except sqlite3.Error:
            return {}
        for page, label in rows:
            if isinstance(page, int) and label not in (None, ""):
                labels.setdefault(page, str(label))
        return labels

    def close(self) -> None:
        """Nothing to release (kept so callers can treat it like the other sources)."""
