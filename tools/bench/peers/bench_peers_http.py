"""The team server over streamable HTTP against a minimal FastMCP + bm25s server (issue 46, items 1 and 4).

    .venv-bench/bin/python tools/bench/peers/bench_peers_http.py [--clients 1,16,64] [--seconds 8]
                                                                [--rounds 2] [--workers 1,2] [--json]

The library: fairytaleqa's test and dev books (real all-MiniLM-L6-v2 vectors), served as `@all`.
The peer is what a user would write in a page (bench_peers_mcp.py's, over HTTP): FastMCP, one
`search(query, query_vector, top_k)` tool, bm25s over every record of both books and an exact
numpy product over their vectors, fused by RRF, answering ids, texts and scores, without
authentication. book-agent answers more (verified locators, advice, book ids) and checks a
bearer token on every call.

Each client opens its own HTTP connection (httpx), initialises, then searches in a loop for
`--seconds`, one call in flight, each call a new test question with its vector, `top_k` 10. A
cell is N clients against one server; the cells are interleaved (every round runs each server
once per client count, in a shuffled order), so the machine's load falls on all alike. The
clients run in this process, on the same 2 cores as the servers: at 64 clients the client's own
work is part of what saturates, for every server alike.

Servers: book-agent `serve @all` with one token per client (`many tokens`) and with one token
shared by all (`one token`: the per-client fair share, `--max-concurrent-per-client` 8 and a
queue of 32, is then the whole team's, so past 40 clients some calls get 429 by design), and
`--workers 2` (one token per client); the peer. Figures per cell: calls/s, p50 and p99 latency in
ms, the server's CPU time per call (user + system from /proc, warm-up calls included: steadier
than wall time on a shared machine), errors and 429s, and the ratios to the peer (p50 and CPU:
ours / peer; throughput: peer / ours). One client's p50 is item 1's HTTP round trip (target
<= 1.3x).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))  # the repo root: tools.*
os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")

from tools.bench.measure import percentile  # noqa: E402
from tools.bench.peers.bench_peers_mcp import SEARCH_TOOL  # noqa: E402

WORK = ROOT / ".bench" / "peers" / "http"
PROTOCOL = "2025-06-18"
INIT = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}

PEER = r'''
import json, sys
import bm25s, numpy as np
from fastmcp import FastMCP

texts_file, vectors_file, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = json.loads(open(texts_file, encoding="utf-8").read())
ids = [r[0] for r in rows]
texts = [r[1] for r in rows]
matrix = np.load(vectors_file)
''' + SEARCH_TOOL + r'''
server.run(transport="http", host="127.0.0.1", port=port, show_banner=False)
'''


@dataclass
class Served:
    name: str
    proc: subprocess.Popen[bytes]
    url: str
    tokens: list[str]  # the bearer token of client i is tokens[i % len(tokens)]; [] for none


@dataclass
class Cell:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused_429: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the server's (and its workers') user + system time during the cell
    calls: int = 0  # answered calls, warm-up included (the CPU time covers them all)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def library() -> tuple[Path, list[str], list[list[float]]]:
    """The data dir serving fairytaleqa's test and dev books; the peer's texts and vectors beside
    it; the test questions and their vectors."""
    import numpy as np

    from book_agent import BookAgent
    from tools.bench.peers.bench_peers import corpus_rows
    from tools.eval.eval_sets import WORK_DIR, load_set, query_vectors, registered_book

    eval_set = load_set("fairytaleqa")
    data = WORK / "data"
    with BookAgent(data) as agent:
        book_ids = [registered_book(agent, eval_set, split, WORK_DIR, progress=False) for split in ("test", "dev")]
        keys, texts, matrix = corpus_rows(agent, book_ids, library=True)
    (WORK / "peer-texts.json").write_text(json.dumps(list(zip(keys, texts, strict=True))), encoding="utf-8")
    np.save(WORK / "peer-vectors.npy", matrix)
    questions = [text for _, text, _ in eval_set.questions("test")]
    vectors = query_vectors(eval_set, "test", WORK_DIR, progress=False).astype(np.float32)
    return data, questions, [[round(float(x), 6) for x in row] for row in vectors]


def start_ours(name: str, data: Path, clients: int, shared: bool, workers: int) -> Served:
    tokens = [secrets.token_urlsafe(24) for _ in range(1 if shared else clients)]
    token_file = WORK / f"tokens-{name.replace(' ', '_').replace(',', '')}"
    token_file.write_text("".join(hashlib.sha256(t.encode()).hexdigest() + "\n" for t in tokens), encoding="utf-8")
    port = free_port()
    with open(WORK / f"server-{port}.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                                 "--port", str(port), "--token-file", str(token_file),
                                 *(["--workers", str(workers)] if workers > 1 else [])],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    return Served(name, proc, f"http://127.0.0.1:{port}/mcp", tokens)


def start_peer() -> Served:
    script = WORK / "http_peer_server.py"
    script.write_text(PEER, encoding="utf-8")
    port = free_port()
    with open(WORK / f"server-{port}.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, str(script), str(WORK / "peer-texts.json"),
                                 str(WORK / "peer-vectors.npy"), str(port)], stdout=log, stderr=subprocess.STDOUT)
    return Served("FastMCP+bm25s", proc, f"http://127.0.0.1:{port}/mcp", [])


def headers(served: Served, client: int) -> dict[str, str]:
    found = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "MCP-Protocol-Version": PROTOCOL}
    if served.tokens:
        found["Authorization"] = "Bearer " + served.tokens[client % len(served.tokens)]
    return found


def rpc(method: str, params: dict[str, Any], ident: int | None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params, **({"id": ident} if ident is not None else {})}


def message_of(text: str) -> dict[str, Any]:
    for line in text.splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line[5:].strip()))
    return dict(json.loads(text))


async def session(client: Any, served: Served) -> None:
    """initialize + initialized; keeps the session id a stateful server (the peer) gives."""
    answer = await client.post(served.url, json=rpc("initialize", INIT, 0))
    answer.raise_for_status()
    if "mcp-session-id" in answer.headers:
        client.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
    await client.post(served.url, json=rpc("notifications/initialized", {}, None))


async def one_client(served: Served, client: Any, index: int, pairs: list[tuple[str, list[float]]],
                     started: asyncio.Event, warm_until: list[float], deadline: list[float], cell: Cell) -> None:
    """Searches in a loop from `started` to the deadline, one call in flight (its session is open)."""
    import httpx

    await started.wait()
    turn = index * 7919
    while time.monotonic() < deadline[0]:
        turn += 1
        query, vector = pairs[turn % len(pairs)]
        call = rpc("tools/call", {"name": "search", "arguments": {"query": query, "query_vector": vector,
                                                                   "top_k": 10}}, turn)
        began = time.perf_counter()
        try:
            response = await client.post(served.url, json=call)
            elapsed = (time.perf_counter() - began) * 1000
            if response.status_code == 429:
                cell.refused_429 += 1
                await asyncio.sleep(float(response.headers.get("retry-after", "1")))
                continue
            message = message_of(response.text) if response.status_code == 200 else {"error": response.status_code}
        except (httpx.HTTPError, ValueError) as exc:
            cell.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            continue
        result = message.get("result") or {}
        if "error" in message or result.get("isError") or not (result.get("structuredContent") or {}).get("hits"):
            cell.errors.append(json.dumps(message)[:200])
            continue
        cell.calls += 1
        if time.monotonic() >= warm_until[0]:
            cell.latencies.append(elapsed)


async def run_cell(served: Served, clients: int, seconds: float, pairs: list[tuple[str, list[float]]]) -> Cell:
    """N clients open their sessions first (not timed: 64 `initialize` at once take seconds on a
    loaded machine), then all search together: 1 s of warm-up, then `seconds` timed."""
    import httpx

    cell = Cell()
    started = asyncio.Event()
    warm_until, deadline = [0.0], [0.0]
    async with contextlib.AsyncExitStack() as stack:
        opened = [await stack.enter_async_context(httpx.AsyncClient(timeout=120, headers=headers(served, i)))
                  for i in range(clients)]
        await asyncio.gather(*(session(client, served) for client in opened))
        tasks = [asyncio.create_task(one_client(served, client, i, pairs, started, warm_until, deadline, cell))
                 for i, client in enumerate(opened)]
        cpu_before = cpu_seconds(served.proc.pid)
        now = time.monotonic()
        warm_until[0], deadline[0] = now + 1.0, now + 1.0 + seconds
        started.set()
        await asyncio.gather(*tasks)
        cell.cpu_seconds = cpu_seconds(served.proc.pid) - cpu_before
    cell.seconds = seconds
    return cell


def cpu_seconds(pid: int) -> float:
    """User + system time of a process and its children alive now (the workers of `--workers`)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for each in [pid, *child_pids(pid)]:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


