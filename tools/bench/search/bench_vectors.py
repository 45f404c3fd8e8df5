"""Benchmark the prebuilt vector store: search latency, memory added by loading, load times.

    .venv/bin/python tools/bench/search/bench_vectors.py [--records 10000] [--dims 1024] [--queries 200] [--json]

Builds a synthetic index.sqlite (no PDF needed) in a temp dir, then measures each load in a
fresh process so that "cold" means cold: (1) from SQLite without a sidecar, (2) from SQLite
writing the sidecar, (3) from the memory-mapped sidecar. RSS is VmRSS from /proc/self/status.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import rss_mb

ROOT = Path(__file__).resolve().parents[3]




def build(db: Path, records: int, dims: int) -> None:
    import numpy as np

    sys.path.insert(0, str(ROOT))  # the test helpers: tests.support
    from tests.support.package_builder import synthetic_records, write_database

    specs = synthetic_records(records, words=20)
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((records, dims)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    sources = [{"kind": "pdf", "page_index": s.page} for s in specs]
    write_database(db, "bench", specs, sources, [(0, 1)] * records, matrix, {"embedding_model": "bench"})


def child(db: Path, dims: int, sidecar: str | None, queries: int) -> dict[str, Any]:
    import numpy as np

    from book_agent_adapters.bench import PrebuiltVectorStoreAdapter

    manifest = {"dimensions": dims, "metric": "cosine", "normalized": True, "dtype": "float32"}
    store = PrebuiltVectorStoreAdapter(db, manifest, sidecar_dir=Path(sidecar) if sidecar else None)
    store.get_record("s000000")  # open SQLite first: the load alone is measured below
    before = rss_mb()
    start = time.perf_counter()
    loaded = store.load()
    load_ms = (time.perf_counter() - start) * 1000
    after_load = rss_mb()
    rng = np.random.default_rng(9)
    timings = []
    for _ in range(queries):
        query = rng.standard_normal(dims).astype(np.float32)
        start = time.perf_counter()
        hits = store.search(query, 10)
        timings.append((time.perf_counter() - start) * 1000)
    assert len(hits) == 10
    matvec = []
    for _ in range(queries):  # the matrix product alone, for comparison
        start = time.perf_counter()
        loaded.matrix @ query
        matvec.append((time.perf_counter() - start) * 1000)
    store.close()
    return {
        "source": loaded.report.get("source"), "sidecar": loaded.report.get("sidecar"),
        "load_ms": round(load_ms, 1), "rss_before_mb": round(before, 1),
        "rss_added_by_load_mb": round(after_load - before, 1),
        "rss_added_after_searches_mb": round(rss_mb() - before, 1),
        "search_top10_p50_ms": round(float(np.percentile(timings, 50)), 2),
        "search_top10_p95_ms": round(float(np.percentile(timings, 95)), 2),
        "search_top10_min_ms": round(min(timings), 2),
        "matvec_p50_ms": round(float(np.percentile(matvec, 50)), 2),
    }


def run_child(db: Path, dims: int, sidecar: Path | None, queries: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(db), "--dims", str(dims), "--queries", str(queries)]
    if sidecar is not None:
        cmd += ["--sidecar", str(sidecar)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--dims", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child")
    parser.add_argument("--sidecar")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child), args.dims, args.sidecar, args.queries)))
        return 0
    with tempfile.TemporaryDirectory() as folder:
        db, side = Path(folder) / "index.sqlite", Path(folder) / "runtime"
        start = time.perf_counter()
        build(db, args.records, args.dims)
        results: dict[str, Any] = {
            "records": args.records, "dims": args.dims,
            "raw_matrix_mb": round(args.records * args.dims * 4 / 2**20, 1),
            "database_mb": round(db.stat().st_size / 2**20, 1),
            "build_s": round(time.perf_counter() - start, 1),
            "loadavg_1min": float(Path("/proc/loadavg").read_text().split()[0]),
            "cold_sqlite": run_child(db, args.dims, None, args.queries),
            "cold_sqlite_writing_sidecar": run_child(db, args.dims, side, args.queries),
            "cold_mmap_sidecar": run_child(db, args.dims, side, args.queries),
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{args.records} records x {args.dims} dims: raw matrix {results['raw_matrix_mb']} MiB, "
          f"database {results['database_mb']} MiB (built in {results['build_s']} s), load average {results['loadavg_1min']}")
    for name in ("cold_sqlite", "cold_sqlite_writing_sidecar", "cold_mmap_sidecar"):
        r = results[name]
        print(f"{name:28s} load {r['load_ms']:8.1f} ms  RSS +{r['rss_added_by_load_mb']:6.1f} MiB "
              f"(+{r['rss_added_after_searches_mb']:6.1f} after searches)  top-10 p50 "
              f"{r['search_top10_p50_ms']:6.2f} ms  p95 {r['search_top10_p95_ms']:6.2f} ms  "
              f"min {r['search_top10_min_ms']:5.2f} ms  "
              f"(matvec p50 {r['matvec_p50_ms']:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
