"""A book-agent reranker plug-in: ranks passages by how many query terms they contain."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from book_agent import ScoringReranker

WORD = re.compile(r"\w+")


def terms(text: str) -> set[str]:
    # Words for spaced scripts; single characters for CJK, which has no spaces.
    return {t for w in WORD.findall(text.lower()) for t in ([w] if w.isascii() else list(w))}


class TermOverlapReranker(ScoringReranker):
    provider = "term-overlap"
    model = "term-overlap-v1"

    def score(self, query: str, texts: list[str], top_n: int) -> list[tuple[int, float]]:
        wanted = terms(query)
        return [(i, float(len(wanted & terms(text)))) for i, text in enumerate(texts)]


def create(config: dict[str, Any], runtime_dir: Path | None) -> TermOverlapReranker:
    reranker = TermOverlapReranker()
    reranker.strict = bool(config.get("strict", False))
    return reranker
