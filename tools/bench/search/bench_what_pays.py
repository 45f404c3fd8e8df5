"""Does the per-book impact file pay? (issue 46, item 5: keep only what pays)

    .venv/bin/python tools/bench/search/bench_what_pays.py [--runs 300] [--records 20000] [--json]

A one-book lexical channel is answered from the book's impact file (`lexical.impact.npz`, a
numpy copy of its FTS5 sidecar's BM25 document weights, book/lexical/book_impact.py) when it
can, else by FTS5's own `bm25()` in SQLite. Both give the same hits and scores (the exact-score
tests hold them to it), so the file is only worth its code if it makes searches faster. Two
agents over the same data dir, one as shipped and one whose book answers every query through
FTS5, are asked the same new queries in turn (a shuffled order per query, so the load falls on
both alike): the p50 of the whole warm search (hybrid, the query's vector given, top 10, the
answer complete) and of the lexical channel alone, and their ratio (FTS5 / impact: > 1 means
the file pays).

Books: fairytaleqa's test book (bench_peers' `book`: real text, real questions) and a synthetic
book of `--records` records (tests/support/package_builder.py, queries of 3 words drawn from
its records): BM25 in SQLite scores every record holding a query word, so the file's gain grows
with the book.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")

WORK = ROOT / ".bench" / "what-pays"


class _NoImpact:
    """In place of a book's WarmImpact: never answers, so FTS5 does."""

    on_words = None

    def top(self, *_: Any) -> None:
        return None

    def warm_up(self, *_: Any) -> None:
        return None

    def close(self) -> None:
        return None


def synthetic_book(records: int) -> tuple[Path, str, list[str], Any]:
    import numpy as np

    from book_agent import BookAgent
    from tests.support.package_builder import build_package, synthetic_records

    data = WORK / f"data-{records}"
    book_id = f"synthetic-{records}"
    rows = synthetic_records(records, seed=4, cjk_share=0.0)
    if not (data / ".complete").is_file():
        root = build_package(WORK / f"pkg-{records}", book_id=book_id, records=rows, dims=384,
                             model="all-MiniLM-L6-v2", provider="local")
        with BookAgent(data) as agent:
            agent.init(root, replace=True)
        (data / ".complete").write_text("", encoding="utf-8")
    pick = random.Random(8)
    queries = []
    for _ in range(2000):
        words = rows[pick.randrange(len(rows))].text.rstrip(".").split()
        queries.append(" ".join(pick.sample(words, min(3, len(words)))))
    vectors = np.random.default_rng(8).standard_normal((len(queries), 384)).astype(np.float32)
    return data, book_id, queries, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def real_book() -> tuple[Path, str, list[str], Any]:
    from tools.bench.peers.bench_peers import book_corpus

    corpus = book_corpus(1000)
    return corpus.data_dir, corpus.ref, list(corpus.queries), corpus.vectors


def measure(data: Path, book_id: str, queries: list[str], vectors: Any, runs: int) -> dict[str, Any]:
    from book_agent import BookAgent

    shipped, fts_only = BookAgent(data), BookAgent(data)
    try:
        for agent in (shipped, fts_only):
            agent.warm_up(book_id)
        lexical = {"impact": shipped.books.open(book_id).lexical_index()[0],
                   "FTS5": fts_only.books.open(book_id).lexical_index()[0]}
        lexical["FTS5"]._impact = _NoImpact()  # type: ignore[union-attr]
        agents = {"impact": shipped, "FTS5": fts_only}
        whole: dict[str, list[float]] = {k: [] for k in agents}
        channel: dict[str, list[float]] = {k: [] for k in agents}
        order = list(agents)
        shuffle = random.Random(2)
        for i in range(min(runs, len(queries))):
            query, vector = queries[i], [float(x) for x in vectors[i]]
            shuffle.shuffle(order)
            for name in order:
                began = time.perf_counter()
                agents[name].search(book_id, query, top_k=10, query_vector=vector)
                whole[name].append((time.perf_counter() - began) * 1000)
            shuffle.shuffle(order)
            for name in order:
                began = time.perf_counter()
                lexical[name].search(query + " ", 50)  # a new string: no cache of the query's terms
                channel[name].append((time.perf_counter() - began) * 1000)
        same = [h.record_id for h in lexical["impact"].search(queries[0], 50)] == \
            [h.record_id for h in lexical["FTS5"].search(queries[0], 50)]
    finally:
        shipped.close()
        fts_only.close()
    p50 = {k: round(statistics.median(v), 3) for k, v in whole.items()}
    c50 = {k: round(statistics.median(v), 3) for k, v in channel.items()}
    return {"queries": min(runs, len(queries)), "same_hits": same,
            "warm_search_p50_ms": p50, "lexical_channel_p50_ms": c50,
            "search_fts5_over_impact": round(p50["FTS5"] / p50["impact"], 3),
            "channel_fts5_over_impact": round(c50["FTS5"] / c50["impact"], 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"loadavg": [round(x, 2) for x in os.getloadavg()]}
    result["fairytaleqa test book"] = measure(*real_book(), args.runs)
    result[f"synthetic {args.records:,}"] = measure(*synthetic_book(args.records), args.runs)
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"load {result['loadavg']} -> {result['loadavg_after']}")
    for name, row in result.items():
        if isinstance(row, dict):
            print(f"{name}: {row['queries']} queries, same hits {row['same_hits']}; warm search p50 "
                  f"{row['warm_search_p50_ms']} (FTS5/impact x{row['search_fts5_over_impact']}); "
                  f"lexical channel p50 {row['lexical_channel_p50_ms']} (x{row['channel_fts5_over_impact']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
