"""The living library index at scale: what adding and removing a book costs, and what searches see meanwhile.

    .venv/bin/python tools/bench_library_living.py [--sizes 100000,1000000] [--books 4] [--add 10000] [--json]

For each size: a library of `--books` synthetic books (tools/bench_library_lexical.py's package
databases, cached under .bench/library_lexical/) built once in full, then

- **add**: one more book of `--add` records brought in by `build` (its terms counted, its own
  postings written, the pointer replaced) in a child process; `add_s` is from the call to the
  first search of a new reader that finds the book (`searchable_s`), `add_peak_rss_mb` the
  child's peak RSS;
- **search during the add / the compaction**: p50/p95 of searches run in this process while
  the child writes (none waits: readers keep the generation they opened);
- **remove**: the added book removed (a filter: the pointer alone), time to a search without it;
- **compact**: the exact rebuild (`compact`, counts cached) in a child, its time and peak RSS.

Only package databases are built (the lexical channel); vectors: tools/bench_library_vectors.py.
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

from bench_library_lexical import BENCH, book_database, queries
from measure import percentile

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = """
import json, sys
from pathlib import Path
from book_agent.domain.library import LibraryMember
from book_agent_adapters.storage.library_lexical_index import SqliteLibraryIndex
folder, action, spec = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
members = [LibraryMember(b, Path(p), n, s) for b, p, n, s in spec]
stamp = {"books": ";".join(f"{b}={s}" for b, _, _, s in sorted(spec))}
index = SqliteLibraryIndex(folder)
print((index.compact if action == "compact" else index.build)(members, stamp, None))
"""


def stamp_of(members: list[Any]) -> dict[str, str]:
    return {"books": ";".join(f"{m.book_id}={m.stamp}" for m in sorted(members, key=lambda m: m.book_id))}


def in_child(folder: Path, action: str, members: list[Any], texts: list[str], index: Any) -> dict[str, Any]:
    """Run `action` in a child process while this one searches; the child's time and peak RSS,
    and the searches' latencies meanwhile."""
    spec = json.dumps([[m.book_id, str(m.database_path), m.record_count, m.stamp] for m in members])
    times: list[float] = []
    failures: list[str] = []
    done = threading.Event()

    def search() -> None:
        at = 0
        while not done.is_set():
            reader = index.open()  # a new reader each time: it opens whatever generation is in place
            try:
                t0 = time.perf_counter()
                reader.search(texts[at % len(texts)], 10)
                times.append((time.perf_counter() - t0) * 1000)
            except Exception as exc:  # noqa: BLE001
                failures.append(repr(exc))
            finally:
                reader.close()
            at += 1

    thread = threading.Thread(target=search)
    started = time.perf_counter()
    thread.start()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder), action, spec], stderr=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, cwd=ROOT,
                             env={"PYTHONPATH": f"{ROOT}:{ROOT / 'adapters'}", "PATH": "/usr/bin:/bin"})
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak RSS (ru_maxrss, KiB)
    seconds = time.perf_counter() - started
    done.set()
    thread.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(child.stderr.read().decode() if child.stderr else "the child failed")
    return {"s": round(seconds, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "search_p50_ms": round(percentile(times, 0.5), 1) if times else None,
            "search_p95_ms": round(percentile(times, 0.95), 1) if times else None,
            "searches": len(times), "search_failures": len(failures)}


def found(index: Any, text: str, book_id: str) -> bool:
    reader = index.open()
    try:
        return any(h.record_id.startswith(book_id + "#") for h in reader.search(text, 50))
    finally:
        reader.close()


def measure(size: int, books: int, add: int) -> dict[str, Any]:
    from book_agent.domain.library import LibraryMember
    from book_agent_adapters.storage.library_lexical_index import SqliteLibraryIndex

    per_book = size // books
    members = [LibraryMember(f"book-{p}", book_database(per_book, p), per_book, f"bench-{per_book}-{p}")
               for p in range(books)]
    extra = LibraryMember("added", book_database(add, 99), add, f"bench-{add}-99")
    folder = BENCH / f"living-{size}"
    shutil.rmtree(folder, ignore_errors=True)
    index = SqliteLibraryIndex(folder)
    started = time.perf_counter()
    index.build(members, stamp_of(members), None)
    row: dict[str, Any] = {"records": size, "books": books, "added_records": add,
                           "full_build_s": round(time.perf_counter() - started, 1)}
    texts = queries(members[0].database_path, 100)["record-words"]
    probe = queries(extra.database_path, 1)["record-words"][0]  # words of one record of the added book
    started = time.perf_counter()
    adding = in_child(folder, "build", [*members, extra], texts, index)
    reader_found = found(index, probe, "added")
    row.update({"add_s": adding["s"], "add_searchable_s": round(time.perf_counter() - started, 2),
                "add_found": reader_found, "add_peak_rss_mb": adding["peak_rss_mb"],
                "search_during_add_p50_ms": adding["search_p50_ms"], "search_during_add_p95_ms": adding["search_p95_ms"],
                "search_failures": adding["search_failures"], "drift": round(index.state(stamp_of([*members, extra])).drift, 4)})
    started = time.perf_counter()
    index.build(members, stamp_of(members), None)
    row["remove_s"] = round(time.perf_counter() - started, 3)
    row["removed_gone"] = not found(index, probe, "added")
    compacting = in_child(folder, "compact", members, texts, index)
    row.update({"compact_s": compacting["s"], "compact_peak_rss_mb": compacting["peak_rss_mb"],
                "search_during_compact_p50_ms": compacting["search_p50_ms"],
                "search_during_compact_p95_ms": compacting["search_p95_ms"]})
    row["search_failures"] += compacting["search_failures"]
    times = []
    reader = index.open()
    for text in texts:
        t0 = time.perf_counter()
        reader.search(text, 10)
        times.append((time.perf_counter() - t0) * 1000)
    reader.close()
    row["search_idle_p50_ms"], row["search_idle_p95_ms"] = round(percentile(times, 0.5), 1), round(percentile(times, 0.95), 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated library sizes in records")
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--add", type=int, default=10_000, help="records of the book added")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for size in args.sizes.split(","):
        rows.append(measure(int(size), args.books, args.add))
        if not args.json:
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
