"""Record sizes: whole sentences, within the encoder's token window.

A record is a run of units (an EPUB block, a PDF sentence) that closes once it holds
MIN_TOKENS and never grows past MAX_TOKENS; a unit longer than MAX_TOKENS is cut at sentence
ends, then at clause marks, then (a run-on with neither) at a space or anywhere. Tokens are
estimated without a tokenizer: a Latin word ~1.3 word pieces, a CJK character or a punctuation
mark one (BERT splits every mark off: "\\begin{x}" is 5 pieces). MAX_TOKENS
leaves room in all-MiniLM-L6-v2's 256-token window for the heading the encoder reads first
(multilingual-e5-small reads 512).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

MIN_TOKENS = 90
MAX_TOKENS = 200
TAIL_TOKENS = 40
WINDOW_CHARS = 4 * 1024  # MAX_TOKENS of any text fit in fewer characters
_WORDS = re.compile(r"[A-Za-z0-9\u00c0-\u024f\u0400-\u04ff]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_MARKS = re.compile(r"[^\sA-Za-z0-9\u00c0-\u024f\u0400-\u04ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# a sentence ends after . ! ? ; (or their CJK forms, or …) and any closing quotes/brackets,
# before white space (Latin) or right away (CJK punctuation needs no space)
_SENTENCE_END = re.compile(r"(?:[.!?;](?:[\"'”’)\]」』）]*)(?=\s)|[。！？；…](?:[\"'”’)\]」』）]*))\s*")
_CLAUSE_END = re.compile(r"(?:[,:，、：]\s*)|\s+")


def tokens(text: str) -> int:
    words = len(_WORDS.findall(text))
    return math.ceil(1.3 * words) + len(_CJK.findall(text)) + len(_MARKS.findall(text))


def _strip(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def sentences(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of text[start:end], white space trimmed."""
    pos = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if (span := _strip(text, pos, match.end())) is not None:
            yield span
        pos = match.end()
    if (span := _strip(text, pos, end)) is not None:
        yield span


def fit(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """text[start:end] as pieces of at most MAX_TOKENS: sentences, then clauses, then hard cuts."""
    if end - start <= WINDOW_CHARS and tokens(text[start:end]) <= MAX_TOKENS:
        return [(start, end)]
    out: list[tuple[int, int]] = []
    for s, e in sentences(text, start, end):
        if e - s <= WINDOW_CHARS and tokens(text[s:e]) <= MAX_TOKENS:
            out.append((s, e))
        else:
            out.extend(_cut(text, s, e))
    return out


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A sentence longer than the window: cut at the last clause mark or space that fits. Each
    step looks at most WINDOW_CHARS ahead, so a megabyte-long run-on costs linear time."""
    out: list[tuple[int, int]] = []
    while start < end:
        window = min(end, start + WINDOW_CHARS)
        if window == end and tokens(text[start:end]) <= MAX_TOKENS:
            cut = end
        else:
            limit = _reach(text, start, window)
            cut = limit
            for match in _CLAUSE_END.finditer(text, start, limit):
                if match.end() > start + (limit - start) // 2:
                    cut = match.end()
        if (span := _strip(text, start, cut)) is not None:
            out.append(span)
        start = cut
    return out


def _reach(text: str, start: int, end: int) -> int:
    """The furthest end such that text[start:end] holds at most MAX_TOKENS (binary search)."""
    low, high = start + 1, end
    while low < high:
        mid = (low + high + 1) // 2
        if tokens(text[start:mid]) <= MAX_TOKENS:
            low = mid
        else:
            high = mid - 1
    return low


def group(units: list[tuple[int, int]], text: str, breaks: frozenset[int] = frozenset(), *,
          size: Callable[[str], int] = tokens, low: int = MIN_TOKENS, high: int = MAX_TOKENS,
          tail_below: int = TAIL_TOKENS) -> list[list[int]]:
    """Greedy runs of unit indexes: close at `low`, never past `high` (as `size` measures a
    unit: tokens by default); a last run shorter than `tail_below` joins the run before it when
    both fit. A unit whose index is in `breaks` (a heading) starts a new run. (The example
    package's chunker measures words with its own bounds: tools/build/example_chunks.py.)"""
    runs: list[list[int]] = []
    current: list[int] = []
    total = 0
    for i, (s, e) in enumerate(units):
        n = size(text[s:e])
        if current and (total + n > high or i in breaks):
            runs.append(current)
            current, total = [], 0
        current.append(i)
        total += n
        if total >= low:
            runs.append(current)
            current, total = [], 0
    if current:
        runs.append(current)
    if len(runs) > 1 and runs[-1][0] not in breaks:
        tail = sum(size(text[units[i][0]:units[i][1]]) for i in runs[-1])
        before = sum(size(text[units[i][0]:units[i][1]]) for i in runs[-2])
        if tail < tail_below and tail + before <= high:
            runs[-2].extend(runs.pop())
    return runs
