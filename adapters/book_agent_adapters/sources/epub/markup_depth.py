"""How deep a markup document nests its elements, found in one linear pass before parsing.

An HTML tree builder spends time in proportion to the depth of its stack of open elements for
many tags (lexbor: 10 s for 60,000 nested <div>s, quadratic), and every later walk keeps a
path per level; so a small file (650 KB) could hold a server for seconds or exhaust its memory.
Documents nested deeper than MAX_DEPTH are refused with `source.original_too_deep` before any
parser sees them. Browsers stop far below the pathological depths too (Blink's HTML parser caps
its tree at 512 levels); real books nest a few dozen.

The scan is a tag tokenizer, not a parser: comments, CDATA, processing instructions and the raw
text of <script>/<style>/<textarea>/<title> are skipped; void elements and `/>` do not nest; an
end tag closes up to its open element (ignored when none is open), and a start tag of an element
HTML closes implicitly (p, li, dt, dd, tr, td, ...) closes the open one of its kind first. So it
is exact for XHTML and an upper bound close to the parse for tag-soup HTML.
"""

from __future__ import annotations

import re
from typing import Any

from book_agent.domain.errors import BookAgentError

MAX_DEPTH = 256
MARKUP_SUFFIXES = (".xhtml", ".html", ".htm", ".xml", ".opf", ".ncx", ".svg", ".smil")
_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:_.-]*)[^<>]*?(/?)>")
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr keygen".split())
_RAW = frozenset(b"script style textarea title xmp".split())
_IMPLIED = frozenset(b"p li dt dd option optgroup tr td th rb rt rtc rp thead tbody tfoot".split())


def markup_depth(data: bytes, limit: int = MAX_DEPTH) -> int:
    """The deepest element nesting in `data`, counted up to `limit + 1` (the scan stops there)."""
    stack: list[bytes] = []
    deepest, pos, size = 0, 0, len(data)
    while pos < size:
        lt = data.find(b"<", pos)
        if lt < 0:
            break
        if data.startswith(b"<!--", lt) or data.startswith(b"<![CDATA[", lt):
            close = b"-->" if data[lt + 2 : lt + 3] == b"-" else b"]]>"
            end = data.find(close, lt + 4)
            if end < 0:
                break
            pos = end + 3
            continue
        tag = _TAG.match(data, lt)
        if tag is None:
            pos = lt + 1  # `<` in text, `<?...?>`, `<!DOCTYPE ...>`: nothing nests
            continue
        pos = tag.end()
        name = tag.group(2).lower()
        if tag.group(1):
            if name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name):]
            continue
        if tag.group(3) or name in _VOID:
            continue
        if name in _RAW:
            end = _raw_end(data, name, pos)
            pos = size if end < 0 else end
            continue
        if name in _IMPLIED and name in stack:
            del stack[len(stack) - 1 - stack[::-1].index(name):]
        stack.append(name)
        deepest = max(deepest, len(stack))
        if deepest > limit:
            break
    return deepest


def _raw_end(data: bytes, name: bytes, pos: int) -> int:
    found = re.compile(rb"</" + re.escape(name), re.IGNORECASE).search(data, pos)
    return found.start() if found else -1


def check_depth(data: bytes, what: str, details: dict[str, Any] | None = None, limit: int = MAX_DEPTH) -> None:
    """Raise `source.original_too_deep` when `data` nests elements deeper than `limit`."""
    depth = markup_depth(data, limit)
    if depth > limit:
        raise BookAgentError(
            "source.original_too_deep",
            f"{what} nests its elements more than {limit} deep, past what this reader parses",
            details={**(details or {}), "what": what, "limit": limit, "bytes": len(data)},
            remediation="rebuild the original with ordinary nesting (real books nest a few dozen levels); "
                        "meanwhile read book.md (`book-agent markdown BOOK` / the read_markdown tool)",
        )
