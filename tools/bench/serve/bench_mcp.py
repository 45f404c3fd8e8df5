"""Figures for the MCP server: start-up, warm search latency over stdio, memory over 1,000 calls.

    .venv/bin/python tools/bench/serve/bench_mcp.py [--json] [--records 10000] [--dims 1024] [--calls 1000]

1. spawn -> tools/list answered: our server (the exact host argv) next to a bare FastMCP server
   with one trivial tool, interleaved in the same run (median of --spawns each);
2. import cost (python -X importtime, cumulative) of the modules on the start-up path;
3. warm `search` over stdio on a --records book: p50/p95 (text only, and with a query_vector);
4. resident memory of that server after warm-up and after --calls calls, and the growth.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, BinaryIO

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import percentile

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support
MAIN = ROOT / "book_agent" / "cli" / "main.py"
WIRED = "mcp_cmd" in MAIN.read_text(encoding="utf-8")
SHIM = "from book_agent.cli import main, mcp_cmd; mcp_cmd.register(main.app); main.run()"
BARE = """from fastmcp import FastMCP
server = FastMCP("bare")
@server.tool
def ping(x: int = 1) -> int:
    return x
server.run(transport="stdio", show_banner=False)
"""
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def rpc(method: str, params: dict[str, Any], ident: int | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return (json.dumps(message) + "\n").encode()


def wait_for(stream: BinaryIO, ident: int) -> dict[str, Any]:
    for line in stream:
        message = json.loads(line)
        if message.get("id") == ident:
            return dict(message)
    raise RuntimeError(f"server closed before answering {ident}")


def our_argv(data_dir: Path, book_id: str) -> list[str]:
    head = [sys.executable, "-m", "book_agent"] if WIRED else [sys.executable, "-c", SHIM]
    return [*head, "--data-dir", str(data_dir), "mcp", book_id]


def spawn(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def handshake(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(rpc("initialize", INIT, 1) + rpc("notifications/initialized", {}) + rpc("tools/list", {}, 2))
    proc.stdin.flush()
    wait_for(proc.stdout, 2)


def stop(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.wait(timeout=30)
    proc.stdout.close()


def time_to_tools_list(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = spawn(argv)
    handshake(proc)
    elapsed = time.perf_counter() - start
    stop(proc)
    return elapsed * 1000


def import_cost_ms(module: str) -> float:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                          capture_output=True, text=True, check=True)
    best = 0
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)$", line)
        if match and match.group(3) == module:
            best = int(match.group(1))
    return best / 1000


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def build_book(work: Path, records: int, dims: int) -> tuple[Path, str]:
    from book_agent.agent import BookAgent
    from tests.support.package_builder import build_package, synthetic_records

    root = build_package(work / "pkg", book_id="bench-book", records=synthetic_records(records), dims=dims)
    data = work / "data"
    BookAgent(data).init(root)
    return data, "bench-book"




def bench(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"wired_exact_argv": WIRED, "records": args.records, "dims": args.dims}
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        data, book = build_book(work, args.records, args.dims)
        out["build_and_init_s"] = round(time.perf_counter() - t0, 1)
        bare = work / "bare.py"
        bare.write_text(BARE, encoding="utf-8")
        ours_ms, bare_ms = [], []
        for _ in range(args.spawns):  # interleaved: both see the same machine load
            bare_ms.append(time_to_tools_list([sys.executable, str(bare)]))
            ours_ms.append(time_to_tools_list(our_argv(data, book)))
        out["spawn_to_tools_list_ms"] = {
            "ours_median": round(statistics.median(ours_ms), 1), "bare_median": round(statistics.median(bare_ms), 1),
            "ratio": round(statistics.median(ours_ms) / statistics.median(bare_ms), 3),
            "ours_all": [round(x) for x in ours_ms], "bare_all": [round(x) for x in bare_ms],
        }
        out["import_ms"] = {m: round(import_cost_ms(m), 1) for m in
                            ("fastmcp", "typer", "book_agent.cli.main", "book_agent.agent", "book_agent.mcp.server", "numpy")}

        proc = spawn(our_argv(data, book))
        assert proc.stdin is not None and proc.stdout is not None
        handshake(proc)
        ident = 10
        rng = random.Random(3)
        words = ["army", "river", "mountain", "general", "strategy", "supply", "weather", "terrain", "victory", "spy", "fire", "兵法", "水火"]

        def search(vector: bool) -> float:
            nonlocal ident
            ident += 1
            arguments: dict[str, Any] = {"query": " ".join(rng.sample(words, 2)), "top_k": 6}
            if vector:
                arguments["query_vector"] = [rng.uniform(-1, 1) for _ in range(args.dims)]
            assert proc.stdin is not None and proc.stdout is not None
            start = time.perf_counter()
            proc.stdin.write(rpc("tools/call", {"name": "search", "arguments": arguments}, ident))
            proc.stdin.flush()
            answer = wait_for(proc.stdout, ident)
            elapsed = (time.perf_counter() - start) * 1000
            if answer.get("result", {}).get("isError") or "error" in answer:
                raise RuntimeError(json.dumps(answer)[:500])
            return elapsed

        first = search(False)
        for _ in range(10):
            search(True)
        rss_warm = rss_kb(proc.pid)
        text = [search(False) for _ in range(args.calls // 2)]
        vec = [search(True) for _ in range(args.calls - args.calls // 2)]
        rss_end = rss_kb(proc.pid)
        stop(proc)
        out["first_search_ms"] = round(first, 1)
        out["warm_search_ms"] = {
            "text_p50": round(statistics.median(text), 2), "text_p95": round(percentile(text, 0.95), 2),
            "vector_p50": round(statistics.median(vec), 2), "vector_p95": round(percentile(vec, 0.95), 2),
            "calls": len(text) + len(vec),
        }
        out["rss_mb"] = {"after_warmup": round(rss_warm / 1024, 1), "after_calls": round(rss_end / 1024, 1),
                         "growth": round((rss_end - rss_warm) / 1024, 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--dims", type=int, default=1024)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--spawns", type=int, default=7)
    args = parser.parse_args()
    result = bench(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    s = result["spawn_to_tools_list_ms"]
    print(f"book: {result['records']} records x {result['dims']} dims (built+init in {result['build_and_init_s']} s)")
    print(f"exact host argv wired in cli/main.py: {result['wired_exact_argv']}")
    print(f"spawn -> tools/list: ours {s['ours_median']} ms, bare FastMCP {s['bare_median']} ms, ratio {s['ratio']}")
    print(f"  runs ours {s['ours_all']} bare {s['bare_all']}")
    print("import cost (cumulative ms): " + ", ".join(f"{k} {v}" for k, v in result["import_ms"].items()))
    w = result["warm_search_ms"]
    print(f"first search {result['first_search_ms']} ms; warm search over stdio ({w['calls']} calls): "
          f"text p50 {w['text_p50']} p95 {w['text_p95']}; with query_vector p50 {w['vector_p50']} p95 {w['vector_p95']}")
    r = result["rss_mb"]
    print(f"RSS: {r['after_warmup']} MB after warm-up, {r['after_calls']} MB after the calls, growth {r['growth']} MB")


if __name__ == "__main__":
    main()
