"""What a warm search walks through: the product files it enters and the calls between them.

    .venv/bin/python tools/study/search_path.py [--json]

A figure of the house (issue 47): how many of book-agent's own modules (book_agent/ and
adapters/book_agent_adapters/) one warm search enters, and how many calls cross from one of
those files into another (a call within a file, or into the standard library or a dependency,
is not counted). Measured with `sys.setprofile` over one search after five warm ones, on the
eval set fairytaleqa's test book (bench_peers' `book`) alone and as `@all` (the library path),
each search bringing its query's vector. A deterministic count, not a time: the same code
gives the same figure on any machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repo root: tools.*

PRODUCT = (str(ROOT / "book_agent") + "/", str(ROOT / "adapters" / "book_agent_adapters") + "/")


def _product(path: str) -> str | None:
    return path[len(str(ROOT)) + 1:] if path.startswith(PRODUCT) else None


def walk(search: Any) -> dict[str, Any]:
    """Files entered and cross-file calls made by `search()`."""
    files: Counter[str] = Counter()
    crossings = 0

    def profile(frame: Any, event: str, _: Any) -> None:
        nonlocal crossings
        if event != "call":
            return
        callee = _product(frame.f_code.co_filename)
        if callee is None:
            return
        files[callee] += 1
        caller = frame.f_back
        while caller is not None and _product(caller.f_code.co_filename) is None:
            caller = caller.f_back  # through a dependency or the standard library: still a crossing
        if caller is not None and _product(caller.f_code.co_filename) != callee:
            crossings += 1

    sys.setprofile(profile)
    try:
        search()
    finally:
        sys.setprofile(None)
    return {"files": len(files), "calls_between_files": crossings, "calls_into_product": sum(files.values()),
            "busiest_files": dict(files.most_common(8))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from book_agent import BookAgent
    from tools.bench.peers.bench_peers import book_corpus

    corpus = book_corpus(20)
    result: dict[str, Any] = {}
    with BookAgent(corpus.data_dir) as agent:
        for label, ref in (("one book", corpus.ref), ("@all", "@all")):
            def search(i: int, ref: str = ref) -> Any:
                return agent.search(ref, corpus.queries[i], top_k=10, query_vector=[float(x) for x in corpus.vectors[i]])

            for i in range(5):
                search(i)
            result[label] = walk(lambda: search(5))
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for label, row in result.items():
        print(f"{label}: {row['files']} product files, {row['calls_between_files']} calls between them "
              f"({row['calls_into_product']} calls into product code)")
        for name, count in row["busiest_files"].items():
            print(f"    {count:5d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
