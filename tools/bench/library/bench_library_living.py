"""The living library index at scale: what adding and removing a book costs, and what searches see meanwhile.

    .venv/bin/python tools/bench/library/bench_library_living.py [--sizes 100000,1000000] [--books 4] [--add 10000] [--json]

For each size: a library of `--books` synthetic books (tools/bench/library/bench_library_lexical.py's package
databases, cached under .bench/library_lexical/) built once in full (in
.bench/library_lexical/living-SIZE-WORKTREE/, whose base books' term counts are kept between runs:
`full_build_counts_cached` says so), then

- **add**: one more book of `--add` records brought in by `build` (its terms counted, its own
  postings written, the pointer replaced) in a child process; `add_s` is from the call to the
  child's exit (split into its start, its imports and the work), `add_searchable_s` to the
  first search of a new reader that finds the book, `add_peak_rss_mb` the child's peak RSS
  (VmHWM);
- **search during the add / the compaction**: p50/p95 of searches run in this process while
  the child writes, as a server runs them (one reader kept, moved to a new generation within
  a second; none waits);
- **remove**: the added book removed (a filter: the pointer alone), time to a search without it;
- **compact**: the exact rebuild (`compact`, counts cached) in a child, its time and peak RSS;
  `server_rss_growth_compact_in_child_mb` is how far this process (the server, searching) grew
  its resident set past where it stood meanwhile (VmHWM reset first), against
  `server_rss_growth_compact_in_thread_mb`, the same compaction run in a thread of this process
  (what a server did before its background writer ran jobs in a child).

Only package databases are built (the lexical channel); vectors: tools/bench/library/bench_library_vectors.py.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.library.bench_library_lexical import BENCH, book_database, queries
from tools.bench.measure import percentile

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

CHILD = """
import json, sys, time
imported_at = time.time()
from pathlib import Path
from book_agent.domain.library import LibraryMember
from book_agent_adapters.bench import SqliteLibraryIndex
folder, action, spec = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
members = [LibraryMember(b, Path(p), n, s) for b, p, n, s in spec]
stamp = {"books": ";".join(f"{b}={s}" for b, _, _, s in sorted(spec))}
index = SqliteLibraryIndex(folder)
ready_at = time.time()
(index.compact if action == "compact" else index.build)(members, stamp, None)
done_at = time.time()
with open("/proc/self/status") as status:  # VmHWM: this program's own peak (ru_maxrss keeps the parent's across exec)
    peak = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")][0]
