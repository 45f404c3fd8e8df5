"""Figures for quote location (issue 13, finding 2): locate time by quotation length, and the
latency of an MCP `status` call while a maximal `locate_source` runs.

    .venv/bin/python tools/bench/search/bench_quotes.py [--json] [--sizes 2000,20000,100000] [--timeout 120]

On The Art of War (examples/art-of-war-package, registered in a temporary data dir):

1. locate a quotation of each size, three kinds, each in a fresh worker process with the book
   warmed (units and book.md normalised) so only the locating is timed: `exact` (a passage of
   the 285,000-character endnotes), `edited` (the same with 3% of its characters changed: the
   fuzzy path) and `absent` (the book's words in random order: quote_not_found). A run past
   --timeout is reported as such (the quadratic matcher took minutes at 100,000);
2. over a real stdio session: `status` latency idle, and sent 0.2 s after a `locate_source`
   with a 20,000-character edited quotation (the MCP maximum), with that call's own time.

Run it against another tree (e.g. the code before the fix) with PYTHONPATH=that/tree.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "art-of-war-package"
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support


def quotation(agent: Any, book: str, kind: str, size: int) -> str:
    units = agent.books.open(book).sources.units()
    notes = max(range(units.count), key=lambda u: len(units.text(u)))
    passage = units.text(notes)[1000 : 1000 + size]
    rng = random.Random(size)
    if kind == "edited":
        return "".join(rng.choice("abcdefgh ") if rng.random() < 0.03 else ch for ch in passage)
    if kind == "absent":
        words = " ".join(units.text(u) for u in range(units.count)).split()
        return " ".join(rng.choice(words) for _ in range(size // 4))[:size]
    return passage


def worker(data_dir: str, book: str, kind: str, size: int) -> None:
    """One timed locate in this process (warmed first), printed as JSON."""
    from book_agent.agent import BookAgent
    from book_agent.domain.errors import BookAgentError

    agent = BookAgent(Path(data_dir))
    sources = agent.books.open(book).sources
    units = sources.units()
    for unit in range(units.count):
        units.normalized(unit)
    sources.markdown_normalized()
    quote = quotation(agent, book, kind, size)
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        outcome = agent.locate_source(book, quote)["verification"]["method"]
    except BookAgentError as exc:
        outcome = exc.code
    print(json.dumps({"wall_s": round(time.perf_counter() - wall, 3),
                      "cpu_s": round(time.process_time() - cpu, 3), "outcome": outcome}))


def timed_locate(data_dir: Path, book: str, kind: str, size: int, timeout: float) -> dict[str, Any]:
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import tools.bench.search.bench_quotes as b; " \
           f"b.worker({str(data_dir)!r}, {book!r}, {kind!r}, {size})"
    try:
        # a few seconds more for the worker's warm-up (extracting and normalising the book)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout + 15)
    except subprocess.TimeoutExpired:
        return {"wall_s": None, "outcome": f"not finished in {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"wall_s": None, "outcome": "failed: " + proc.stderr.strip().splitlines()[-1]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def mcp_latency(data_dir: Path, book: str, timeout: float) -> dict[str, Any]:
    from book_agent.agent import BookAgent
    from tests.support.stdio_session import RawSession, call

    quote = quotation(BookAgent(data_dir), book, "edited", 20_000)
    with tempfile.TemporaryDirectory() as tmp:
        session = RawSession(data_dir, book, Path(tmp) / "stderr.txt")
        try:
            session.send(call(1, "locate_source", {"quote": "the art of war is of vital importance"}))
            session.wait_for([1], timeout=timeout)  # warm: the units are extracted and normalised
            session.send(call(5, "status", {}))
            session.wait_for([5], timeout=timeout)  # warm: the first status loads the vector parts
            started = time.perf_counter()
            session.send(call(2, "status", {}))
            session.wait_for([2], timeout=timeout)
            idle = time.perf_counter() - started
            started = time.perf_counter()
            session.send(call(3, "locate_source", {"quote": quote}))
            time.sleep(0.2)
            sent = time.perf_counter()
            session.send(call(4, "status", {}))
            session.wait_for([4], timeout=timeout)
            busy = time.perf_counter() - sent
            session.wait_for([3], timeout=timeout)
            locate = time.perf_counter() - started
        except TimeoutError as exc:
            return {"error": str(exc)}
        finally:
            session.close()
    return {"status_idle_ms": round(idle * 1000, 1), "status_during_locate_ms": round(busy * 1000, 1),
            "locate_20000_s": round(locate, 3)}


def bench(args: argparse.Namespace) -> dict[str, Any]:
    from book_agent.agent import BookAgent

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        book = str(BookAgent(data_dir).init(EXAMPLE)["book_id"])
        sizes = [int(s) for s in args.sizes.split(",")]
        locate: dict[str, Any] = {}
        if not args.json:
            print("locate (warm book; wall / cpu seconds):", flush=True)
        for size in sizes:
            for kind in ("exact", "edited", "absent"):
                locate[f"{kind}-{size}"] = result = timed_locate(data_dir, book, kind, size, args.timeout)
                if not args.json:
                    print(f"  {kind}-{size:>6}: {_seconds(result)}  ({result['outcome']})", flush=True)
        return {"locate": locate, "mcp": mcp_latency(data_dir, book, args.timeout)}


def _seconds(result: dict[str, Any]) -> str:
    if result.get("wall_s") is None:
        return "-"
    return f"{result['wall_s']:.3f} / {result['cpu_s']:.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sizes", default="2000,20000,100000")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a locate counts as not finished")
    args = parser.parse_args()
    out = bench(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print("mcp over stdio:", json.dumps(out["mcp"]))


if __name__ == "__main__":
    main()
