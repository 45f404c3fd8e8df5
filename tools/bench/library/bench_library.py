"""Library figures: several books searched as one (`@all`), at 10k, 100k (and 1M) records.

    .venv/bin/python tools/bench/library/bench_library.py [--sizes 10000,100000] [--books 4] [--dims 384] [--json]

For each size it builds `--books` synthetic EPUB packages (Zipf word statistics, random unit
vectors; cached under .bench/library/), registers them in a fresh data dir and reports:
init time (verification + each book's FTS sidecar), the library index build (`prepare @all`),
resident memory added by loading every book's vectors, warm hybrid search p50/p95 with a
supplied query vector, and cold `book-agent search @all ... --json --query-vector FILE` time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import percentile, rss_mb

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "library"
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support


def build_books(size: int, books: int, dims: int, folder: Path = BENCH / "packages", prefix: str = "lib",
                model: str = "test/random-vectors",
                vectors: Callable[[int, int], Any] | None = None) -> list[Path]:
    """`books` synthetic EPUB packages of `size` records in all, cached in `folder`; `vectors(count,
    part)` gives a book's vectors (default: the package builder's random unit vectors)."""
    from tests.support.package_builder import build_package, synthetic_records

    roots = []
    per_book = size // books
    for part in range(books):
        name = f"{prefix}{size}-b{part + 1}"
        root = folder / f"{name}x{dims}"
        if not (root / "book-package.json").exists():  # a complete package is only ever there by rename
            started = time.perf_counter()
            progress(f"package {part + 1}/{books}: {root.name} ({per_book:,} records) ...")
            building = root.with_name(root.name + ".building")
            shutil.rmtree(building, ignore_errors=True)  # debris of a build that broke midway
            shutil.rmtree(root, ignore_errors=True)
            records = synthetic_records(per_book, seed=100 + part, cjk_share=0.0, words=40)
            for r in records:
                r.record_id = f"{name}-{r.record_id}"
            build_package(building, book_id=name, kind="epub", records=records, dims=dims, model=model,
                          vectors=vectors(per_book, part) if vectors else "random", languages=["en"],
                          blank_page=False)
            building.rename(root)
            progress(f"package {part + 1}/{books}: built in {time.perf_counter() - started:.0f} s")
        roots.append(root)
    return roots


def progress(line: str) -> None:
    """A build step on stderr (a 1M build takes half an hour: say where it is)."""
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def phase_progress(label: str) -> Callable[[str], Callable[[int, int], None]]:
    """`phases` for init/prepare: each phase named as it starts, then every tenth of it done."""
    def phases(phase: str) -> Callable[[int, int], None]:
        progress(f"{label}: {phase} ...")
        reported = [-1]

        def step(done: int, total: int) -> None:
            tenth = 10 * done // total if total else 10
            if tenth > reported[0]:
                reported[0] = tenth
                progress(f"{label}: {phase} {done:,}/{total:,}")
        return step
    return phases


def measure(size: int, books: int, dims: int, runs: int) -> dict[str, Any]:
    import numpy as np

    from book_agent import BookAgent
    from tests.support.package_builder import synthetic_records

    started = time.perf_counter()
    roots = build_books(size, books, dims)
    figures: dict[str, Any] = {"records": size, "books": books, "dims": dims,
                               "packages_built_s": round(time.perf_counter() - started, 1),
                               "raw_vectors_mb": round(size * dims * 4 / 2**20, 1)}
    data = BENCH / f"data-{size}x{dims}"
    shutil.rmtree(data, ignore_errors=True)
    rng = np.random.default_rng(5)
    vectors = [list(map(float, v / np.linalg.norm(v))) for v in rng.standard_normal((runs, dims))]
    queries = [" ".join(r.text.rstrip(".").split(" ")[:4]) for r in synthetic_records(runs, seed=9, cjk_share=0.0)]
    with BookAgent(data) as agent:
        started = time.perf_counter()
        for root in roots:
            agent.init(root)
        figures["init_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        agent.prepare("@all")
        figures["library_index_s"] = round(time.perf_counter() - started, 1)
        baseline = rss_mb()
        agent.search("@all", "warm up", query_vector=vectors[0])
        figures["rss_added_by_loading_mb"] = round(rss_mb() - baseline, 1)
        times = []
        for query, vector in zip(queries, vectors, strict=True):
            started = time.perf_counter()
            agent.search("@all", query, top_k=10, query_vector=vector)
            times.append((time.perf_counter() - started) * 1000)
        figures["warm_hybrid_p50_ms"] = round(percentile(times, 0.5), 2)
        figures["warm_hybrid_p95_ms"] = round(percentile(times, 0.95), 2)
    figures["cold_cli_s"] = cold_cli(data, queries[0], vectors[0])
    return figures


def cold_cli(data: Path, query: str, vector: list[float]) -> float:
    vector_file = BENCH / "query-vector.json"
    vector_file.write_text(json.dumps(vector))
    argv = [str(ROOT / ".venv" / "bin" / "book-agent"), "--data-dir", str(data), "search", "@all", query,
            "--json", "--query-vector", str(vector_file)]
    samples = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="library sizes in records, comma-separated")
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--runs", type=int, default=50, help="timed searches per size")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [measure(int(s), args.books, args.dims, args.runs) for s in args.sizes.split(",") if s.strip()]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        print(f"{r['records']:>9,} records in {r['books']} books ({r['dims']}-d, {r['raw_vectors_mb']} MB raw): "
              f"init {r['init_s']} s, library index {r['library_index_s']} s, "
              f"+{r['rss_added_by_loading_mb']} MB RSS; warm hybrid p50 {r['warm_hybrid_p50_ms']} ms, "
              f"p95 {r['warm_hybrid_p95_ms']} ms; cold CLI {r['cold_cli_s']} s")


if __name__ == "__main__":
    main()
