"""Finding a passage in extracted text: exact, normalised, fuzzy, with offsets into the original.

Extracted text rarely equals a record's text byte for byte: PDF lines break mid-word (with
or without a hyphen), ligatures (ﬁ ﬂ) come out as one character, full-width forms and
curly quotes differ, and EPUB markup adds whitespace. Matching therefore happens on a
*key*: the text with every whitespace character dropped (a PDF line break may split a word
without a hyphen, so even spaces cannot be trusted), every hyphen and dash dropped (PDFium's
line-end mark U+FFFE, soft hyphens, a hyphen before a line break: a PDF cannot tell a
hyphenated word from one hyphenated at a line end), invisible characters dropped (format
characters such as word joiners and zero-width spaces, variation selectors, private-use
glyphs), each character NFKD-decomposed (ligatures, full-/half-width forms, compatibility
ideographs, no-break spaces) with combining marks removed, typographic quotes unified, and
everything case-folded. Traditional and simplified Chinese are left as they
are: they are different texts. Every key character remembers the original span it came
from, so a match on the key maps back to character offsets in the original text.

Fuzzy matching votes for an alignment with character trigrams, finds the matched region with
difflib, widens it to word boundaries in the original (a CJK character is a word of its own),
and scores that span: score = matched / max(span key length, needle key length), in [0, 1].
The max() makes a span that covers only part of the quotation (or pads it) score low, so a
mid-word fragment of a longer quotation cannot pass the threshold.
"""

from __future__ import annotations

import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from book_agent.domain.sources.text_align import is_small, matched, matching_blocks

FUZZY_THRESHOLD = 0.80  # below this a best candidate is reported, not trusted
MIN_FUZZY_KEY_CHARS = 8  # shorter needles match by chance: exact or normalised only
_Q = 3  # trigram size for alignment votes
_SHORT_NEEDLE = 400  # longer needles vote on a sample of longer grams (cost bounded, see _sampled_diagonal)
_ANCHOR_Q, _ANCHORS, _ANCHOR_HITS = 8, 64, 16
# Characters that carry no text a reader would quote: format characters (soft hyphen, zero-width
# spaces and joiners, word joiner, BOM, bidi marks: category Cf), private-use glyphs (icons and
# unmapped glyphs of PDF fonts: Co), variation selectors, and U+FFFE, which PDFium puts where a
# line ended in a hyphen (it joins the two lines around it); control characters and U+FFFD,
# which PDFium gives for glyphs of fonts without a text map (maths, symbols): no reader can
# copy them as text.
_VANISH_CATEGORIES = frozenset({"Cf", "Co", "Cc"})
_VANISH = frozenset("\ufffe\uffff\ufffd")
# Hyphens and dashes vanish too: a PDF cannot tell a word hyphenated at a line end ("calcu-
# lations") from a hyphenated word broken there ("center-aligned", U+FFFE in PDFium's text), so
# a quote must match with or without them; dashes between words differ by typist (-- – —).
_DASH_CATEGORY = "Pd"
_UNIFY = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u02bc": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2212": "",  # the minus sign, a dash to a reader's keyboard
}


def _vanishes(ch: str) -> bool:
    o = ord(ch)
    return (ch in _VANISH or 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF
            or unicodedata.category(ch) in _VANISH_CATEGORIES or unicodedata.category(ch) == _DASH_CATEGORY)


@lru_cache(maxsize=65536)
def _fold(ch: str) -> str:
    """The key form of one character ('' when it vanishes from the key)."""
    if ch.isspace():
        return ""
    if ch < "\x80":
        return "" if ch == "-" or ch < " " or ch == "\x7f" else ch.lower()
    if _vanishes(ch):
        return ""
    ch = _UNIFY.get(ch, ch)
    decomposed = unicodedata.normalize("NFKD", ch)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) and not c.isspace() and not _vanishes(c))
    return kept.casefold()


@dataclass(frozen=True)
class NormalizedText:
    """`key[k]` came from `original[starts[k]:ends[k]]`."""

    original: str
    key: str
    starts: array[int]
    ends: array[int]

    def span(self, key_start: int, key_end: int) -> tuple[int, int]:
        """Original offsets of the key range [key_start, key_end) (key_end > key_start)."""
        return self.starts[key_start], self.ends[key_end - 1]


def _folded(text: str) -> list[str]:
    """The key form of each character of text ('' where it vanishes)."""
    # One cached call per character, in a comprehension: a loop appending to arrays cost
    # about 2 µs a character (0.4 s for a 100,000-character quotation).
    return [_fold(ch) for ch in text]


def normalize(text: str) -> NormalizedText:
    folded = _folded(text)
    starts = array("i", [i for i, out in enumerate(folded) for _ in out])
    ends = array("i", [start + 1 for start in starts])
    return NormalizedText(text, "".join(folded), starts, ends)


def normalize_key(text: str) -> str:
    return "".join(_folded(text))


@dataclass(frozen=True)
class TextMatch:
    method: str  # exact | normalized | fuzzy
    start: int  # offsets into the original haystack text
    end: int
    score: float

    def to_dict(self) -> dict[str, object]:
        return {"method": self.method, "start": self.start, "end": self.end, "score": self.score}


def _closest(positions: list[int], hint: int | None) -> int:
    if hint is None or len(positions) == 1:
        return positions[0]
    return min(positions, key=lambda p: abs(p - hint))


def _all_positions(hay: str, needle: str, limit: int = 64) -> list[int]:
    out: list[int] = []
    pos = hay.find(needle)
    while pos >= 0 and len(out) < limit:
        out.append(pos)
        pos = hay.find(needle, pos + 1)
    return out


