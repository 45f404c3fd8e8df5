"""A warm book-agent in a process of its own, for tools/bench/peers/bench_peers.py's `--warm-baseline`: another
checkout's code (on PYTHONPATH) answers the same queries, interleaved with the other stacks.

    python tools/bench/peers/bench_peers_warm.py DATA_DIR REF [MIN_VECTORS]   # then one JSON line a query on stdin

Each line {"query": ..., "vector": [...]} is answered with {"keys": [...], "wall_ms": ...,
"cpu_ms": ...}, the search timed here (the pipe's cost is not the stack's). This script adds no
checkout to sys.path: `book_agent` is whichever PYTHONPATH names.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")

TOP_K = 10  # as tools/bench/peers/bench_peers.py


def main() -> int:
    import numpy as np

    from book_agent.agent import build_agent

    data_dir, ref = sys.argv[1], sys.argv[2]
    options = {}
    if len(sys.argv) > 3:  # the approximate index from this many vectors (bench_peers' "approximate" stack)
        from book_agent_adapters.bench import FaissLibraryVectors

        options["library_vectors"] = FaissLibraryVectors(os.path.join(data_dir, "library"), min_vectors=int(sys.argv[3]))
    agent = build_agent(data_dir, **options)
    agent.warm_up(ref, encoder=False)  # as bench_peers' own book-agent stack: what a server does at its start
    library = ref.startswith("@")
    print(json.dumps({"ready": True, "book_agent": sys.modules["book_agent"].__file__}), flush=True)
    for line in sys.stdin:
        asked = json.loads(line)
        vector = np.asarray(asked["vector"], dtype=np.float32)  # as bench_peers passes it: untimed
        started, started_cpu = time.perf_counter(), time.thread_time()
        hits = agent.search(ref, asked["query"], top_k=TOP_K, query_vector=vector)["hits"]
        wall, cpu = (time.perf_counter() - started) * 1000, (time.thread_time() - started_cpu) * 1000
        keys = [f"{h['book_id']}#{h['record_id']}" if library else h["record_id"] for h in hits]
        print(json.dumps({"keys": keys, "wall_ms": wall, "cpu_ms": cpu}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
