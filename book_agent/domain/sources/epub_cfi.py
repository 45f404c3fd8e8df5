"""EPUB CFI syntax: writing and reading Canonical Fragment Identifiers.

The standard is *EPUB Canonical Fragment Identifiers 1.1* (IDPF Recommended Specification,
5 January 2017, http://idpf.org/epub/linking/cfi/epub-cfi.html; carried over unchanged into
W3C's EPUB 3.3 as https://w3c.github.io/epub-specs/epub33/epubcfi/). What it says and what
this module does (section numbers are the 1.1 text's):

- 2.2 Syntax: `epubcfi(` path [`,` local_path `,` local_path] `)`; a step is `/` integer
  [`[` assertion `]`], integers have no leading zeros, `!` is an indirection into the
  document an itemref names, `:` integer a character offset.
- 2.3 Escaping: `^ [ ] ( ) , ; =` inside an assertion are escaped with a circumflex.
- 3.1.1 Steps: even indices are child elements (2 the first), odd ones the chunks of
  character data between them (1 before the first element); comments and processing
  instructions are not content. The first step names the `spine` element of the package
  document, the second its `itemref`.
- 3.1.2 ID assertion: a step to an element that has an id MUST carry it in brackets.
- 3.1.4 Character offset: zero-based, between UTF-16 code units of the chunk.
- 3.4 Simple ranges: a parent path, then the start's and the end's local paths.

Only character offsets are written or read: temporal (`~`) and spatial (`@`) offsets address
audio, video and images, which a text passage never is, and are refused when read
(`source.cfi_invalid`). Text location assertions after an offset are parsed and kept, not
written. Why no library: the Python packages that claim CFIs (epubcfi 0.0.x, a parser without
generation, pinned to lxml < 6) neither produce a CFI from a text position nor are kept up;
the readers' libraries (epub.js, Readium) are JavaScript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from book_agent.domain.errors import BookAgentError

MAX_CFI_CHARS = 4_096  # a real CFI is a few dozen steps; longer input is refused unread
_SPECIAL = "^[](),;="
_INTEGER = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True)
class CfiStep:
    """One `/N[id]` step: N even for an element, odd for a chunk of character data."""

    index: int
    assertion: str | None = None

    def __str__(self) -> str:
        return f"/{self.index}" + (f"[{escape(self.assertion)}]" if self.assertion else "")


@dataclass(frozen=True)
class CfiPoint:
    """A position: the package steps (spine, itemref), the document steps and an offset."""

    package: tuple[CfiStep, ...]
    document: tuple[CfiStep, ...]
    offset: int | None = None


@dataclass(frozen=True)
class ParsedCfi:
    """A parsed CFI: one point, or a range (start and end, each as a whole point)."""

    start: CfiPoint
    end: CfiPoint | None = None  # None: a point, not a range

    @property
    def is_range(self) -> bool:
        return self.end is not None


def escape(value: str) -> str:
    return "".join("^" + ch if ch in _SPECIAL else ch for ch in value)


def _steps(steps: tuple[CfiStep, ...]) -> str:
    return "".join(str(s) for s in steps)


def _local(package: tuple[CfiStep, ...] | None, steps: tuple[CfiStep, ...], offset: int | None) -> str:
    head = (_steps(package) + "!") if package is not None else ""
    return head + _steps(steps) + (f":{offset}" if offset is not None else "")


def format_point(point: CfiPoint) -> str:
    return f"epubcfi({_local(point.package, point.document, point.offset)})"


def format_range(start: CfiPoint, end: CfiPoint) -> str:
    """`epubcfi(parent,start,end)` (3.4): the parent is the longest run of element steps both
    share; each local path keeps at least its text step, so both sides always say where they are."""
    if start.package != end.package:
        raise ValueError("a simple range stays within one content document")
    shared = 0
    limit = min(len(start.document), len(end.document)) - 1  # the terminal steps stay local
    while shared < limit and start.document[shared].index == end.document[shared].index:
        shared += 1
    if shared == 0:  # nothing shared inside the document: the indirection moves into the local paths
        return (f"epubcfi({_steps(start.package)},{_local((), start.document, start.offset)},"
                f"{_local((), end.document, end.offset)})")
    parent = _local(start.package, start.document[:shared], None)
    return (f"epubcfi({parent},{_local(None, start.document[shared:], start.offset)},"
            f"{_local(None, end.document[shared:], end.offset)})")


def cfi_error(value: object, why: str) -> BookAgentError:
    shown = value[:200] if isinstance(value, str) else type(value).__name__
    return BookAgentError(
        "source.cfi_invalid",
        f"not an EPUB CFI this book can follow ({why}): {shown!r}",
        details={"cfi": shown, "why": why},
        remediation="pass a CFI as a locator's epub_cfi gives it, e.g. epubcfi(/6/4!/4/2/1:0) "
                    "(EPUB CFI 1.1: steps, one `!` into the chapter, a character offset)",
    )


class _Reader:
    """A recursive-descent reader of the 2.2 grammar, character offsets only."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def fail(self, why: str) -> BookAgentError:
        return cfi_error(self.text, f"{why} at character {self.pos}")

    def integer(self) -> int:
        match = _INTEGER.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected an integer")
        self.pos = match.end()
        if self.peek().isdigit():
            raise self.fail("an integer has no leading zeros")
        return int(match.group())

    def assertion(self) -> str:
        self.pos += 1  # the "["
        out: list[str] = []
        while True:
            ch = self.peek()
            if not ch:
                raise self.fail("an assertion is not closed")
            self.pos += 1
            if ch == "^":
                nxt = self.peek()
                if not nxt or nxt not in _SPECIAL:
                    raise self.fail("a circumflex escapes only ^ [ ] ( ) , ; =")
                out.append(nxt)
                self.pos += 1
            elif ch == "]":
                return "".join(out)
            elif ch in "[":
                raise self.fail("an unescaped [ inside an assertion")
            else:
                out.append(ch)

    def steps(self) -> list[CfiStep]:
        steps: list[CfiStep] = []
        while self.peek() == "/":
            self.pos += 1
            index = self.integer()
            text = self.assertion() if self.peek() == "[" else None
            steps.append(CfiStep(index, text or None))
        return steps

    def local(self) -> tuple[list[list[CfiStep]], int | None]:
        """Steps split at each `!`, then an optional character offset (and its assertion)."""
        parts = [self.steps()]
        while self.peek() == "!":
            self.pos += 1
            parts.append(self.steps())
        offset = None
        if self.peek() == ":":
            self.pos += 1
            offset = self.integer()
            if self.peek() == "[":
                self.assertion()  # a text location assertion or side bias: read, not needed
        elif self.peek() in ("~", "@"):
            raise self.fail("only character offsets are supported (temporal and spatial offsets address media)")
        return parts, offset


