"""A small registered book with 16-dimension vectors, and a query vector file, for tests that
run one-shot searches in fresh processes (cold start, files opened, the fast exit)."""

from __future__ import annotations

import json
from pathlib import Path

from book_agent.agent import BookAgent
from tests.support.package_builder import build_package


def vector_book(work: Path, searched: bool = True) -> tuple[Path, Path]:
    """(the data dir holding book `vec`, a query vector's JSON file). `searched`: one search has
    run already (the first writes the vector matrix's sidecar, which later searches read)."""
    root = build_package(work / "pkg", book_id="vec", dims=16)
    with BookAgent(work / "data") as agent:
        agent.init(root)
        if searched:
            agent.search("vec", "rivers", query_vector=[0.25] * 16)
    vector = work / "vector.json"
    vector.write_text(json.dumps([0.25] * 16), encoding="utf-8")
    return work / "data", vector