print(json.dumps({"started": imported_at, "ready": ready_at, "done": done_at, "peak_kib": peak}))
"""
RECHECK_S = 1.0  # as a server does (book_agent/services/library/lexical.py GENERATION_RECHECK_S)


def stamp_of(members: list[Any]) -> dict[str, str]:
    return {"books": ";".join(f"{m.book_id}={m.stamp}" for m in sorted(members, key=lambda m: m.book_id))}


def in_child(folder: Path, action: str, members: list[Any], texts: list[str], index: Any,
             searching: bool = True) -> dict[str, Any]:
    """Run `action` in a child process while this one searches (unless not `searching`: one core
    of two busy searching halves what the child gets) as a server does (one reader
    kept, moved to the generation in place when it changed, checked every RECHECK_S); the
    child's phases (from the call: its start, its imports, the work) and peak RSS, and the
    searches' latencies meanwhile."""
    spec = json.dumps([[m.book_id, str(m.database_path), m.record_count, m.stamp] for m in members])
    times: list[float] = []
    failures: list[str] = []
    done = threading.Event()

    def search() -> None:
        reader, checked, at = index.open(), time.monotonic(), 0
        while not done.is_set():
            try:
                t0 = time.perf_counter()
                if time.monotonic() - checked > RECHECK_S:
                    checked = time.monotonic()
                    if index.state({}).generation != reader.generation:
                        reader.close()
                        reader = index.open()
                reader.search(texts[at % len(texts)], 10)
                times.append((time.perf_counter() - t0) * 1000)
            except Exception as exc:  # noqa: BLE001
                failures.append(repr(exc))
            at += 1
        reader.close()

    thread = threading.Thread(target=search if searching else done.wait)
    base_kib = _reset_peak_rss()
    started, wall = time.perf_counter(), time.time()
    thread.start()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder), action, spec], stderr=subprocess.PIPE,
                             stdout=subprocess.PIPE, cwd=ROOT,
                             env={"PYTHONPATH": f"{ROOT}:{ROOT / 'adapters'}", "PATH": "/usr/bin:/bin"})
    out, err = child.communicate()
    seconds = time.perf_counter() - started
    growth_kib = _status_kib("VmHWM") - base_kib
    done.set()
    thread.join()
    if child.returncode != 0:
        raise SystemExit(err.decode() or "the child failed")
    phases = json.loads(out.decode())
    return {"s": round(seconds, 2), "start_s": round(phases["started"] - wall, 2),
            "imports_s": round(phases["ready"] - phases["started"], 2),
            "work_s": round(phases["done"] - phases["ready"], 2), "peak_rss_mb": round(phases["peak_kib"] / 1024),
            "search_p50_ms": round(percentile(times, 0.5), 1) if times else None,
            "search_p95_ms": round(percentile(times, 0.95), 1) if times else None,
            "search_max_ms": round(max(times), 1) if times else None,  # the slowest: no search may take seconds
            "searches": len(times), "search_failures": len(failures),
            "server_rss_growth_mb": round(growth_kib / 1024)}


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def _reset_peak_rss() -> int:
    """Reset this process's VmHWM to its current RSS (Linux clear_refs 5); the RSS now, in KiB."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    return _status_kib("VmRSS")


def _compact_in_thread(index: Any, members: list[Any], texts: list[str]) -> int:
    """The compaction in a thread of this process while it searches: how far its RSS grew (MB)."""
    reader = index.open()
    base = _reset_peak_rss()
    worker = threading.Thread(target=index.compact, args=(members, stamp_of(members), None))
    worker.start()
    at = 0
    while worker.is_alive():
        reader.search(texts[at % len(texts)], 10)
        at += 1
    worker.join()
    reader.close()
    return round((_status_kib("VmHWM") - base) / 1024)


def found(index: Any, text: str, book_id: str) -> bool:
    reader = index.open()
    try:
        return any(h.record_id.startswith(book_id + "#") for h in reader.search(text, 50))
    finally:
        reader.close()


def measure(size: int, books: int, add: int) -> dict[str, Any]:
    from book_agent.domain.library import LibraryMember
    from book_agent_adapters.bench import SqliteLibraryIndex

    per_book = size // books
    members = [LibraryMember(f"book-{p}", book_database(per_book, p), per_book, f"bench-{per_book}-{p}")
               for p in range(books)]
    extra = LibraryMember("added", book_database(add, 99), add, f"bench-{add}-99")
    folder = BENCH / f"living-{size}-{ROOT.name}"  # one per worktree: benches run side by side
    kept = _keep_counts(folder, members)
    index = SqliteLibraryIndex(folder)
    started = time.perf_counter()
    index.build(members, stamp_of(members), None)
    row: dict[str, Any] = {"records": size, "books": books, "added_records": add,
                           "load_average": round(os.getloadavg()[0], 1),
                           "full_build_s": round(time.perf_counter() - started, 1), "full_build_counts_cached": kept}
    texts = queries(members[0].database_path, 100)["record-words"]
    probe = queries(extra.database_path, 1)["record-words"][0]  # words of one record of the added book
    warm = index.open()  # once per process: the word segmenter's dictionary (seconds, a CJK query's first)
    for text in texts:
        warm.search(text, 10)
    warm.close()
    alone = _add(index, folder, members, extra, texts, probe, searching=False)  # the add's own cost
    row["load_average_add"] = round(os.getloadavg()[0], 1)
    row.update({"add_s": alone["s"], "add_searchable_s": alone["searchable_s"], "add_found": alone["found"],
                "add_peak_rss_mb": alone["peak_rss_mb"], "add_child_start_s": alone["start_s"],
                "add_imports_s": alone["imports_s"], "add_work_s": alone["work_s"],
                "drift": round(index.state(stamp_of([*members, extra])).drift, 4)})
    row.update(_remove(index, members, probe))
    adding = _add(index, folder, members, extra, texts, probe, searching=True)  # again, searched meanwhile
    row.update({"add_while_searched_s": adding["searchable_s"], "search_during_add_p50_ms": adding["search_p50_ms"],
                "search_during_add_p95_ms": adding["search_p95_ms"], "search_during_add_max_ms": adding["search_max_ms"],
                "search_failures": adding["search_failures"]})
    _remove(index, members, probe)  # the compaction below purges it
    compacting = in_child(folder, "compact", members, texts, index)
    row.update({"compact_s": compacting["s"], "compact_work_s": compacting["work_s"],
                "compact_peak_rss_mb": compacting["peak_rss_mb"],
                "search_during_compact_p50_ms": compacting["search_p50_ms"],
                "search_during_compact_p95_ms": compacting["search_p95_ms"],
                "search_during_compact_max_ms": compacting["search_max_ms"]})
    row["search_failures"] += compacting["search_failures"]
    row["server_rss_growth_compact_in_child_mb"] = compacting["server_rss_growth_mb"]
    row["server_rss_growth_compact_in_thread_mb"] = _compact_in_thread(index, members, texts)
    times = []
    reader = index.open()
    for text in texts:
        t0 = time.perf_counter()
        reader.search(text, 10)
        times.append((time.perf_counter() - t0) * 1000)
    reader.close()
    row["search_idle_p50_ms"], row["search_idle_p95_ms"] = round(percentile(times, 0.5), 1), round(percentile(times, 0.95), 1)
    return row


def _add(index: Any, folder: Path, members: list[Any], extra: Any, texts: list[str], probe: str,
         searching: bool) -> dict[str, Any]:
    """`extra` added in a child (its counts not cached: they were dropped with it), searched or
    not meanwhile; `searchable_s` from the call to the first search of a new reader finding it."""
    started = time.perf_counter()
    adding = in_child(folder, "build", [*members, extra], texts, index, searching)
    return {**adding, "found": found(index, probe, "added"), "searchable_s": round(time.perf_counter() - started, 2)}


def _remove(index: Any, members: list[Any], probe: str) -> dict[str, Any]:
    """The added book removed in this process (a filter: the pointer alone; its counts dropped)."""
    started = time.perf_counter()
    index.build(members, stamp_of(members), None)
    return {"remove_s": round(time.perf_counter() - started, 3), "removed_gone": not found(index, probe, "added")}


def _keep_counts(folder: Path, members: list[Any]) -> bool:
    """Empty `folder` but for the base books' cached term counts (counting 1M records takes
    minutes; the added book's are dropped, so the add counts it). Whether all were cached."""
    from book_agent_adapters.bench import TERMS_DIR, cache_path

    keep = {cache_path(folder / TERMS_DIR, m) for m in members}
    for path in folder.glob("*"):
        if path.is_dir() and path.name == TERMS_DIR:
            for counts in path.iterdir():
                if counts not in keep:
                    counts.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return all(p.exists() for p in keep)


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