def find_exact(hay: str, needle: str, hint: int | None = None) -> TextMatch | None:
    if not needle:
        return None
    positions = _all_positions(hay, needle)
    if not positions:
        return None
    start = _closest(positions, hint)
    return TextMatch("exact", start, start + len(needle), 1.0)


def find_normalized(hay: NormalizedText, needle_key: str, hint: int | None = None) -> TextMatch | None:
    if not needle_key:
        return None
    positions = _all_positions(hay.key, needle_key)
    if not positions:
        return None
    originals = [hay.starts[p] for p in positions]
    pick = positions[originals.index(_closest(originals, hint))]
    start, end = hay.span(pick, pick + len(needle_key))
    return TextMatch("normalized", start, end, 1.0)


def _best_diagonal(hay_key: str, needle_key: str) -> tuple[int, int]:
    """(offset d, votes): the alignment hay[d + j] ~ needle[j] most trigrams agree on."""
    if len(needle_key) > _SHORT_NEEDLE:
        return _sampled_diagonal(hay_key, needle_key)
    grams: dict[str, list[int]] = {}
    for j in range(len(needle_key) - _Q + 1):
        grams.setdefault(needle_key[j : j + _Q], []).append(j)
    votes: Counter[int] = Counter()
    for i in range(len(hay_key) - _Q + 1):
        for j in grams.get(hay_key[i : i + _Q], ()):
            votes[(i - j) // 4] += 1  # bins of 4 absorb small insertions and deletions
    return _top(votes)


def _sampled_diagonal(hay_key: str, needle_key: str) -> tuple[int, int]:
    """The same vote for a long needle, on a bounded sample: _ANCHORS of its _ANCHOR_Q-grams,
    spread over it, each looked for in hay at C speed (str.find); a gram found more than
    _ANCHOR_HITS times says little about where the passage is and gets no vote. Voting with
    every trigram of both texts cost O(hay x needle) for a long needle."""
    last = len(needle_key) - _ANCHOR_Q
    votes: Counter[int] = Counter()
    for j in range(0, last + 1, max(1, (last + 1) // _ANCHORS)):
        hits = _all_positions(hay_key, needle_key[j : j + _ANCHOR_Q], limit=_ANCHOR_HITS + 1)
        if len(hits) <= _ANCHOR_HITS:
            for i in hits:
                votes[(i - j) // 4] += 1
    return _top(votes)


def _top(votes: Counter[int]) -> tuple[int, int]:
    if not votes:
        return 0, 0
    bin_, count = votes.most_common(1)[0]
    return bin_ * 4, count


def gram_share(hay_key: str, needle_key: str, samples: int = 48, q: int = _Q) -> float:
    """Cheap prefilter: the share of (sampled) needle q-grams present anywhere in hay. A long
    unit holds nearly every trigram somewhere, so rankings use longer grams too (see source_search)."""
    n = len(needle_key) - q + 1
    if n <= 0:
        return 0.0
    step = max(1, n // samples)
    picked = [needle_key[j : j + q] for j in range(0, n, step)]
    return sum(1 for g in picked if g in hay_key) / len(picked)


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF
            or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x3FFFF)


def _is_word(ch: str) -> bool:
    """Part of a space-delimited word (letters, digits, apostrophes); CJK characters are not:
    each is a boundary of its own."""
    return (ch.isalnum() or ch in "'\u2019") and not _is_cjk(ch)


def snap_to_words(text: str, start: int, end: int, limit: int = 40) -> tuple[int, int]:
    """Widen [start, end) so that it neither starts nor ends inside a word of text."""
    steps = 0
    while start > 0 and steps < limit and _is_word(text[start - 1]) and _is_word(text[start]):
        start, steps = start - 1, steps + 1
    steps = 0
    while end < len(text) and steps < limit and _is_word(text[end - 1]) and _is_word(text[end]):
        end, steps = end + 1, steps + 1
    return start, end


def fuzzy_bound(hay_key_chars: int, needle_key_chars: int) -> float:
    """The highest score find_fuzzy can give in a hay of this key length: the matched characters
    fit in the span, and the score divides by at least the needle's length."""
    if needle_key_chars < MIN_FUZZY_KEY_CHARS or not hay_key_chars:
        return 0.0
    return min(1.0, hay_key_chars / needle_key_chars)


def find_fuzzy(hay: NormalizedText, needle_key: str) -> TextMatch | None:
    """The best approximate occurrence (any score; compare with FUZZY_THRESHOLD)."""
    n = len(needle_key)
    if n < MIN_FUZZY_KEY_CHARS or not hay.key:
        return None
    offset, votes = _best_diagonal(hay.key, needle_key)
    if votes == 0:
        return None
    slack = max(16, n // 4)
    lo, hi = max(0, offset - slack), min(len(hay.key), offset + n + slack)
    window = hay.key[lo:hi]
    blocks = matching_blocks(window, needle_key)
    # stray one- or two-character matches at the edges would stretch the span: trim them
    while len(blocks) > 1 and blocks[0][2] < _Q:
        blocks.pop(0)
    while len(blocks) > 1 and blocks[-1][2] < _Q:
        blocks.pop()
    if not blocks:
        return None
    start, end = hay.span(lo + blocks[0][0], lo + blocks[-1][0] + blocks[-1][2])
    start, end = snap_to_words(hay.original, start, end)
    # the key characters inside the widened span, scored against the whole needle
    k_start, k_end = bisect_left(hay.starts, start), bisect_right(hay.ends, end)
    span_key = hay.key[k_start:k_end]
    if not span_key:
        return None
    if is_small(span_key, needle_key):
        hits = matched(span_key, needle_key)
    else:  # the alignment just made, inside the span (aligning the span again would double the cost)
        hits = sum(size for *_, size in blocks)
    score = round(hits / max(len(span_key), n), 4)
    return TextMatch("fuzzy", start, end, score)
