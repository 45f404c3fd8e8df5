"""The living approximate vector index at scale: a book added, a retrain, and what searches see meanwhile.

    .venv/bin/python tools/bench/library/bench_library_living_vectors.py [--sizes 100000] [--books 4] [--add 10000] [--json]

For each size: tools/bench/library/bench_library_vectors.py's packages (`--books` synthetic books, 384-d
vectors mixed from real all-MiniLM-L6-v2 document vectors, cached under .bench/library_vectors/)
registered in a fresh data dir whose model group uses the approximate index (its threshold
lowered to the size), `prepare @all` (the lexical index and the full IVF build), then

- **add**: a child process runs `init` of one more book of `--add` records and `prepare @all`
  (the lexical delta, the book's rows encoded into a segment of the trained index). This process
  meanwhile runs hybrid `@all` searches with a query vector (a kept BookAgent, as a server).
  `searchable_s`: from the child's start to the first search whose vector channel ranks a row of
  the added book first for that row's own vector (through the exact merge while it is not yet in
  the index, then the index); `indexed_s`: to the first search whose group holds it in the index;
  the child's time and peak RSS; search p50/p95/max meanwhile; `add_segment_s` the vector part
  (the book's rows read, encoded with the trained index and written, from its pointer);
- **recall@10** of the vector channel against exact search over the same books, after the add
  (the living index) and after the retrain;
- **retrain**: a child runs `prepare @all --full` (the lexical compaction and the IVF retrain,
  `retrain_s` the faiss part from its pointer), searches meanwhile as above.

Searches never fail or wait: a search during a writer serves the generation in place
(`search_failures`, `busy_searches` count those that did).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.library.bench_library_vectors import (
    BENCH,
    DIMS,
    build_books,
    mixes,
    query_vectors,
    real_document_vectors,
)
from tools.bench.measure import percentile

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
MODEL = "sentence-transformers/all-MiniLM-L6-v2"

CHILD = """
import json, sys
from pathlib import Path
from book_agent.agent import build_agent
from book_agent_adapters.bench import FaissLibraryVectors
data, action, arg, threshold = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
with build_agent(data, library_vectors=FaissLibraryVectors(data / "library", min_vectors=threshold)) as agent:
    if action == "add":
        agent.init(Path(arg))
    groups = agent.prepare("@all", full=action == "retrain")["vector_indexes"]
with open("/proc/self/status") as status:  # VmHWM: this program's own peak (ru_maxrss keeps the parent's across exec)
    peak = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")][0]
print(json.dumps({"groups": groups, "peak_kib": peak}, default=str))
"""


def added_book(add: int) -> Path:
    from tools.bench.library.bench_library import build_books as synthetic_books

    base = real_document_vectors()
    return synthetic_books(add, 1, DIMS, folder=BENCH / "packages", prefix="lvadd", model=MODEL,
                           vectors=lambda count, part: mixes(base, count, seed=2000 + part))[0]


def agent_for(data: Path, threshold: int) -> Any:
    from book_agent.agent import build_agent
    from book_agent_adapters.bench import FaissLibraryVectors

    return build_agent(data, library_vectors=FaissLibraryVectors(data / "library", min_vectors=threshold))


def vector_ids(agent: Any, vectors: np.ndarray, k: int = 10) -> list[list[str]]:
    return [[h["evidence_id"] for h in agent.search("@all", "", top_k=k, query_vector=list(map(float, v)))["hits"]]
            for v in vectors]


def recall(got: list[list[str]], want: list[list[str]]) -> float:
    return round(float(np.mean([len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(got, want, strict=True)])), 4)


def during(agent: Any, data: Path, action: str, arg: str, threshold: int, words: list[str], vectors: np.ndarray,
           probe: tuple[str, list[float]] | None) -> dict[str, Any]:
    """Run `action` in a child while this process searches; the child's time and peak RSS, the
    searches' latencies, and when the probe row was first found (and found in the index)."""
    times: list[float] = []
    failures: list[str] = []
    marks: dict[str, float] = {}
    busy = [0]
    done = threading.Event()
    started = time.perf_counter()

    def search() -> None:
        at = 0
        while not done.is_set() or (probe is not None and "indexed_s" not in marks and at < 10_000):
            try:
                t0 = time.perf_counter()
                result = agent.search("@all", words[at % len(words)], top_k=10,
                                      query_vector=list(map(float, vectors[at % len(vectors)])))
                times.append((time.perf_counter() - t0) * 1000)
                group = result["library"]["model_groups"][0].get("vector_index", {})
                busy[0] += bool(group.get("stale"))
                if probe is not None and "indexed_s" not in marks:
                    found = agent.search("@all", "", top_k=1, query_vector=probe[1])
                    if found["hits"] and found["hits"][0]["evidence_id"] == probe[0]:
                        now = time.perf_counter() - started
                        marks.setdefault("searchable_s", now)
                        held = found["library"]["model_groups"][0].get("vector_index", {})
                        if held and not held.get("exact_books") and held.get("vectors", 0) > 0 \
                                and found["library"]["model_groups"][0]["search"] == "approximate":
                            marks["indexed_s"] = now
            except Exception as exc:  # noqa: BLE001
                failures.append(repr(exc)[:300])
            at += 1

    thread = threading.Thread(target=search)
    thread.start()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(data), action, arg, str(threshold)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'adapters'}"})
    out, err = child.communicate()
    seconds = time.perf_counter() - started
    done.set()
    thread.join()
    if child.returncode != 0:
        raise SystemExit(err.decode())
    reported = json.loads(out.decode().strip().splitlines()[-1])
    return {"child_s": round(seconds, 2), "child_peak_rss_mb": round(reported["peak_kib"] / 1024),
            "groups": reported["groups"],
            "search_p50_ms": round(percentile(times, 0.5), 1) if times else None,
            "search_p95_ms": round(percentile(times, 0.95), 1) if times else None,
            "search_max_ms": round(max(times), 1) if times else None,
            "searches": len(times), "busy_searches": busy[0], "search_failures": len(failures),
            "failures": failures[:3], **{k: round(v, 2) for k, v in marks.items()}}


