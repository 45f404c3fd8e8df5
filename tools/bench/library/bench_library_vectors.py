"""Library vector figures: the approximate index (faiss IVF-SQ8, rescored exactly) against exact search.

    .venv/bin/python tools/bench/library/bench_library_vectors.py [--sizes 100000] [--books 4] [--runs 100] [--json]
    .venv/bin/python tools/bench/library/bench_library_vectors.py --sizes 100000,1000000   # 1M: ~1.5 GB of vectors, ~30 min
    flock .bench/.build.lock .venv/bin/python tools/bench/library/bench_library_vectors.py --sizes 1000000 --build-only

The packages and each size's data dir (`prepare @all` done) are a cache (.bench/library_vectors/,
shared between worktrees: build it under the flock above): a package is complete only once
renamed into place, a data dir once its `.bench-complete.json` marker, written last, names its
packages and threshold. A complete one is reused; a build that broke midway is finished where it
stopped (`--rebuild`: afresh); progress goes to stderr. `--build-only` builds and stops (what
tools/bench/peers/bench_peers.py and the 1M figures start from).

For each size it builds `--books` synthetic EPUB packages (Zipf words as tools/bench/library/bench_library.py)
whose 384-d vectors are realistic: each a mix of two real all-MiniLM-L6-v2 document vectors of
the eval sets (eval/vectors) plus noise, as tools/study/scale_study.py made them (cached under
.bench/library_vectors/). It registers them in a fresh data dir and reports:

- init, and `prepare @all` (the library's lexical index, then the approximate index: its own
  build time and size on disk);
- the library's vector channel alone (depth 50, a query vector supplied) p50/p95, exact (every
  book searched exactly) against approximate, each in a process of its own, and recall@10 and
  @50 of approximate against exact;
- the peak RSS of the process that searched through the approximate index (warm hybrid
  searches included) above its RSS before opening the library, against the raw vector bytes
  (the index, its ids and the books' matrices are memory-mapped: the pages a search touched,
  and their neighbours the kernel maps with them, count);
- warm hybrid `search("@all", words, top_k=10, query_vector=...)` p50/p95 and its lexical
  channel alone, and cold `book-agent search @all ... --json --query-vector FILE`.

The approximate index is built here at every size (its threshold lowered to the size) to be
measured; the product uses it from APPROXIMATE_MIN_VECTORS (100,000) vectors per model group,
and the cold CLI runs with the product's threshold (its JSON says which search it used).
Query vectors: the eval sets' real test queries from the query cache (`--query-cache`, default
.eval/cache, made by `make eval`), else noisier mixes of the document vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import percentile

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "library_vectors"
DIMS = 384
DEPTH = 50  # the vector channel's depth for top_k <= 10 (book_agent/services/search/hybrid.py CANDIDATES_MIN)
HYBRID_RUNS = 50  # hybrid searches timed per process (the lexical channel is slow at 1M until replaced)
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support


def real_document_vectors() -> np.ndarray:
    from tools.eval.eval_sets import BENCH_VECTOR_SETS

    rows = [np.load(ROOT / "eval" / "vectors" / f"{name}.npz")["vectors"] for name in sorted(BENCH_VECTOR_SETS)]
    base = np.concatenate(rows).astype(np.float32)
    return base / np.linalg.norm(base, axis=1, keepdims=True)


def mixes(base: np.ndarray, n: int, seed: int, sigma: float = 0.02) -> np.ndarray:
    """n unit vectors, each 0.6-1.0 of one real vector and the rest of another, plus noise
    (tools/study/scale_study.py synth_vectors): clustered around real topics, as a model's vectors are."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(n, start + 100_000) - start
        a = rng.uniform(0.6, 1.0, size=(m, 1)).astype(np.float32)
        v = a * base[rng.integers(0, len(base), m)] + (1 - a) * base[rng.integers(0, len(base), m)]
        v += rng.normal(0, sigma, size=v.shape).astype(np.float32)
        out[start:start + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def query_vectors(runs: int, cache: Path, base: np.ndarray) -> tuple[np.ndarray, str]:
    found = sorted(cache.glob("*-test-queries.npz")) if cache.is_dir() else []
    if found:
        q = np.concatenate([np.load(path)["vectors"] for path in found]).astype(np.float32)
        q = q[np.random.default_rng(5).choice(len(q), size=min(runs, len(q)), replace=False)]
        return q / np.linalg.norm(q, axis=1, keepdims=True), f"real eval queries ({cache})"
    return mixes(base, runs, seed=77, sigma=0.04), "synthetic (no query cache)"


def build_books(size: int, books: int) -> list[Path]:
    """bench_library's books, with vectors mixed from real MiniLM document vectors."""
    from tools.bench.library.bench_library import build_books as synthetic_books

    base = real_document_vectors()
    return synthetic_books(size, books, DIMS, folder=BENCH / "packages", prefix="lv",
                           model="sentence-transformers/all-MiniLM-L6-v2",
                           vectors=lambda count, part: mixes(base, count, seed=1000 + part))


COMPLETE = ".bench-complete.json"  # written last: a data dir without it is half-built


def library_data(data: Path, roots: list[Path], min_vectors: int) -> dict[str, Any]:
    """`data` with every package of `roots` registered and `prepare @all` done, the approximate
    index from `min_vectors` vectors: reused when its COMPLETE marker names these packages and
    that threshold; a half-built one (a build that broke midway: no marker) is finished, as
    init is all or nothing per book and prepare rebuilds what is missing or stale; one
    registering anything else is rebuilt. COMPLETE is written last, by rename. `init_s`
    (None: nothing was registered here) and `prepare_s` are this call's."""
    from tools.bench.library.bench_library import phase_progress, progress

    # Real paths: the cache is reached through each worktree's own .bench symlink.
    wanted = {"packages": sorted(str(r.resolve()) for r in roots), "min_vectors": min_vectors}
    marker = data / COMPLETE
    if marker.is_file():
        done: dict[str, Any] = json.loads(marker.read_text())
        if sorted(str(Path(p).resolve()) for p in done.get("packages", [])) == wanted["packages"] \
                and done.get("min_vectors") == min_vectors:
            if probes_changed(data):  # trained before the product's probes changed (issue 29): retrained
                progress(f"{data.name}: its approximate index probes other than the product's, retrained")
                with agent_for(data, min_vectors=min_vectors) as agent:
                    agent.prepare("@all", full=True)
            progress(f"{data.name}: complete, reused")
            return {**done, "init_s": None, "prepare_s": None, "reused": True}
        progress(f"{data.name}: built from other packages or settings, rebuilt")
        shutil.rmtree(data)
    with agent_for(data, min_vectors=min_vectors) as agent:
        registered = {str(Path(str(row["package_root"])).resolve()) for row in agent.list_books()} \
            if data.exists() else set()
    if registered - set(wanted["packages"]):
        progress(f"{data.name}: registers other packages, rebuilt")
        shutil.rmtree(data)
        registered = set()
    with agent_for(data, min_vectors=min_vectors) as agent:
        started = time.perf_counter()
        missing = [r for r in roots if str(r.resolve()) not in registered]
        if registered:
            progress(f"{data.name}: half-built ({len(registered)} of {len(roots)} books registered), finishing it")
        for n, root in enumerate(missing, 1):
            progress(f"{data.name}: init {root.name} ({n}/{len(missing)}) ...")
            agent.init(root, phases=phase_progress(f"{data.name}: {root.name}"))
        init_s = round(time.perf_counter() - started, 1) if missing else None
        progress(f"{data.name}: prepare @all (the lexical index, then the approximate index) ...")
        started = time.perf_counter()
        prepared = agent.prepare("@all", phases=phase_progress(data.name))
        prepare_s = round(time.perf_counter() - started, 1)
    done = {**wanted, "vector_indexes": prepared["vector_indexes"], "built_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    partial = marker.with_suffix(".tmp")
    partial.write_text(json.dumps(done, default=str))
    partial.replace(marker)
    progress(f"{data.name}: complete")
    return {**done, "init_s": init_s, "prepare_s": prepare_s, "reused": False}


def probes_changed(data: Path) -> bool:
    """Whether an approximate index of `data` probes other than the product now trains it to."""
    from book_agent_adapters.bench import probes_for

    for path in (data / "library" / "vectors").glob("*.json"):
        pointer = json.loads(path.read_text())
        if int(pointer["nprobe"]) != probes_for(int(pointer["base_rows"]), int(pointer["nlist"])):
            return True
    return False


def agent_for(data: Path, min_vectors: int) -> Any:
    from book_agent.agent import build_agent
    from book_agent_adapters.bench import FaissLibraryVectors

    return build_agent(data, library_vectors=FaissLibraryVectors(data / "library", min_vectors=min_vectors))


def measure(size: int, books: int, runs: int, cache: Path, rebuild: bool = False) -> dict[str, Any]:
    from tests.support.package_builder import synthetic_records

    started = time.perf_counter()
    roots = build_books(size, books)
    figures: dict[str, Any] = {"records": size, "books": books, "dims": DIMS,
                               "packages_built_s": round(time.perf_counter() - started, 1),
                               "raw_vectors_mb": round(size * DIMS * 4 / 2**20, 1)}
    data = BENCH / f"data-{size}"
    if rebuild:
        shutil.rmtree(data, ignore_errors=True)
    built = library_data(data, roots, size)
    figures.update(init_s=built["init_s"], prepare_s=built["prepare_s"], vector_indexes=built["vector_indexes"])
    pointer = json.loads(next((data / "library" / "vectors").glob("*.json")).read_text())
    figures.update(ann_build_s=pointer["build_s"], ann_nlist=pointer["nlist"], ann_nprobe=pointer["nprobe"],
                   ann_disk_mb=round(pointer["files"]["index"]["size"] / 2**20, 1),
                   ann_ids_mb=round(pointer["files"]["ids"]["size"] / 2**20, 1))
    vectors, source = query_vectors(runs, cache, real_document_vectors())
    figures["queries"] = f"{len(vectors)} {source}"
    words = [" ".join(r.text.rstrip(".").split(" ")[:4]) for r in synthetic_records(runs, seed=9, cjk_share=0.0)]
    np.save(BENCH / "queries.npy", vectors)
    (BENCH / "words.json").write_text(json.dumps(words))
    exact = probe(data, "exact", size)
    approximate = probe(data, "approximate", size)
    figures["vector_exact_p50_ms"], figures["vector_exact_p95_ms"] = exact["vector_p50_ms"], exact["vector_p95_ms"]
    figures["vector_ann_p50_ms"], figures["vector_ann_p95_ms"] = approximate["vector_p50_ms"], approximate["vector_p95_ms"]
    for k in (10, DEPTH):
        figures[f"recall@{k}"] = round(float(np.mean([len(set(a[:k]) & set(e[:k])) / max(1, len(e[:k]))
                                                      for a, e in zip(approximate["ids"], exact["ids"], strict=True)])), 4)
    for mode, found in (("exact", exact), ("ann", approximate)):
        figures[f"hybrid_{mode}_p50_ms"], figures[f"hybrid_{mode}_p95_ms"] = found["hybrid_p50_ms"], found["hybrid_p95_ms"]
    figures["lexical_p50_ms"], figures["lexical_p95_ms"] = approximate["lexical_p50_ms"], approximate["lexical_p95_ms"]
    figures["rss_ann_process_mb"] = approximate["rss_peak_mb"]
    figures["rss_added_ann_mb"] = round(approximate["rss_peak_mb"] - approximate["rss_start_mb"], 1)
    figures["rss_added_over_raw"] = round(figures["rss_added_ann_mb"] / figures["raw_vectors_mb"], 2)
    figures["rss_added_exact_mb"] = round(exact["rss_peak_mb"] - exact["rss_start_mb"], 1)
    figures["cold_cli_s"], figures["cold_cli_search"] = cold_cli(data, words[0], vectors[0])
    return figures


def probe(data: Path, mode: str, size: int) -> dict[str, Any]:
    out = BENCH / f"probe-{mode}.json"
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--probe", mode, "--data", str(data),
                    "--min-vectors", str(size if mode == "approximate" else 10**12), "--out", str(out)],
                   check=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def run_probe(data: Path, mode: str, min_vectors: int, out: Path) -> None:
    """In a process of its own: the vector channel and hybrid search, exact or approximate."""
    from book_agent.domain.book.book_refs import parse_book_ref

    vectors = [list(map(float, v)) for v in np.load(BENCH / "queries.npy")]
    words = json.loads((BENCH / "words.json").read_text())
    start_rss = peak_rss_mb()
    with agent_for(data, min_vectors) as agent:
        searcher, _ = agent._library.searcher(parse_book_ref("@all"))
        channel = searcher.channels.vector_search
        assert channel is not None
        ids, _, info, _ = channel("", DEPTH, vectors[0])  # opens the index, maps the matrices
        assert info["groups"][0]["search"] == mode, info
        times, found = [], []
        for vector in vectors:
            started = time.perf_counter()
            ids, _, _, _ = channel("", DEPTH, vector)
            times.append((time.perf_counter() - started) * 1000)
            found.append(ids)
        lexical = searcher.channels.lexical
        assert lexical is not None
        lexical_times, hybrid_times = [], []
        agent.search("@all", words[0], top_k=10, query_vector=vectors[0])
        for query, vector in list(zip(words, vectors, strict=False))[:HYBRID_RUNS]:
            if mode == "approximate":  # the lexical channel is the same in both processes
                started = time.perf_counter()
                lexical.search(query, DEPTH)
                lexical_times.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            agent.search("@all", query, top_k=10, query_vector=vector)
            hybrid_times.append((time.perf_counter() - started) * 1000)
    result = {"ids": found, "vector_p50_ms": round(percentile(times, 0.5), 2),
              "vector_p95_ms": round(percentile(times, 0.95), 2),
              "lexical_p50_ms": round(percentile(lexical_times, 0.5), 2) if lexical_times else None,
              "lexical_p95_ms": round(percentile(lexical_times, 0.95), 2) if lexical_times else None,
              "hybrid_p50_ms": round(percentile(hybrid_times, 0.5), 2),
              "hybrid_p95_ms": round(percentile(hybrid_times, 0.95), 2),
              "rss_start_mb": round(start_rss, 1), "rss_peak_mb": round(peak_rss_mb(), 1)}
    out.write_text(json.dumps(result))


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM (ru_maxrss would start from the parent's
    size at fork: Linux keeps it across exec), else ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cold_cli(data: Path, query: str, vector: np.ndarray) -> tuple[float, str]:
    vector_file = BENCH / "query-vector.json"
    vector_file.write_text(json.dumps(list(map(float, vector))))
    argv = [sys.executable, "-m", "book_agent", "--data-dir", str(data), "search", "@all", query,
            "--json", "--query-vector", str(vector_file)]
    samples, search = [], "?"
    for _ in range(3):
        started = time.perf_counter()
        out = subprocess.run(argv, check=True, capture_output=True, cwd=ROOT)
        samples.append(time.perf_counter() - started)
        search = json.loads(out.stdout)["library"]["model_groups"][0]["search"]
    return round(statistics.median(samples), 2), search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000", help="library sizes in records, comma-separated")
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--runs", type=int, default=100, help="queries timed per size")
    parser.add_argument("--query-cache", type=Path, default=ROOT / ".eval" / "cache")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rebuild", action="store_true",
                        help="build each size's data dir afresh (by default a complete one is reused and a "
                             "half-built one finished: init and prepare are then timed only for what was left)")
    parser.add_argument("--build-only", action="store_true",
                        help="build (or finish) the packages and the data dir of each size, then stop: "
                             "the cache tools/bench/peers/bench_peers.py and the living benches start from")
    parser.add_argument("--probe", choices=["exact", "approximate"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--min-vectors", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        run_probe(args.data, args.probe, args.min_vectors, args.out)
        return
    BENCH.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")
    if args.build_only:
        for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
            library_data(BENCH / f"data-{size}", build_books(size, args.books), size)
        return
    results = [measure(int(s), args.books, args.runs, args.query_cache, args.rebuild)
               for s in args.sizes.split(",") if s.strip()]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        print(f"{r['records']:>9,} records in {r['books']} books ({r['dims']}-d, {r['raw_vectors_mb']} MB raw), "
              f"{r['queries']}:\n"
              f"  init {r['init_s'] if r['init_s'] is not None else '(reused)'} s; prepare @all {r['prepare_s'] if r['prepare_s'] is not None else '(reused)'} s, "
              f"of it the approximate index "
              f"{r['ann_build_s']} s (nlist {r['ann_nlist']}, nprobe {r['ann_nprobe']}, {r['ann_disk_mb']} MB "
              f"+ {r['ann_ids_mb']} MB of row ids)\n"
              f"  vector channel (depth {DEPTH}) exact p50 {r['vector_exact_p50_ms']} / p95 {r['vector_exact_p95_ms']} ms; "
              f"approximate p50 {r['vector_ann_p50_ms']} / p95 {r['vector_ann_p95_ms']} ms; "
              f"recall@10 {r['recall@10']}, recall@{DEPTH} {r[f'recall@{DEPTH}']}\n"
              f"  RSS added by searching approximately {r['rss_added_ann_mb']} MB = {r['rss_added_over_raw']}x raw "
              f"(exact: {r['rss_added_exact_mb']} MB)\n"
              f"  warm hybrid p50 / p95: approximate {r['hybrid_ann_p50_ms']} / {r['hybrid_ann_p95_ms']} ms, "
              f"exact {r['hybrid_exact_p50_ms']} / {r['hybrid_exact_p95_ms']} ms; lexical channel alone "
              f"{r['lexical_p50_ms']} / {r['lexical_p95_ms']} ms\n"
              f"  cold CLI {r['cold_cli_s']} s ({r['cold_cli_search']} vector search at the product's threshold)")


if __name__ == "__main__":
    main()
