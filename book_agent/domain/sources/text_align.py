"""Which characters of two texts match, in order, in near-linear time for long texts.

difflib.SequenceMatcher (autojunk off, as exactness needs) compares each character of one
text with every equal character of the other: quadratic, 22 s for a 20,000-character
quotation and minutes for 100,000. Small inputs keep it, so short passages align exactly as
before. Long ones are aligned by seed and extend:

1. anchors: K-grams that occur exactly once in each text (a unique gram pins a position);
2. the longest chain of anchors in the same order in both texts (longest increasing
   subsequence), so a gram repeated elsewhere cannot pull the alignment off course;
3. each anchor widened to a maximal exact block, never overlapping its neighbours;
4. the gaps between blocks aligned the same way (a gram repeated in the whole text may be
   unique within a gap), down to SequenceMatcher once they are small; a large gap without
   any anchor is text the other side does not share, counted as unmatched.

The matched count (sum of block sizes) is what the fuzzy score is made of.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache

Block = tuple[int, int, int]  # (start in a, start in b, size)

SMALL = 1_000_000  # len(a) * len(b) up to which SequenceMatcher itself is used
K = (12, 32)  # anchor lengths: 12 is unique in most prose and survives edits; 32 in repetitive text
MAX_DEPTH = 3  # gaps within gaps: each level is linear, and a gap without anchors has no match
GAP_CHARS = 4_096  # longer gaps of the quotation are not aligned again (see _worth)


def _sequence_blocks(a: str, b: str) -> list[Block]:
    blocks = SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return [(m.a, m.b, m.size) for m in blocks if m.size]


def _unique_grams(text: str, k: int) -> dict[str, int]:
    """{gram: position} of the k-grams occurring exactly once in text."""
    grams = [text[i : i + k] for i in range(len(text) - k + 1)]
    last = dict(zip(grams, range(len(grams)), strict=True))  # built in C: later positions overwrite
    first = dict(zip(reversed(grams), range(len(grams) - 1, -1, -1), strict=True))
    return {gram: i for gram, i in first.items() if last[gram] == i}


# b is the quotation, aligned against several units and twice per unit: count its grams once
_quotation_grams = lru_cache(maxsize=2)(_unique_grams)


def _chain(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of (b, a) pairs, sorted by b, whose a increases too."""
    tails: list[int] = []  # tails[k]: smallest a ending a chain of length k + 1
    tail_at: list[int] = []  # index in pairs of that chain's last pair
    before = [-1] * len(pairs)
    for index, (_, a) in enumerate(pairs):
        k = bisect_left(tails, a)
        before[index] = tail_at[k - 1] if k else -1
        if k == len(tails):
            tails.append(a)
            tail_at.append(index)
        else:
            tails[k], tail_at[k] = a, index
    out: list[tuple[int, int]] = []
    index = tail_at[-1] if tail_at else -1
    while index >= 0:
        out.append(pairs[index])
        index = before[index]
    return out[::-1]


def _extend(a: str, b: str, block: Block, floor: tuple[int, int], ceiling: tuple[int, int]) -> Block:
    """Widen an exact block both ways while characters agree, inside [floor, ceiling)."""
    i, j, size = block
    while i > floor[0] and j > floor[1] and a[i - 1] == b[j - 1]:
        i, j, size = i - 1, j - 1, size + 1
    while i + size < ceiling[0] and j + size < ceiling[1] and a[i + size] == b[j + size]:
        size += 1
    return i, j, size


def _shared_once(a: str, k: int, grams_b: dict[str, int]) -> list[tuple[int, int]]:
    """(position in b, position in a) of the grams unique in b that occur exactly once in a."""
    grams = [a[i : i + k] for i in range(len(a) - k + 1)]
    shared = [(gram, i) for i, gram in enumerate(grams) if gram in grams_b]
    counts = Counter(gram for gram, _ in shared)  # only the shared grams: few when a and b differ
    return sorted((grams_b[gram], i) for gram, i in shared if counts[gram] == 1)


