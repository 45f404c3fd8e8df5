"""What the passage-reading step (book_agent/services/search/passage_reading.py) costs a warm search, interleaved.

    .venv/bin/python tools/bench/search/bench_passage_reading.py [--rounds 30] [--library RECORDS] [--json]

One process, one registered book (default: the example book), its question file's queries
encoded once by the book's own query runtime. Each round searches every query with the step and
without it (the same searcher with `passage_terms=None`), the arms' order alternating per
round, so both see the same machine. Reported: the warm p50 of a search with a supplied query
vector (the path tools/bench/peers/bench_peers.py times) and of a text query (encoded each time), with
and without the step, their ratio, and the step's first-read cost (an empty reader cache:
each passage read afresh, as a new process or a new passage pays). Load average stated.
With `--library RECORDS`: the same over `@all` of bench_library.py's four synthetic books
(random vectors, so supplied-vector searches only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "examples" / "art-of-war-package"
sys.path.insert(0, str(ROOT))  # the test helpers (tests.support), for --library
QUESTIONS = ROOT / "examples" / "art-of-war.questions.jsonl"


def _p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def measure(rounds: int, package: Path, questions: Path, library: int = 0) -> dict[str, Any]:
    from book_agent import BookAgent
    from book_agent.domain.book.book_refs import parse_book_ref
    from book_agent.services.search.hybrid import HybridSearch

    with tempfile.TemporaryDirectory() as tmp, BookAgent(Path(tmp) / "data") as agent:
        if library:  # bench_library.py's synthetic books (cached under .bench/library/), as @all
            import numpy as np

            from tests.support.package_builder import synthetic_records
            from tools.bench.library.bench_library import build_books

            for root in build_books(library, 4, 384):
                agent.init(root)
            agent.prepare("@all")
            book_id = "@all"
            reading, _ = agent._library.searcher(parse_book_ref(book_id))
            queries = [" ".join(r.text.rstrip(".").split(" ")[:4]) for r in synthetic_records(30, seed=9, cjk_share=0.0)]
            rng = np.random.default_rng(5)
            vectors = [list(map(float, v / np.linalg.norm(v))) for v in rng.standard_normal((len(queries), 384))]
            kinds: tuple[str, ...] = ("vector",)  # random vectors: no model to encode a text query
        else:
            queries = [json.loads(line)["query"] for line in questions.read_text(encoding="utf-8").splitlines()
                       if line.strip()]
            book_id = agent.init(package)["book_id"]
            book = agent.books.open(book_id)
            book.warm_up()
            reading = book.searcher()
            runtime = reading.channels.query_runtime
            assert runtime is not None
            vectors = [runtime.encode_query(q).vector for q in queries]
            kinds = ("vector", "text")
        assert reading.channels.passage_terms is not None
        plain = HybridSearch(book_id, replace(reading.channels, passage_terms=None))
        times: dict[str, list[float]] = {k: [] for k in ("vector+read", "vector", "text+read", "text")}
        applied = searches = 0
        # Each arm asks every query in turn (never one query twice in a row: a search's parse
        # of its query is kept for its own passage reader only), the arms' order alternating.
        for round_ in range(rounds + 1):  # round 0 warms both (and fills the reader's cache)
            arms = [(reading, "+read"), (plain, "")] if round_ % 2 else [(plain, ""), (reading, "+read")]
            for searcher, tag in arms:
                for kind in kinds:
                    for query, vector in zip(queries, vectors, strict=True):
                        started = time.perf_counter()
                        result = searcher.search(query, top_k=10, query_vector=vector if kind == "vector" else None)
                        took = time.perf_counter() - started
                        if round_:
                            times[kind + tag].append(took)
                            if tag and kind == "vector":
                                searches += 1
                                applied += result.fusion["passage_reading"]["applied"]
        first_read = []
        for query, vector in zip(queries, vectors, strict=True):  # each passage read afresh
            reading.channels.passage_terms.close()
            started = time.perf_counter()
            reading.search(query, top_k=10, query_vector=vector)
            first_read.append(time.perf_counter() - started)
        p50 = {k: _p50_ms(v) for k, v in times.items() if v}
        return {
            "book": book_id, "queries": len(queries), "rounds": rounds, "load_average": os.getloadavg(),
            "p50_ms": p50, "first_read_p50_ms": _p50_ms(first_read),
            "ratio_vector": round(p50["vector+read"] / p50["vector"], 3),
            "ratio_text": round(p50["text+read"] / p50["text"], 3) if "text" in p50 else None,
            "step_applied_share": round(applied / max(1, searches), 3),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--package", type=Path, default=PACKAGE)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--library", type=int, default=0, metavar="RECORDS",
                        help="time @all over bench_library.py's synthetic books of this many records instead")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.rounds, args.package, args.questions, args.library)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    p50 = report["p50_ms"]
    print(f"{report['book']}: {report['queries']} queries x {report['rounds']} interleaved rounds, "
          f"load {', '.join(f'{x:.2f}' for x in report['load_average'])}")
    print(f"  supplied vector: {p50['vector']} ms without the step, {p50['vector+read']} ms with it "
          f"(x{report['ratio_vector']}); first read (empty cache) {report['first_read_p50_ms']} ms")
    if "text" in p50:
        print(f"  text query:      {p50['text']} ms without, {p50['text+read']} ms with (x{report['ratio_text']})")
    print(f"  the step re-scored hits in {report['step_applied_share']:.0%} of the searches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
