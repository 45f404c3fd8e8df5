"""The library's lexical channel at scale: build and query times of the impact index.

    .venv/bin/python tools/bench/library/bench_library_lexical.py [--sizes 100000,1000000] [--books 4] [--queries 200] [--json]

For each size it builds `--books` synthetic package databases (Zipf word statistics with the
function words real prose is full of; cached under .bench/library_lexical/), then measures:
counting every book's terms (cold: what registering the books costs the library once), the
merge when every book's counts are cached (what registering one more book costs the rest),
the index's size on disk, query p50/p95 for query kinds that stress BM25 differently
(words of one record; the same with stopwords; the commonest content words), RSS after the
queries, and the process's peak RSS (the merge's; one size per process for a clean peak).
Only the package databases are built (no vectors or originals): this is the lexical channel.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import percentile, rss_mb

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "library_lexical"
sys.path.insert(0, str(ROOT))

FUNCTION_WORDS = ("the of and a to in is you that it he was for on are as with his they i at be this have from or "
                  "had by not but what all were we when your can there an which their if do will each about how "
                  "up out them").split()


def book_database(size: int, part: int) -> Path:
    """One synthetic book of `size` records, as a package database holds them."""
    import numpy as np

    from book_agent.domain.book.package import DATABASE_SCHEMA_SQL
    from tests.support.package_builder import synthetic_records

    path = BENCH / f"b{size}-{part}.sqlite"
    if path.exists():
        return path
    BENCH.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(part)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    con.executescript(DATABASE_SCHEMA_SQL)
    rows = []
    for seq, r in enumerate(synthetic_records(size, seed=200 + part, cjk_share=0.05, words=40)):
        words = r.text.split()
        for w in np.asarray(FUNCTION_WORDS)[np.minimum(rng.zipf(1.3, size=12) - 1, len(FUNCTION_WORDS) - 1)]:
            words.insert(int(rng.integers(0, len(words) + 1)), str(w))
        rows.append((f"p{part}-{r.record_id}", seq, " ".join(words), json.dumps(r.headings), 0, 0, "{}"))
    con.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    tmp.replace(path)
    return path


def queries(database: Path, count: int) -> dict[str, list[str]]:
    import numpy as np

    from book_agent.domain.search.lexical_text import STOPWORDS

    con = sqlite3.connect(database)
    texts = [t for (t,) in con.execute("SELECT text FROM records ORDER BY random() LIMIT ?", (count,))]
    con.close()
    rng = np.random.default_rng(11)
    frequency: dict[str, int] = {}
    for text in texts:
        for w in set(text.lower().strip(".").split()):
            frequency[w] = frequency.get(w, 0) + 1
    common = [w for w, _ in sorted(frequency.items(), key=lambda kv: -kv[1]) if w not in STOPWORDS][:60]
    out: dict[str, list[str]] = {"record-words": [], "with-stopwords": [], "common-words": []}
    for text in texts:
        words = [w for w in text.lower().strip(".").split() if w not in STOPWORDS]
        size = int(rng.integers(3, 13))
        pick = [words[int(i)] for i in rng.choice(len(words), size=min(size, len(words)), replace=False)]
        out["record-words"].append(" ".join(pick))
        out["with-stopwords"].append(" ".join(pick + list(rng.choice(FUNCTION_WORDS[:20], size=3))))
        out["common-words"].append(" ".join(rng.choice(common, size=size, replace=False)))
    return out


def measure(size: int, books: int, count: int) -> dict[str, Any]:
    from book_agent.domain.library import LibraryMember
    from book_agent_adapters.bench import SqliteLibraryIndex

    per_book = size // books
    members = [LibraryMember(f"book-{p}", book_database(per_book, p), per_book, f"bench-{per_book}-{p}")
               for p in range(books)]
    folder = BENCH / f"library-{size}"
    shutil.rmtree(folder, ignore_errors=True)
    index = SqliteLibraryIndex(folder)
    started = time.perf_counter()
    index.build(members, {"books": "all"}, None)
    cold_s = time.perf_counter() - started
    started = time.perf_counter()
    index.build(members, {"books": "all, again"}, None)  # counts cached: the merge alone
    merge_s = time.perf_counter() - started
    row: dict[str, Any] = {"records": size, "books": books, "build_cold_s": round(cold_s, 1),
                           "build_cached_s": round(merge_s, 1), "disk_mb": round(sum(p.stat().st_size for p in [index.path, *folder.glob("postings-*")]) / 1e6),
                           "counts_mb": round(sum(p.stat().st_size for p in (folder / "terms").glob("*")) / 1e6)}
    row.update(integrity_costs(index, {"books": "all, again"}))
    lexical = index.open()
    started = time.perf_counter()
    lexical.search("warm up", 10)
    row["open_ms"] = round((time.perf_counter() - started) * 1000, 1)
    for kind, texts in queries(members[0].database_path, count).items():
        for run in ("", "again_"):  # the first run verifies the blocks it reads (once per process)
            times = []
            for text in texts:
                t0 = time.perf_counter()
                lexical.search(text, 50)
                times.append((time.perf_counter() - t0) * 1000)
            row[f"{kind}_{run}p50_ms"] = round(percentile(times, 0.5), 1)
            row[f"{kind}_{run}p95_ms"] = round(percentile(times, 0.95), 1)
    lexical.close()
    row["rss_after_queries_mb"] = round(rss_mb())
    row["peak_rss_mb"] = round(rss_mb("VmHWM"))  # the merge's arrays: the build's peak
    return row


def integrity_costs(index: Any, stamp: dict[str, str]) -> dict[str, float]:
    """The checks on open: `state()` (head values, postings' dtypes, sizes and file states: what
    every cold search and `prepare` pay) and every block's CRC (paid only when a postings file's
    state differs from the recorded one: written since, or the data dir copied)."""
    from book_agent_adapters.bench import Postings, connect_readonly, read_head

    started = time.perf_counter()
    assert index.state(stamp).fresh
    state_ms = (time.perf_counter() - started) * 1000
    con = connect_readonly(index.path, immutable=False)
    postings = Postings(con, index.dir, read_head(con)[0])
    started = time.perf_counter()
    postings.verify_all()
    full_ms = (time.perf_counter() - started) * 1000
    postings.close()
    con.close()
    return {"open_check_ms": round(state_ms, 1), "full_crc_check_ms": round(full_ms, 1),
            "postings": postings.count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated library sizes in records")
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(int(s), args.books, args.queries) for s in args.sizes.split(",")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
