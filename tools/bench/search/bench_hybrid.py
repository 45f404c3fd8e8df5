"""Hybrid search figures on 10,000 records x 1,024 dims (issue: hybrid retrieval).

    .venv/bin/python tools/bench/search/bench_hybrid.py [--records 10000] [--dims 1024] [--json]

Builds a synthetic EPUB package with random unit vectors once under .bench/hybrid/, registers
it, then in one process: lexical p50, hybrid search end to end with a supplied query vector
p50 (lexical + vector + fusion + hit assembly), and resident memory added by loading the book
over the process's baseline (VmRSS). Then cold `book-agent search ... --json --query-vector
FILE` wall time (a new process per run; the memory-mapped vector sidecar is already built).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import rss_mb

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "hybrid"
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support




def p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--dims", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import numpy as np

    from book_agent import BookAgent
    from tests.support.package_builder import build_package, synthetic_records

    name = f"hybrid-{args.records}x{args.dims}"
    root = BENCH / name
    if not (root / "book-package.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        build_package(root, book_id=name, kind="epub", records=synthetic_records(args.records, words=40),
                      dims=args.dims, model="test/random-vectors", languages=["en"])
    data = BENCH / "data"
    rng = np.random.default_rng(3)
    vectors = [list(map(float, v / np.linalg.norm(v))) for v in rng.standard_normal((200, args.dims))]
    queries = [r.text.split(" ")[:3] for r in synthetic_records(200, seed=11, cjk_share=0.0)]
    figures: dict[str, object] = {"records": args.records, "dims": args.dims,
                                  "raw_matrix_mb": round(args.records * args.dims * 4 / 2**20, 1)}
    with BookAgent(data) as agent:
        agent.init(root)
        baseline = rss_mb()
        agent.search(name, "warm up", query_vector=vectors[0])  # loads the matrix (sidecar) once
        figures["rss_added_by_loading_mb"] = round(rss_mb() - baseline, 1)
        searcher = agent.books.open(name).searcher()
        lexical, hybrid = [], []
        for words, vector in zip(queries, vectors, strict=True):
            query = " ".join(words)
            started = time.perf_counter()
            searcher._lexical(query, 50)
            lexical.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            agent.search(name, query, top_k=10, query_vector=vector)
            hybrid.append((time.perf_counter() - started) * 1000)
        figures["lexical_p50_ms"] = p50(lexical)
        figures["hybrid_supplied_vector_p50_ms"] = p50(hybrid)
        figures["hybrid_supplied_vector_p95_ms"] = round(sorted(hybrid)[int(len(hybrid) * 0.95)], 3)
        figures["rss_after_queries_mb"] = round(rss_mb() - baseline, 1)
    vector_file = BENCH / "query-vector.json"
    vector_file.write_text(json.dumps(vectors[1]), encoding="utf-8")
    env = {**os.environ, "BOOK_AGENT_HOME": str(data)}
    cmd = [str(ROOT / ".venv" / "bin" / "book-agent"), "search", name, "supply river", "--json",
           "--query-vector", str(vector_file)]
    cold = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        cold.append(time.perf_counter() - started)
    figures["cold_cli_search_supplied_vector_median_s"] = p50(cold)
    figures["loadavg_1min"] = float(Path("/proc/loadavg").read_text().split()[0])
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:45s} {value}")


if __name__ == "__main__":
    main()
