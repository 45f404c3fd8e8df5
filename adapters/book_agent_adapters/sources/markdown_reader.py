"""Reading the package's book.md (by record span, character range or heading) and SKILL.md.

BookAgent only delegates here: `read_markdown(package, ...)` and `read_skill(package)`.
Offsets are Python str indices into book.md, as in the records' md_start/md_end. Headings
are ATX headings (`#` .. `######`) outside fenced code blocks; a heading's section runs to
the next heading of the same or a higher level. The text of a file is cached by
(path, size, mtime), so repeated reads of a large book.md cost a dict lookup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError

MAX_CONTEXT_CHARS = 20_000
MAX_RANGE_CHARS = 200_000
MAX_SKILL_BYTES = 1_000_000
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    start: int  # offset of the heading line
    body_start: int  # offset just after the heading line


def _bad(code: str, message: str, remediation: str, **details: Any) -> BookAgentError:
    return BookAgentError(code, message, details=details, remediation=remediation)


@lru_cache(maxsize=8)
def _load(path: str, size: int, mtime_ns: int) -> tuple[str, tuple[Heading, ...]]:
    text = Path(path).read_text(encoding="utf-8")
    headings: list[Heading] = []
    offset, fenced = 0, False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _ATX.match(line.rstrip("\r\n"))):
            headings.append(Heading(len(m.group(1)), (m.group(2) or "").strip(), offset, offset + len(line)))
        offset += len(line)
    return text, tuple(headings)


def load_markdown(path: Path | None) -> tuple[str, tuple[Heading, ...]]:
    if path is None or not Path(path).is_file():
        raise _bad("markdown.missing", "the package has no book.md", "inspect the package: book-agent inspect PACKAGE",
                   path=str(path) if path else None)
    try:
        st = Path(path).stat()
        return _load(str(path), st.st_size, st.st_mtime_ns)
    except (OSError, UnicodeDecodeError) as exc:
        raise _bad("markdown.unreadable", f"book.md cannot be read: {exc}", "validate the package",
                   path=str(path)) from exc


def heading_path(headings: tuple[Heading, ...], offset: int) -> list[str]:
    """Titles of the headings enclosing offset, outermost first."""
    stack: list[Heading] = []
    for h in headings:
        if h.start > offset:
            break
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
    return [h.title for h in stack]


def _int_or_none(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad("markdown.range_invalid", f"{name} must be an integer, not {value!r}",
                   "pass character offsets into book.md", **{name: value})
    return value


def read_markdown(
    package: PackageInfo,
    record_span: tuple[int | None, int | None] | None = None,
    record_id: str | None = None,
    start: int | None = None,
    end: int | None = None,
    heading: str | None = None,
    context_chars: int = 500,
) -> dict[str, Any]:
    """One of: a record's span with context, a character range [start, end), a heading's section."""
    modes = [m for m, on in (("record", record_id is not None or record_span is not None),
                             ("range", start is not None or end is not None),
                             ("heading", heading is not None)) if on]
    if len(modes) != 1:
        raise _bad("markdown.request_invalid", "give exactly one of: a record, a start/end range, a heading",
                   "e.g. `book-agent markdown BOOK --record ID` (or --start 0 --end 2000, or --heading 'Chapter 1'); "
                   "the read_markdown tool takes record_id, start/end or heading", modes=modes)
    if isinstance(context_chars, bool) or not isinstance(context_chars, int) or not 0 <= context_chars <= MAX_CONTEXT_CHARS:
        raise _bad("markdown.context_invalid", f"context_chars must be 0..{MAX_CONTEXT_CHARS}, not {context_chars!r}",
                   "use the default 500", context_chars=context_chars)
    text, headings = load_markdown(package.markdown_path)
    out: dict[str, Any] = {"book_id": package.book_id, "mode": modes[0], "markdown_chars": len(text)}
    if modes[0] == "heading":
        out.update(_section(text, headings, heading))
        return out
    if modes[0] == "record":
        s, e = record_span or (None, None)
        if s is None or e is None:
            raise _bad("markdown.span_unknown", f"record {record_id!r} has no known span in book.md",
                       "read the record itself (`book-agent read BOOK RECORD_ID` / read_entry) or its original "
                       "(`book-agent locate`, then `book-agent source` / locate_source, then read_source)",
                       record_id=record_id)
        out["record_id"] = record_id
    else:
        s, e = start if start is not None else 0, end if end is not None else len(text)
    s, e = _int_or_none("start", s), _int_or_none("end", e)
    assert s is not None and e is not None
    if not 0 <= s <= e <= len(text):
        raise _bad("markdown.range_invalid", f"range {s}..{e} does not fit book.md ({len(text)} characters)",
                   f"use offsets from 0 to {len(text)} with start <= end", start=s, end=e, markdown_chars=len(text))
    if e - s > MAX_RANGE_CHARS:
        raise _bad("markdown.range_invalid", f"range {s}..{e} is longer than {MAX_RANGE_CHARS} characters",
                   f"read at most {MAX_RANGE_CHARS} characters at a time", start=s, end=e)
    out.update(
        markdown_span={"start": s, "end": e}, text=text[s:e],
        context_before=text[max(0, s - context_chars) : s], context_after=text[e : e + context_chars],
        context_chars=context_chars, headings=heading_path(headings, s),
    )
    return out


def _norm(title: str) -> str:
    return " ".join(title.casefold().split())


def outline(headings: tuple[Heading, ...], limit: int = 30) -> list[str]:
    """Titles of the book's top levels of headings, in order, at most `limit` of them: the
    deepest level that still fits (a book's chapter list rather than its first 20 sub-sections)."""
    levels = sorted({h.level for h in headings})
    chosen: list[str] = []
    for depth in range(1, len(levels) + 1):
        titles = [h.title for h in headings if h.level in levels[:depth]]
        if chosen and len(titles) > limit:
            break
        chosen = titles[:limit]
    return chosen


def _section(text: str, headings: tuple[Heading, ...], wanted: Any) -> dict[str, Any]:
    if not isinstance(wanted, str) or not wanted.strip():
        raise _bad("markdown.request_invalid", "heading must be non-empty text", "pass a heading's title")
    key = _norm(wanted.lstrip("#"))
    matches = [h for h in headings if _norm(h.title) == key] or [h for h in headings if key in _norm(h.title)]
    if not matches:
        some = outline(headings)
        listed = "; ".join(repr(t) for t in some) if some else "(book.md has no headings)"
        more = f" (showing {len(some)} of {len(headings)})" if len(some) < len(headings) else ""
        raise _bad("markdown.heading_not_found", f"no heading matches {wanted!r}; headings{more}: {listed}",
                   "pass one of the listed headings (or a part of one), or search first and read a hit's record",
                   heading=wanted, some_headings=some, heading_count=len(headings))
    h = matches[0]
    after = [x for x in headings if x.start > h.start and x.level <= h.level]
    end = after[0].start if after else len(text)
    truncated = end - h.start > MAX_RANGE_CHARS
    end = min(end, h.start + MAX_RANGE_CHARS)
    return {
        "heading": h.title, "level": h.level, "markdown_span": {"start": h.start, "end": end},
        "text": text[h.start : end], "truncated": truncated, "headings": heading_path(headings, h.start),
        "other_matches": [{"heading": m.title, "start": m.start} for m in matches[1:11]],
    }


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Top-level `key: value` pairs of a YAML front matter block, and the body after it."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta: dict[str, str] = {}
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return meta, "".join(lines[i + 1 :])
        if line[:1] not in (" ", "\t", "#") and ":" in line:
            key, _, value = line.partition(":")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            meta[key.strip()] = value
    return {}, text  # never closed: not front matter


def read_skill(package: PackageInfo) -> dict[str, Any]:
    path = package.skill_path
    if path is None or not Path(path).is_file():
        raise _bad("skill.missing", "the package has no SKILL.md", "inspect the package: book-agent inspect PACKAGE",
                   path=str(path) if path else None)
    try:
        if Path(path).stat().st_size > MAX_SKILL_BYTES:
            raise _bad("skill.too_large", f"SKILL.md is larger than {MAX_SKILL_BYTES} bytes", "check the package", path=str(path))
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _bad("skill.unreadable", f"SKILL.md cannot be read: {exc}", "validate the package", path=str(path)) from exc
    meta, body = parse_front_matter(text)
    extra = [e.get("path") for e in (package.archive_manifest or {}).get("extra_files") or [] if isinstance(e, dict)]
    return {
        "book_id": package.book_id, "path": str(path), "name": meta.get("name"),
        "description": meta.get("description"), "front_matter": meta, "body": body, "text": text,
        "extra_files": [p for p in extra if isinstance(p, str)],
    }

