"""Floods that must not deny others (issue 44, class 4): legitimate requests' success rate
while `book-agent serve` is under slow heads, slow bodies, or unauthenticated request floods.

    .venv/bin/python tools/bench/serve/bench_http_flood.py [--requests 20] [--timeout 10] [--json]
                                               [--max-connections N] [--scenario NAME ...]

Loopback only: each client binds its end to its own 127.0.0.x address (Linux routes 127/8 to
lo), bounded in time (each scenario lasts as long as its legitimate requests) and count.
Scenarios (the attackers start, then a token holder at 127.0.0.10 sends --requests searches
one after another, each with --timeout seconds to be answered 200):

- `quiet`: no attacker (the baseline);
- `slow-heads`: 6 addresses x 8 sockets, each sending a request head one byte a second and
  reconnecting when closed;
- `slow-bodies`: 6 addresses x 8 sockets, each sending a whole head (no token, a 4 KiB body
  declared) and then the body one byte a second, reconnecting when closed;
- `slow-bodies-token`: the same with a valid token of its own (an insider, or a stolen token);
- `unauthenticated`: 96 clients at one address sending requests without a token back to back.

Prints the success rate (answered 200 within the timeout) and median latency per scenario,
with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "http-flood"
sys.path.insert(0, str(ROOT))

TOKEN, INSIDER = "flood-bench-legit-token", "flood-bench-insider-token"
LEGIT = "127.0.0.10"
SCENARIOS = ("quiet", "slow-heads", "slow-bodies", "slow-bodies-token", "unauthenticated")


def build_library() -> Path:
    from book_agent import BookAgent
    from tests.support.library_support import corpus
    from tests.support.package_builder import build_package

    data = BENCH / "data"
    if (data / "registry.json").exists() or (data / "books").exists():
        return data
    shutil.rmtree(BENCH, ignore_errors=True)
    with BookAgent(data) as agent:
        agent.init(build_package(BENCH / "pkg", book_id="flood-book", kind="pdf", records=corpus(20)))
    return data


def head(port: int, length: int | None, token: str | None) -> bytes:
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
             "Accept: application/json, text/event-stream"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def slow_client(port: int, source: str, stop: asyncio.Event, mode: str, counts: dict[str, int]) -> None:
    """One socket that trickles a head (or a body), one byte a second; reconnects when closed."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        except OSError:
            await asyncio.sleep(0.2)
            continue
        counts["connections"] += 1
        try:
            if mode == "slow-heads":
                pending = head(port, 4096, None)
            else:
                writer.write(head(port, 4096, INSIDER if mode == "slow-bodies-token" else None))
                await writer.drain()
                pending = b"{" + b" " * 4095
            for i in range(len(pending)):
                if stop.is_set() or reader.at_eof():
                    break
                writer.write(pending[i:i + 1])
                await writer.drain()
                try:
                    data = await asyncio.wait_for(reader.read(65536), 1.0)
                    if data or reader.at_eof():
                        break  # answered (a refusal) or closed: start again
                except TimeoutError:
                    pass
        except OSError:
            pass
        finally:
            writer.close()
            await asyncio.sleep(0.05)


async def flooding_client(port: int, source: str, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """Requests without a token, back to back on one keep-alive connection (reconnecting)."""
    import httpx

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "search", "arguments": {"query": "water"}}})
    async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=source), timeout=5) as client:
        while not stop.is_set():
            try:
                answer = await client.post(f"http://127.0.0.1:{port}/mcp", content=body,
                                           headers={"Content-Type": "application/json",
                                                    "Accept": "application/json, text/event-stream"})
                counts[str(answer.status_code)] = counts.get(str(answer.status_code), 0) + 1
            except httpx.HTTPError:
                counts["failed"] = counts.get("failed", 0) + 1
                await asyncio.sleep(0.05)


async def legitimate(port: int, requests: int, timeout: float) -> dict[str, Any]:
    import httpx

    outcomes: dict[str, int] = {}
    seconds: list[float] = []
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {TOKEN}"}
    for i in range(requests):
        body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                           "params": {"name": "search", "arguments": {"query": f"water ground {i}"}}})
        started = time.monotonic()
        try:  # a new connection each time: a client arriving while the flood is on
            async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=LEGIT),
                                         timeout=timeout) as client:
                answer = await client.post(f"http://127.0.0.1:{port}/mcp", content=body, headers=headers)
            key = str(answer.status_code)
        except httpx.TimeoutException:
            key = "timeout"
        except httpx.HTTPError as exc:
            key = type(exc).__name__
        outcomes[key] = outcomes.get(key, 0) + 1
        if key == "200":
            seconds.append(time.monotonic() - started)
        await asyncio.sleep(0.25)
    return {"ok": outcomes.get("200", 0), "of": requests, "outcomes": outcomes,
            "median_s": round(statistics.median(seconds), 3) if seconds else None}


async def scenario(name: str, port: int, args: argparse.Namespace) -> dict[str, Any]:
    stop = asyncio.Event()
    counts: dict[str, int] = {"connections": 0}
    tasks = []
    if name.startswith("slow"):
        tasks = [asyncio.create_task(slow_client(port, f"127.0.0.{2 + a}", stop, name, counts))
                 for a in range(6) for _ in range(8)]
    elif name == "unauthenticated":
        tasks = [asyncio.create_task(flooding_client(port, "127.0.0.20", stop, counts)) for _ in range(96)]
    await asyncio.sleep(3 if tasks else 0)  # the flood is on before the first legitimate request
    result = await legitimate(port, args.requests, args.timeout)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
    return {"scenario": name, **result, "attackers": counts, "load": os.getloadavg()}


def start_server(data: Path, port: int, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    from tests.support.http_serve import token_file, wait_healthy

    BENCH.mkdir(parents=True, exist_ok=True)
    tokens = token_file(BENCH, TOKEN, INSIDER)
    extra = ["--max-connections", str(args.max_connections)] if args.max_connections else []
    log = BENCH / "server.log"
    proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                             "--port", str(port), "--token-file", str(tokens), *extra],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=ROOT)
    wait_healthy(f"http://127.0.0.1:{port}", proc, log)
    return proc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--max-connections", type=int, default=None)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from tests.support.http_serve import free_port, terminate

    data = build_library()
    results = []
    for name in args.scenario or SCENARIOS:
        port = free_port()
        proc = start_server(data, port, args)  # a fresh server per scenario: no state carried over
        try:
            results.append(asyncio.run(scenario(name, port, args)))
        finally:
            terminate(proc)
        r = results[-1]
        if not args.json:
            print(f"{name:18s} legit {r['ok']:2d}/{r['of']} ok  median {r['median_s']} s  {r['outcomes']}  "
                  f"attackers {r['attackers']}  load {r['load'][0]:.2f}", flush=True)
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