def _split(parts: list[list[CfiStep]], offset: int | None, text: str) -> CfiPoint:
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise cfi_error(text, "a CFI into a chapter has package steps, one `!`, then steps inside the chapter")
    return CfiPoint(tuple(parts[0]), tuple(parts[1]), offset)


def parse_cfi(value: object) -> ParsedCfi:
    """A CFI string (`epubcfi(...)`, optionally after `#` or a file name and `#`) parsed, or
    `source.cfi_invalid` saying what is wrong and where."""
    if not isinstance(value, str) or not value.strip():
        raise cfi_error(value, "a CFI must be a non-empty string")
    if len(value) > MAX_CFI_CHARS:
        raise cfi_error(value, f"longer than {MAX_CFI_CHARS} characters")
    text = value.strip()
    begin = text.find("epubcfi(")
    if begin < 0 or (begin and text[begin - 1] != "#") or not text.endswith(")"):
        raise cfi_error(value, "expected epubcfi(...)")
    reader = _Reader(text[begin + len("epubcfi(") : -1])
    parent, parent_offset = reader.local()
    if reader.peek() != ",":
        if reader.peek():
            raise reader.fail("unexpected character")
        return ParsedCfi(_split(parent, parent_offset, text))
    if parent_offset is not None:
        raise reader.fail("a range's parent path has no offset")
    reader.pos += 1
    first, first_offset = reader.local()
    if reader.peek() != ",":
        raise reader.fail("a range has a parent, a start and an end")
    reader.pos += 1
    second, second_offset = reader.local()
    if reader.peek():
        raise reader.fail("unexpected character")

    def joined(local: list[list[CfiStep]]) -> list[list[CfiStep]]:
        parts = [list(p) for p in parent]
        parts[-1].extend(local[0])
        return parts + [list(p) for p in local[1:]]

    return ParsedCfi(_split(joined(first), first_offset, text), _split(joined(second), second_offset, text))