def measure(size: int, books: int, add: int, runs: int, cache: Path) -> dict[str, Any]:
    from tests.support.package_builder import synthetic_records
    from tools.bench.library.bench_library import phase_progress, progress

    roots, extra = build_books(size, books), added_book(add)
    data = BENCH / f"living-vectors-data-{size}-{ROOT.name}"  # one per worktree: benches run side by side
    shutil.rmtree(data, ignore_errors=True)
    row: dict[str, Any] = {"records": size, "books": books, "added_records": add, "dims": DIMS}
    vectors, source = query_vectors(runs, cache, real_document_vectors())
    row["queries"] = f"{len(vectors)} {source}"
    words = [" ".join(r.text.rstrip(".").split(" ")[:4]) for r in synthetic_records(runs, seed=9, cjk_share=0.0)]
    with agent_for(data, size) as agent, agent_for(data, 10**12) as exact:
        for n, root in enumerate(roots, 1):
            progress(f"{data.name}: init {root.name} ({n}/{len(roots)}) ...")
            agent.init(root, phases=phase_progress(f"{data.name}: {root.name}"))
        started = time.perf_counter()
        agent.prepare("@all", phases=phase_progress(data.name))
        row["prepare_s"] = round(time.perf_counter() - started, 1)
        row["full_build_s"] = pointer(data)["build_s"]
        exact_before = vector_ids(exact, vectors)
        row["recall@10_base"] = recall(vector_ids(agent, vectors), exact_before)
        probe_row = mixes(real_document_vectors(), add, seed=2000)[123]  # the added book's row 123
        probe_id = f"lvadd{add}-b1#lvadd{add}-b1-s{123:06d}"
        added = during(agent, data, "add", str(extra), size, words, vectors, (probe_id, list(map(float, probe_row))))
        row.update({f"add_{k}": v for k, v in added.items() if k != "groups"})
        row["add_vector_index"] = added["groups"][0].get("vector_index") if added["groups"] else None
        exact_after = vector_ids(exact, vectors)
        row["recall@10_after_add"] = recall(vector_ids(agent, vectors), exact_after)
        row["drift_after_add"] = round(drift(data), 4)
        row["add_segment_s"] = pointer(data)["segments"][-1]["build_s"]  # its rows read, encoded, written
        retrain = during(agent, data, "retrain", "-", size, words, vectors, None)
        row.update({f"retrain_{k}": v for k, v in retrain.items() if k != "groups"})
        row["retrain_s"] = pointer(data)["build_s"]
        row["recall@10_after_retrain"] = recall(vector_ids(agent, vectors), exact_after)
    return row


def pointer(data: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(next((data / "library" / "vectors").glob("*.json")).read_text())
    return found


def drift(data: Path) -> float:
    from book_agent_adapters.bench import vectors_drift_of as drift_of

    return drift_of(pointer(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated library sizes in records")
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--add", type=int, default=10_000, help="records of the book added")
    parser.add_argument("--runs", type=int, default=100, help="query vectors")
    parser.add_argument("--query-cache", type=Path, default=ROOT / ".eval" / "cache")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")
    rows = []
    for size in args.sizes.split(","):
        rows.append(measure(int(size), args.books, args.add, args.runs, args.query_cache))
        if not args.json:
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
