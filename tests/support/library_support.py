"""A synthetic corpus with realistic word statistics, and books holding it (whole or split)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import numpy as np

from tests.support import published_tool_names
from tests.support.package_builder import RecordSpec, build_package

DIMS = 16
WORDS = ("river ground water battle general temple calculation sediment valley farming light energy "
         "glucose diagram supply depot arrow tax province grain tribute army march camp spy fire "
         "wind mountain plain road bridge city wall siege enemy ally season rain harvest").split()


def unit(text: str, dims: int = DIMS) -> np.ndarray:
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))
    v = rng.standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


def vectors_of(texts: list[str], dims: int = DIMS) -> np.ndarray:
    return np.stack([unit(t, dims) for t in texts])


def corpus(n: int = 60) -> list[RecordSpec]:
    rng = random.Random(7)
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]  # Zipf-like: a few common words
    return [RecordSpec(f"d{i:03d}", " ".join(rng.choices(WORDS, weights, k=14)) + ".", [f"Part {i // 10}"], i // 10)
            for i in range(n)]


def make_book(root: Path, book_id: str, records: list[RecordSpec], dims: int = DIMS) -> Path:
    return build_package(root / book_id, book_id=book_id, kind="epub", records=records, dims=dims,
                         vectors=lambda texts: vectors_of(texts, dims), blank_page=False)


LIBRARY_TOOLS = published_tool_names("mcp-library-tools.json")


def three_book_library(tmp_path: Path) -> Path:
    """A data dir with 30 corpus records split over three registered books (part-0..2)."""
    from book_agent import BookAgent

    records = corpus(30)
    with BookAgent(tmp_path / "data") as agent:
        for part in range(3):
            agent.init(make_book(tmp_path / "parts", f"part-{part}", records[part::3]))
    return tmp_path / "data"


def index_scores(index: Any, query: str, depth: int) -> dict[str, float]:
    """record id -> score of `query`'s best `depth` hits in a fresh reader of a library index."""
    reader = index.open()
    try:
        return {h.record_id: h.score for h in reader.search(query, depth)}
    finally:
        reader.close()


def register_only(agent: Any, package: Path) -> str:
    """Register a package as a process killed right after its registration leaves it: in the
    registry, but not yet in the library's indexes (the registering call's own update never ran)."""
    return str(agent._registration.init(package, "none", False, lambda label: None))
