"""The `milvus` backend on a real Milvus 2.3.5 standalone server (tools/dev/milvus_netns_server.py,
`make install-milvus-server`; root, for its network namespace): what milvus-lite hides.

    nice .venv/bin/python tools/bench/library/bench_milvus_server.py [--books 20] [--per-book 1000] [--queries 50] [--json]

- consistency: the vector channel's search (depth 50) and a pointer read, p50/p95, with every
  read Strong (`read_consistency = "strong"`) and with the default (`auto`: Bounded once the
  generation is older than `bounded_after_s`);
- filtered recall: recall@10 of searches narrowed to 2 of the books, against exact search of
  those books, per dense index type (FLAT, HNSW, IVF_FLAT, IVF_SQ8: the quantized one rescored
  exactly), and unfiltered;
- refused builds: the lexical channel's build (2.3 has no sparse vectors) asked N times with
  the rate limit off, and the collections left behind counted;
- a hung server (SIGSTOP) with `timeout_s` 5: the first vector search and the next ten, each
  timed, then the recovery after `breaker_s` once it is thawed.

The books are synthetic: clustered unit vectors (384-d), each book drawn around a few centres of
its own with shared ones mixed in, so a filter on books removes most of a query's neighbours.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

DIMS = 384
MODEL = "bench/clustered"


def _books(count: int, per_book: int, seed: int = 11) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal((8, DIMS))
    books = {}
    for b in range(count):
        own = rng.standard_normal((3, DIMS))
        centres = np.vstack([own, shared[rng.choice(8, 2, replace=False)]])
        picks = centres[rng.integers(0, len(centres), per_book)]
        rows = picks + 0.9 * rng.standard_normal((per_book, DIMS))
        books[f"book{b:03d}"] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return books


def _stores(folder: Path, books: dict[str, np.ndarray]) -> dict[str, Any]:
    from book_agent.domain.records import Record
    from book_agent.testing.library_books import vector_manifest, write_package_database
    from book_agent_adapters.bench import PrebuiltVectorStoreAdapter

    stores = {}
    for book_id, rows in books.items():
        records = [Record(f"r{i:05d}", f"record {i}", seq=i) for i in range(len(rows))]
        path = write_package_database(folder / "packages" / book_id, book_id, records, rows, model=MODEL)
        stores[book_id] = PrebuiltVectorStoreAdapter(path, vector_manifest(rows, model=MODEL),
                                                     sidecar_dir=folder / "runtime" / book_id, book_id=book_id)
    return stores


def _stamp(book_ids: list[str]) -> dict[str, str]:
    from book_agent.testing.library_vectors_contract import stamp

    stamped = stamp(book_ids)
    stamped["model"], stamped["dimensions"] = MODEL, str(DIMS)
    return stamped


def _backend(uri: str, data: Path, prefix: str, **options: Any) -> Any:
    from book_agent.domain.library import LibraryBackendSetting
    from book_agent_adapters.bench import create_milvus

    return create_milvus(data, LibraryBackendSetting("milvus", "bench", {
        "uri": uri, "prefix": prefix, "timeout_s": 60.0, "lease_settle_s": 1.5, **options}))


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered) * 1000, 1),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1)}


def consistency(uri: str, work: Path, books: dict[str, np.ndarray], stores: dict[str, Any], queries: np.ndarray
                ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ids = sorted(books)
    built = _backend(uri, work / "c", "bench_cons")
    start = time.perf_counter()
    built.vectors.build(MODEL, DIMS, _stamp(ids), stores, None)
    out["build_s"] = round(time.perf_counter() - start, 1)
    time.sleep(16.0)  # past bounded_after_s (15 s): the auto level reads Bounded
    for level in ("strong", "auto"):
        backend = _backend(uri, work / "c", "bench_cons", read_consistency=level)
        index = backend.vectors.open(MODEL, DIMS, _stamp(ids), stores)
        ledger = backend.vectors._ledger(MODEL, DIMS)
        searches, pointers = [], []
        for query in queries:
            started = time.perf_counter()
            index.search(query.tolist(), 50)
            searches.append(time.perf_counter() - started)
            started = time.perf_counter()
            ledger.pointer()
            pointers.append(time.perf_counter() - started)
        out[level] = {"read": backend.vectors.engine.settings.read_level(index.pointer.committed),
                      "vector_search_ms": _ms(searches), "pointer_read_ms (Strong)": _ms(pointers)}
        index.close()
    return out


def _sealed(engine: Any, collection: str, rows: int, within_s: float = 600.0) -> int:
    """Seal the collection's segments and wait for the index over them: the backend never flushes
    (a server seals segments by size and age), but a bench this small would otherwise search
    growing segments only, by brute force, whatever the index type."""
    engine.call("flush", lambda c: c.flush(collection, timeout=120))
    deadline = time.monotonic() + within_s
    name = engine.call("list indexes", lambda c: c.list_indexes(collection, field_name="vector"))[0]
    while True:
        described = engine.call("describe index", lambda c: c.describe_index(collection, name, timeout=30))
        indexed = int(described.get("indexed_rows", 0))
        if indexed >= rows or time.monotonic() > deadline:
            return indexed
        time.sleep(2.0)


def recall(uri: str, work: Path, books: dict[str, np.ndarray], stores: dict[str, Any], queries: np.ndarray,
           ef: int = 64, nprobe: int = 8) -> dict[str, Any]:
    ids = sorted(books)
    rng = np.random.default_rng(5)
    filters = [sorted(rng.choice(ids, 2, replace=False).tolist()) for _ in queries]
    keys = {b: [f"{b}#r{i:05d}" for i in range(len(rows))] for b, rows in books.items()}

    def exact(query: np.ndarray, wanted: list[str] | None) -> set[str]:
        chosen = wanted or ids
        scores = np.concatenate([books[b] @ query for b in chosen])
        names = [k for b in chosen for k in keys[b]]
        return {names[i] for i in np.argsort(-scores)[:10]}
    out: dict[str, Any] = {}
    hnsw = {"m": 16, "ef_construction": 200, "ef": ef}
    for label, index_type, extra in (("FLAT", "FLAT", {}), ("HNSW", "HNSW", hnsw),
                                     ("HNSW, no partition key", "HNSW", {**hnsw, "partition_key": False}),
                                     ("IVF_FLAT", "IVF_FLAT", {"nlist": 128, "nprobe": nprobe}),
                                     ("IVF_SQ8", "IVF_SQ8", {"nlist": 128, "nprobe": nprobe})):
        backend = _backend(uri, work / label, f"bench_{len(out)}", index_type=index_type, **extra)
        backend.vectors.build(MODEL, DIMS, _stamp(ids), stores, None)
        index = backend.vectors.open(MODEL, DIMS, _stamp(ids), stores)
        indexed = _sealed(backend.vectors.engine, index.pointer.collection, sum(len(r) for r in books.values()))
        filtered, whole, times = [], [], []
        for query, wanted in zip(queries, filters, strict=True):
            started = time.perf_counter()
            hits = {k for k, _ in index.search(query.tolist(), 10, wanted)}
            times.append(time.perf_counter() - started)
            filtered.append(len(hits & exact(query, wanted)) / 10)
            whole.append(len({k for k, _ in index.search(query.tolist(), 10)} & exact(query, None)) / 10)
        out[label] = {"indexed_rows": indexed, "filtered_recall@10": round(float(np.mean(filtered)), 3),
                           "recall@10": round(float(np.mean(whole)), 3), "filtered_search_ms": _ms(times)}
        index.close()
    return out


def refused_builds(uri: str, work: Path, attempts: int) -> dict[str, Any]:
    from pymilvus import MilvusClient

    from book_agent.domain.errors import BookAgentError
    from book_agent.domain.library import LibraryMember
    from book_agent.testing.library_books import sample_library, write_package_database

    folder = work / "refused"
    members = []
    for book in sample_library(40).values():
        path = write_package_database(folder / "packages" / book.book_id, book.book_id, book.records)
        members.append(LibraryMember(book.book_id, path, len(book.records), f"s-{book.book_id}"))
    backend = _backend(uri, folder / "data", "bench_refused")
    codes = []
    for _ in range(attempts):
        backend.lexical.refusals.succeeded("lexical")  # the rate limit off: every attempt reaches the server
        try:
            backend.lexical.build(members, {"books": "x", "tokenizer_version": "1"}, None)
            codes.append("built")
        except BookAgentError as exc:
            codes.append(str(exc.details.get("engine_code", exc.code)))
    started = time.perf_counter()
    try:
        backend.lexical.build(members, {"books": "x", "tokenizer_version": "1"}, None)
    except BookAgentError as exc:
        limited = {"code": exc.code, "rate_limited": exc.details.get("rate_limited"),
                   "retry_in_s": exc.details.get("retry_in_s"), "ms": round((time.perf_counter() - started) * 1000, 1)}
    client = MilvusClient(uri=uri, timeout=30)
    left = [n for n in client.list_collections() if n.startswith("bench_refused_lex_")]
    client.close()
    return {"attempts": attempts, "codes": sorted(set(codes)), "leaked_collections": len(left),
            "next_attempt": limited}


def hung(running: Any, uri: str, work: Path, books: dict[str, np.ndarray], stores: dict[str, Any],
         queries: np.ndarray) -> dict[str, Any]:
    from book_agent.domain.errors import BookAgentError

    ids = sorted(books)
    backend = _backend(uri, work / "hung", "bench_hung", timeout_s=5.0, breaker_s=10.0)
    backend.vectors.build(MODEL, DIMS, _stamp(ids), stores, None)
    index = backend.vectors.open(MODEL, DIMS, _stamp(ids), stores)
    index.search(queries[0].tolist(), 10)
    timeline = []
    running.freeze()
    try:
        for query in queries[:11]:
            started = time.perf_counter()
            try:
                index.search(query.tolist(), 10)
                code = "answered"
            except BookAgentError as exc:
                code = exc.code
            timeline.append({"s": round(time.perf_counter() - started, 3), "code": code})
    finally:
        running.thaw()
    thawed = time.perf_counter()
    while True:
        try:
            index.search(queries[0].tolist(), 10)
            break
        except BookAgentError:
            time.sleep(0.5)
    return {"timeout_s": 5.0, "breaker_s": 10.0, "first": timeline[0], "next_ten": timeline[1:],
            "recovered_after_thaw_s": round(time.perf_counter() - thawed, 1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--books", type=int, default=20)
    parser.add_argument("--per-book", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--refusals", type=int, default=7)
    parser.add_argument("--ef", type=int, default=64, help="HNSW search breadth")
    parser.add_argument("--nprobe", type=int, default=8, help="IVF lists searched (of 128)")
    parser.add_argument("--only", choices=("consistency", "recall", "refused", "hung"), action="append")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import tools.dev.milvus_netns_server as milvus_netns_server
    books = _books(args.books, args.per_book)
    rng = np.random.default_rng(3)
    picks = [books[b][rng.integers(0, args.per_book)] for b in rng.choice(sorted(books), args.queries)]
    noisy = np.array(picks) + 0.3 * rng.standard_normal((len(picks), DIMS))
    queries = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="bench-milvus-server-") as tmp:
        work = Path(tmp)
        stores = _stores(work, books)
        report: dict[str, Any] = {"vectors": args.books * args.per_book, "books": args.books, "queries": args.queries,
                              "ef": args.ef, "nprobe": args.nprobe}
        with milvus_netns_server.milvus_server(work / "server") as running:
            report["server_version"] = "2.3.5"
            wanted = set(args.only or ("consistency", "recall", "refused", "hung"))
            if "consistency" in wanted:
                report["consistency"] = consistency(running.uri, work, books, stores, queries)
            if "recall" in wanted:
                report["filtered_recall"] = recall(running.uri, work, books, stores, queries, args.ef, args.nprobe)
            if "refused" in wanted:
                report["refused_builds"] = refused_builds(running.uri, work, args.refusals)
            if "hung" in wanted:
                report["hung_server"] = hung(running, running.uri, work, books, stores, queries)
        for store in stores.values():
            store.close()
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
