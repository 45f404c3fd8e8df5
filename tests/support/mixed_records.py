"""Generated records of English words (Zipf-weighted) with runs of Chinese characters among
them, for the tests that hold an index's scores to FTS5's on every kind of term."""

from __future__ import annotations

import random

from tests.support.package_builder import RecordSpec

ENGLISH = ("river rivers running runs ran ground water battle battles general temple calculation sediment valley "
           "farming light energy glucose diagram supply depot arrow tax province grain tribute army march camp "
           "spy fire wind mountain plain road bridge city wall siege enemy ally season rain harvest café naïve "
           "the of and 2008 x86").split()
HANZI = "兵法孫子水火山川將軍勝敗知己彼戰國家道天地人"  # traditional characters included
HEADINGS = ("Water Supply", "Battles", "兵法 第一", "Grain and tax")


def mixed_records(n: int, seed: int, words: list[str] = ENGLISH, min_words: int = 3, chinese_share: float = 0.4,
                  headings: tuple[str, ...] = HEADINGS) -> list[RecordSpec]:
    """n records `r0000`..., 20 to a page, the same for the same arguments."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(words))]
    out = []
    for i in range(n):
        text = rng.choices(words, weights, k=rng.randint(min_words, 25))
        if rng.random() < chinese_share:
            text.insert(rng.randint(0, len(text)), "".join(rng.choices(HANZI, k=rng.randint(1, 8))))
        heading = rng.choice(headings)
        out.append(RecordSpec(f"r{i:04d}", " ".join(text) + ".", ["Book", heading], i // 20))
    return out
