"""The lexical channel against a raw FTS5 query of the same expression on the same index.

    .venv/bin/python tools/bench/search/bench_lexical.py [--records 20000] [--words 30] [--runs 30] [--json]

Builds a synthetic book (Zipf word statistics, tests/support/package_builder.py) under .bench/lexical/
once, then times, interleaved in one process: `FtsLexicalIndex.search` (term extraction,
CJK segmentation and folding, BM25 top 50 with the id join) and the bare SQL of the same
MATCH expression. The channel keeps every term of a long query, so the two should be close.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "lexical"
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support


def build(records: int) -> Path:
    from book_agent_adapters.bench import build_sidecar
    from tests.support.package_builder import build_package, synthetic_records

    sidecar = BENCH / f"lexical-{records}.sqlite"
    if not sidecar.is_file():
        root = build_package(BENCH / f"pkg-{records}", kind="epub", vectors="none",
                             records=synthetic_records(records, cjk_share=0.1))
        build_sidecar(root / "index.sqlite", sidecar, {"tokenizer_version": "bench"})
    return sidecar


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--words", type=int, default=30)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from book_agent.domain.search.lexical_text import query_terms
    from book_agent_adapters.bench import HEADINGS_WEIGHT, FtsLexicalIndex, fold_chinese
    from tests.support.package_builder import synthetic_records

    sidecar = build(args.records)
    index = FtsLexicalIndex(sidecar)
    raw = sqlite3.connect(f"file:{sidecar}?mode=ro", uri=True)
    sql = (f"SELECT ids.record_id, bm25(fts, 1.0, {HEADINGS_WEIGHT}) AS s FROM fts JOIN ids ON ids.rowid = fts.rowid "
           "WHERE fts MATCH ? ORDER BY s LIMIT 50")
    sources = synthetic_records(args.records, cjk_share=0.1)
    queries = [" ".join(sources[i * 97 % args.records].text.split()[: args.words]) for i in range(args.runs)]
    channel_ms, raw_ms = [], []
    for query in queries:
        expression = " OR ".join(query_terms(query, fold_chinese))
        started = time.perf_counter()
        index.search(query, 50)
        channel_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        raw.execute(sql, (expression,)).fetchall()
        raw_ms.append((time.perf_counter() - started) * 1000)
    result = {"records": args.records, "query_words": args.words, "runs": args.runs,
              "channel_p50_ms": round(statistics.median(channel_ms), 2),
              "raw_fts5_p50_ms": round(statistics.median(raw_ms), 2)}
    result["ratio"] = round(result["channel_p50_ms"] / result["raw_fts5_p50_ms"], 2)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.words}-word query on {args.records:,} records: lexical channel p50 "
              f"{result['channel_p50_ms']} ms, raw FTS5 of the same expression p50 {result['raw_fts5_p50_ms']} ms "
              f"(ratio {result['ratio']}; target <= 3)")


if __name__ == "__main__":
    main()
