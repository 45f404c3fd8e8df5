"""Foundation figures: cold CLI search, init of a 20,000-record package, lexical latency.

    python tools/bench/search/bench_core.py [--json] [--runs N]

Builds synthetic packages under .bench/ (EPUB originals, so building them is quick), then:
- cold `book-agent search BOOK "q" --json` wall time (a new process each run) on 5,000 records,
  for a package without vectors (the pure lexical path) and with 384-dim vectors whose model
  is not on this machine (the vector channel reports unavailable: the lexical path plus the
  cost of finding that out);
- `init` of a 20,000-record package (full hash check + FTS build), wall time;
- lexical query latency p50/p95 in one process for short and 30-word queries.
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

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support

from tests.support.package_builder import build_package, synthetic_records  # noqa: E402

BENCH = ROOT / ".bench" / "core"


def ensure_package(name: str, count: int, vectors: str, dims: int = 384) -> Path:
    root = BENCH / name
    if (root / "book-package.json").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    return build_package(root, book_id=name, kind="epub", records=synthetic_records(count), dims=dims,
                         vectors=vectors, model="sentence-transformers/not-on-this-machine")


def cold_search(data_dir: Path, book: str, runs: int) -> list[float]:
    env = {**os.environ, "BOOK_AGENT_HOME": str(data_dir)}
    cmd = [str(ROOT / ".venv" / "bin" / "book-agent"), "search", book, "army river supply", "--json"]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from book_agent import BookAgent

    figures: dict[str, object] = {}
    data = BENCH / "data"
    shutil.rmtree(data, ignore_errors=True)
    lexical_only = ensure_package("bench-5k-lexical", 5000, "none")
    with_vectors = ensure_package("bench-5k-vectors", 5000, "random")
    big = ensure_package("bench-20k", 20000, "random")
    with BookAgent(data) as agent:
        agent.init(lexical_only)
        agent.init(with_vectors)
        started = time.perf_counter()
        agent.init(big)
        figures["init_20k_s"] = round(time.perf_counter() - started, 3)

        for label, query in (("short", "river supply"),
                             ("long", " ".join(synthetic_records(1, seed=99, cjk_share=0.0, words=30)[0].text.split()[:30]))):
            lat = []
            searcher = agent.books.open("bench-20k").searcher()
            for _ in range(200):
                started = time.perf_counter()
                searcher._lexical(query, 50)
                lat.append((time.perf_counter() - started) * 1000)
            lat.sort()
            figures[f"lexical_{label}_p50_ms"] = round(statistics.median(lat), 3)
            figures[f"lexical_{label}_p95_ms"] = round(lat[int(len(lat) * 0.95)], 3)
    for name, book in (("cold_search_lexical_only", "bench-5k-lexical"), ("cold_search_vectors_unavailable", "bench-5k-vectors")):
        times = cold_search(data, book, args.runs)
        figures[f"{name}_median_s"] = round(statistics.median(times), 3)
        figures[f"{name}_min_s"] = round(min(times), 3)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    figures["bare_python_start_s"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    subprocess.run([str(ROOT / ".venv" / "bin" / "book-agent"), "--help"], check=True, capture_output=True)
    figures["cli_help_s"] = round(time.perf_counter() - started, 3)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:40s} {value}")


if __name__ == "__main__":
    main()
