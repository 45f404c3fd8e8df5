"""The `milvus` library backend against `local`, in the same run: load time and warm query times.

    .venv/bin/python tools/bench/library/bench_library_milvus.py [--sizes 100000] [--books 4] [--runs 100] [--json]

The books are tools/bench/library/bench_library_vectors.py's (synthetic EPUB packages, 384-d vectors mixed
from real all-MiniLM-L6-v2 document vectors; cached under .bench/library_vectors/packages).
They are registered in a fresh data dir, then:

- milvus: `prepare @all` loads both channels (its term counting is the cold part; the local
  build that follows reuses the counts, so local's figure is the merge alone) into the server
  of $BOOK_AGENT_MILVUS_URI, else into milvus-lite started for the run (.venv-milvus);
- local: `prepare @all` (the impact index; vectors are searched exactly below 100,000);
- each backend's lexical channel alone (depth 50), its vector channel alone (depth 50, a query
  vector supplied) and warm hybrid `search("@all", words, top_k=10, query_vector=...)`, p50/p95,
  one backend after the other in this process; and how far Milvus's hits are from local's
  (lexical top-10 overlap and the share of queries whose top-10 scores are equal, so that hits
  that differ are ties at the cut; vector recall@10 against exact search).

milvus-lite is one process on this machine: a real cluster's latency adds the network and
its proxies, and its throughput scales with query nodes (contracts/beyond-one-node.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import percentile

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "library_milvus"
DEPTH = 50
sys.path.insert(0, str(ROOT))


def timed(calls: list[Any]) -> tuple[list[float], list[Any]]:
    times, out = [], []
    for call in calls:
        started = time.perf_counter()
        out.append(call())
        times.append((time.perf_counter() - started) * 1000)
    return times, out


def channels(agent: Any, words: list[str], vectors: list[list[float]]) -> dict[str, Any]:
    """p50/p95 of each channel alone and of hybrid search, warm; the hits, to compare."""
    from book_agent.domain.book.book_refs import parse_book_ref

    searcher, report = agent._library.searcher(parse_book_ref("@all"))
    lexical, vector = searcher.channels.lexical, searcher.channels.vector_search
    assert lexical is not None and vector is not None
    lexical.search(words[0], DEPTH)
    vector("", DEPTH, vectors[0])
    agent.search("@all", words[0], top_k=10, query_vector=vectors[0])
    row: dict[str, Any] = {"vector_search": vector("", DEPTH, vectors[0])[2]["groups"][0]["search"]}
    lex_times, lex_hits = timed([lambda w=w: [(h.record_id, h.score) for h in lexical.search(w, DEPTH)] for w in words])
    vec_times, vec_hits = timed([lambda v=v: vector("", DEPTH, v)[0] for v in vectors])
    hyb_times, _ = timed([lambda w=w, v=v: agent.search("@all", w, top_k=10, query_vector=v)
                          for w, v in zip(words, vectors, strict=True)])
    for name, times in (("lexical", lex_times), ("vector", vec_times), ("hybrid", hyb_times)):
        row[f"{name}_p50_ms"] = round(percentile(times, 0.5), 2)
        row[f"{name}_p95_ms"] = round(percentile(times, 0.95), 2)
    row["_lexical"], row["_vector"] = lex_hits, vec_hits
    return row


def overlap(a: list[list[str]], b: list[list[str]], k: int = 10) -> float:
    return round(sum(len(set(x[:k]) & set(y[:k])) / max(1, len(y[:k])) for x, y in zip(a, b, strict=True))
                 / max(1, len(a)), 4)


def same_scores(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """The same top scores (to float32 precision): hits that differ are then only ties at the cut,
    which the local index picks arbitrarily among (numpy's argpartition)."""
    return len(a) == len(b) and all(abs(x - y) <= 1e-5 * max(1.0, abs(y)) for (_, x), (_, y) in zip(a, b, strict=True))


def measure(size: int, books: int, runs: int, uri: str) -> dict[str, Any]:
    import numpy as np

    from book_agent.agent import build_agent
    from tests.support.package_builder import synthetic_records
    from tools.bench.library.bench_library_vectors import (
        build_books,
        query_vectors,
        real_document_vectors,
    )

    roots = build_books(size, books)
    data = BENCH / f"data-{size}"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    (data / "config.toml").write_text(f'[library.milvus]\nuri = "{uri}"\nprefix = "bench_{size}"\ntimeout_s = 600\n')
    row: dict[str, Any] = {"records": size, "books": books, "dims": 384}
    with build_agent(data, library_backend="local") as agent:
        for root in roots:
            agent.init(root)
    vectors_np, source = query_vectors(runs, ROOT / ".eval" / "cache", real_document_vectors())
    vectors = [list(map(float, v)) for v in np.asarray(vectors_np)]
    words = [" ".join(r.text.rstrip(".").split(" ")[:4]) for r in synthetic_records(len(vectors), seed=9,
                                                                                     cjk_share=0.0)]
    row["queries"] = f"{len(vectors)} ({source})"
    found: dict[str, dict[str, Any]] = {}
    for backend in ("milvus", "local"):
        with build_agent(data, library_backend=backend) as agent:
            started = time.perf_counter()
            agent.prepare("@all")
            row[f"{backend}_prepare_s"] = round(time.perf_counter() - started, 1)
            found[backend] = channels(agent, words, vectors)
    for backend, figures in found.items():
        row.update({f"{backend}_{k}": v for k, v in figures.items() if not k.startswith("_")})
    ids = {b: [[k for k, _ in hits] for hits in found[b]["_lexical"]] for b in found}
    row["lexical_overlap@10"] = overlap(ids["milvus"], ids["local"])
    row["lexical_top10_scores_equal"] = round(sum(same_scores(m[:10], loc[:10]) for m, loc in zip(
        found["milvus"]["_lexical"], found["local"]["_lexical"], strict=True)) / max(1, len(words)), 4)
    row["vector_recall@10"] = overlap(found["milvus"]["_vector"], found["local"]["_vector"])
    return row


def main() -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated library sizes in records")
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from tools.dev.milvus_test_server import milvus_lite, python

    external = os.environ.get("BOOK_AGENT_MILVUS_URI", "").strip()
    if not external and python() is None:
        print("skipped: no Milvus (set BOOK_AGENT_MILVUS_URI, or `make install-milvus` for milvus-lite)")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-milvus-") as folder:
        server = milvus_lite(Path(folder)) if not external else None
        uri = server.__enter__() if server else external
        try:
            rows = [measure(int(s), args.books, args.runs, uri) for s in args.sizes.split(",")]
        finally:
            if server:
                server.__exit__(None, None, None)
    for row in rows:
        row["server"] = "external" if external else "milvus-lite 2.5.1 (loopback, same machine)"
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