async def wait_ready(served: Served) -> None:
    import httpx

    began = time.monotonic()
    async with httpx.AsyncClient(timeout=5, headers=headers(served, 0)) as client:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                await session(client, served)
                return
            if served.proc.poll() is not None or time.monotonic() - began > 120:
                raise RuntimeError(f"{served.name} did not start")
            await asyncio.sleep(0.1)


def rss_mb(pid: int) -> float:
    total = 0.0
    for each in [pid, *child_pids(pid)]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
    return round(total, 1)


def child_pids(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        found = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        return found + [g for c in found for g in child_pids(c)]
    return []


def figures(cell: Cell) -> dict[str, Any]:
    ordered = sorted(cell.latencies)
    return {"calls_per_s": round(len(ordered) / cell.seconds, 1) if cell.seconds else 0.0,
            "p50_ms": round(percentile(ordered, 0.50), 2) if ordered else None,
            "p99_ms": round(percentile(ordered, 0.99), 2) if ordered else None,
            "server_cpu_ms_per_call": round(1000 * cell.cpu_seconds / cell.calls, 2) if cell.calls else None,
            "errors": len(cell.errors), "refused_429": cell.refused_429,
            **({"first_error": cell.errors[0]} if cell.errors else {})}


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    WORK.mkdir(parents=True, exist_ok=True)
    data, questions, vectors = library()
    pairs = list(zip(questions, vectors, strict=True))
    random.Random(11).shuffle(pairs)
    most = max(args.clients)
    servers = [start_peer(), start_ours("book-agent, many tokens", data, most, shared=False, workers=1),
               start_ours("book-agent, one token", data, most, shared=True, workers=1)]
    servers += [start_ours(f"book-agent, --workers {w}", data, most, shared=False, workers=w)
                for w in args.workers if w > 1]
    try:
        for served in servers:
            await wait_ready(served)
        for served in servers:  # warm every server the same way
            await run_cell(served, 2, 2.0, pairs)
        cells: dict[str, dict[int, list[Cell]]] = {s.name: {n: [] for n in args.clients} for s in servers}
        order = list(servers)
        shuffle = random.Random(5)
        for _ in range(args.rounds):
            for clients in args.clients:
                shuffle.shuffle(order)
                for served in order:
                    cells[served.name][clients].append(await run_cell(served, clients, args.seconds, pairs))
        memory = {s.name: rss_mb(s.proc.pid) for s in servers}
    finally:
        for served in servers:
            served.proc.terminate()
        for served in servers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                served.proc.wait(timeout=30)
    table = {name: {n: figures(merge(runs)) for n, runs in by_n.items()} for name, by_n in cells.items()}
    peer = table["FastMCP+bm25s"]
    ratios = {name: {n: {"p50": ratio(row[n]["p50_ms"], peer[n]["p50_ms"]),
                         "throughput": ratio(peer[n]["calls_per_s"], row[n]["calls_per_s"]),
                         "cpu_per_call": ratio(row[n]["server_cpu_ms_per_call"], peer[n]["server_cpu_ms_per_call"])}
                     for n in row} for name, row in table.items() if name != "FastMCP+bm25s"}
    return {"loadavg": [round(x, 2) for x in os.getloadavg()], "seconds": args.seconds, "rounds": args.rounds,
            "records": len(json.loads((WORK / "peer-texts.json").read_text(encoding="utf-8"))),
            "cells": table, "ratios_to_peer": ratios, "rss_mb_after": memory}


def merge(runs: list[Cell]) -> Cell:
    merged = Cell()
    for run in runs:
        merged.latencies += run.latencies
        merged.errors += run.errors
        merged.refused_429 += run.refused_429
        merged.seconds += run.seconds
        merged.cpu_seconds += run.cpu_seconds
        merged.calls += run.calls
    return merged


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def render(result: dict[str, Any]) -> str:
    lines = [f"{result['records']:,} records as @all, {result['rounds']} x {result['seconds']} s a cell, "
             f"load {result['loadavg']}", ""]
    lines.append(f"{'server':<28} {'clients':>7} {'calls/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'429':>5} {'err':>4}"
                 f" {'cpu ms':>7} {'p50 x':>6} {'thru x':>6} {'cpu x':>6}")
    for name, row in result["cells"].items():
        for n, cell in row.items():
            r = result["ratios_to_peer"].get(name, {}).get(n, {})
            lines.append(f"{name:<28} {n:>7} {cell['calls_per_s']:>8} {cell['p50_ms']!s:>8} {cell['p99_ms']!s:>8}"
                         f" {cell['refused_429']:>5} {cell['errors']:>4} {cell['server_cpu_ms_per_call']!s:>7}"
                         f" {r.get('p50', '')!s:>6} {r.get('throughput', '')!s:>6} {r.get('cpu_per_call', '')!s:>6}")
    lines += ["", "RSS after the run (MB, with worker processes): "
              + ", ".join(f"{k} {v}" for k, v in result["rss_mb_after"].items())]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16, 64])
    parser.add_argument("--seconds", type=float, default=8.0, help="timed length of one cell (after 1 s of warm-up)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(bench(args))
    (WORK / "result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