def _anchor_blocks(a: str, b: str, k: int, grams_b: dict[str, int]) -> list[Block]:
    pairs = _shared_once(a, k, grams_b)
    blocks: list[Block] = []
    end_a = end_b = 0
    for j, i in _chain(pairs):
        skip = max(end_a - i, end_b - j, 0)  # overlaps the previous block: keep only what is new
        if skip >= k:
            continue
        if blocks and i - blocks[-1][0] == j - blocks[-1][1] and skip > 0:
            start_a, start_b, size = blocks[-1]  # same diagonal: the run goes on
            blocks[-1] = (start_a, start_b, i + k - start_a)
        else:
            blocks.append((i + skip, j + skip, k - skip))
        end_a, end_b = blocks[-1][0] + blocks[-1][2], blocks[-1][1] + blocks[-1][2]
    return blocks


def _anchors(a: str, b: str, top: bool) -> list[Block]:
    """The anchor blocks of the gram length that covers more of b: short grams survive dense
    edits, long ones stay unique in repetitive text (a refrain, a table, a list)."""
    best: list[Block] = []
    covered = 0
    for k in K if top else K[:1]:  # a gap is short: its 12-grams are unique enough
        if covered * 2 >= len(b):
            break  # half of b anchored already: the longer grams would add little
        grams_b = _quotation_grams(b, k) if top else _unique_grams(b, k)
        blocks = _anchor_blocks(a, b, k, grams_b)
        if sum(size for *_, size in blocks) > covered:
            best, covered = blocks, sum(size for *_, size in blocks)
    return best


def _worth(gap_b: str) -> bool:
    """Whether a large gap is aligned again (grams repeated in the whole text may be unique in
    it): only while it is short. A long gap without an anchor of either length is text the other
    side does not have; aligning it again and again cost seconds for nothing."""
    return len(gap_b) <= GAP_CHARS


def _gap(lo: int, hi: int, b_chars: int, head: bool, tail: bool) -> tuple[int, int]:
    """The part of a's gap [lo, hi) to align with b_chars of b. Before the first block and after
    the last, a may run on (the hay around a quotation): only the stretch next to the block
    is the quotation's, else a few letters far out in the hay would stretch the span."""
    reach = 2 * b_chars + 16
    if head and not tail:
        return max(lo, hi - reach), hi
    if tail and not head:
        return lo, min(hi, lo + reach)
    return lo, hi


def _align(a: str, b: str, depth: int = 0) -> list[Block]:
    """Blocks widened to maximal; the gaps between them aligned the same way, down to
    SequenceMatcher for small ones: a gram repeated in the whole text may be unique in a gap."""
    if len(a) * len(b) <= SMALL or depth > MAX_DEPTH:
        return _sequence_blocks(a, b) if len(a) * len(b) <= SMALL else []
    blocks = _anchors(a, b, top=depth == 0)
    out: list[Block] = []
    end_a = end_b = 0
    for index, block in enumerate([*blocks, (len(a), len(b), 0)]):
        nxt = blocks[index + 1] if index + 1 < len(blocks) else (len(a), len(b), 0)
        if block[2]:
            block = _extend(a, b, block, (end_a, end_b), (nxt[0], nxt[1]))
        lo, hi = _gap(end_a, block[0], block[1] - end_b, head=index == 0, tail=index == len(blocks))
        gap_a, gap_b = a[lo:hi], b[end_b : block[1]]
        if gap_a and gap_b and (len(gap_a) * len(gap_b) <= SMALL or (blocks and _worth(gap_b))):
            out += [(lo + x, end_b + y, s) for x, y, s in _align(gap_a, gap_b, depth + 1)]
        if block[2]:
            out.append(block)
            end_a, end_b = block[0] + block[2], block[1] + block[2]
    return out


def is_small(a: str, b: str) -> bool:
    """Small enough for SequenceMatcher itself."""
    return len(a) * len(b) <= SMALL


def matching_blocks(a: str, b: str) -> list[Block]:
    """Matching blocks of a and b, in order in both, sizes > 0 (SequenceMatcher's, for small inputs)."""
    if not a or not b:
        return []
    if is_small(a, b):
        return _sequence_blocks(a, b)
    return _align(a, b)


def matched(a: str, b: str) -> int:
    return sum(size for _, _, size in matching_blocks(a, b))
