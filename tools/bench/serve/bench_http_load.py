"""Load test of `book-agent serve` (issue 17): N MCP clients over streamable HTTP for S seconds of
mixed calls, with faults injected, next to the same N clients each on its own stdio server.

    .venv/bin/python tools/bench/serve/bench_http_load.py [--clients 32] [--seconds 30] [--auth token-file|jwt]
                                              [--replicas 1] [--workers 1] [--shared-token] [--skip-stdio]
                                              [--no-faults] [--json]

Loopback only (127.0.0.1), bounded in time (--seconds per phase) and count (--max-calls per
client). It builds a small library of real PDF book packages under .bench/http-load/, starts
`book-agent serve @all` in a subprocess with one token per client (a token file, or JWTs signed
by a key made for the run), and runs N clients, each with its own token (with --shared-token,
all of them with one: a team's agents behind one key), calling search,
read_entry, locate_source and render_page in turn over raw JSON-RPC (httpx), checking every
answer against the book's own text. Meanwhile:

- clients that send a call and disconnect 20-100 ms later (the call is cancelled);
- a client sending a 50 MB body (must get 413);
- unknown and malformed tokens, a digest sent as the token, and (with --auth jwt) expired and
  wrong-audience JWTs (must get 401);
- a book registered and another removed through the CLI (`init`, `remove`) while serving: the new
  book must be searchable, the removed one gone from list_books.

It reports throughput, p50/p95/p99 latency, the well-behaved clients' error count (must be 0),
the server's RSS at start and end (and its peak), start-up time, then the same client count
against `book-agent mcp @all` spawned once per client over stdio: throughput, latency, total
RSS (memory per user). A table on stdout; the figures as JSON under .bench/http-load/.
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
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.measure import percentile

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "http-load"
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support

BOOKS = 4  # stable books, served all run long
RECORDS = 60  # per book, 10 per PDF page
LATE, DOOMED = "late-book", "doomed-book"
WORDS = ("river ground water battle general temple calculation sediment valley farming light energy "
         "glucose diagram supply depot arrow tax province grain tribute army march camp spy fire "
         "wind mountain plain road bridge city wall siege enemy ally season rain harvest").split()
PROTOCOL = "2025-06-18"
INIT = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench-http-load", "version": "1"}}
ISSUER, AUDIENCE = "https://idp.bench.invalid", "book-agent-bench"
TOOL_MIX = ("search", "read_entry", "locate_source", "render_page")


# ---------------------------------------------------------------------------- the library


def records_for(book: str, count: int, seed: int) -> list[Any]:
    from tests.support.package_builder import RecordSpec

    rng = random.Random(seed)
    return [RecordSpec(f"{book}-r{i:03d}", " ".join(rng.choices(WORDS, k=14)) + ".", [f"Part {i // 10}"], i // 10)
            for i in range(count)]


def build_library() -> tuple[Path, dict[str, dict[str, Any]], Path]:
    """A fresh data dir with BOOKS stable books and DOOMED registered; LATE built, not registered.
    Returns the data dir, each book's records ({record_id: (text, page)}) and LATE's package."""
    from book_agent import BookAgent
    from tests.support.package_builder import build_package

    names = [f"book-{i}" for i in range(BOOKS)] + [DOOMED, LATE]
    books: dict[str, dict[str, Any]] = {}
    roots: dict[str, Path] = {}
    for seed, name in enumerate(names):
        count = RECORDS if name.startswith("book-") else 20
        records = records_for(name, count, seed)
        books[name] = {r.record_id: (r.text, r.page) for r in records}
        root = BENCH / "packages" / name
        if not (root / "book-package.json").exists():
            shutil.rmtree(root, ignore_errors=True)
            build_package(root, book_id=name, kind="pdf", records=records, dims=16, blank_page=False)
        roots[name] = root
    data = BENCH / "data"
    shutil.rmtree(data, ignore_errors=True)
    with BookAgent(data) as agent:
        for name in names[:-1]:
            agent.init(roots[name])
        agent.prepare("@all")
    return data, books, roots[LATE]


# ---------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proc_status(pid: int, key: str) -> float:
    """VmRSS / VmHWM of a process and its children (`serve --workers`) in MB (VmHWM: the largest
    one's), from /proc (psutil is not a dependency)."""
    values = []
    for one in [pid, *child_pids(pid)]:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    values.append(int(line.split()[1]) / 1024)
        except OSError:
            pass
    if not values:
        return float("nan")
    return max(values) if key == "VmHWM" else sum(values)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by a process and its children (`serve --workers`)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for one in [pid, *child_pids(pid)]:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def child_pids(pid: int) -> list[int]:
    """The processes `pid` started (its worker processes), through /proc's children lists."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, ValueError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), "--json", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def stop_process(proc: subprocess.Popen[Any], timeout: float = 30) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(timeout=10)


# ---------------------------------------------------------------------------- tokens


@dataclass
class Credentials:
    good: list[str]  # one per well-behaved client, then one per disconnecting client
    bad: dict[str, str]  # name -> an Authorization header the server must refuse
    server_args: list[str]


def credentials(mode: str, count: int, work: Path) -> Credentials:
    if mode == "jwt":
        from fastmcp.server.auth.providers.jwt import RSAKeyPair

        keys = RSAKeyPair.generate()
        public = keys.public_key
        (work / "idp.pem").write_text(public.get_secret_value() if hasattr(public, "get_secret_value") else str(public))

        def jwt(subject: str, **kw: Any) -> str:
            return str(keys.create_token(subject=subject, issuer=ISSUER, audience=kw.get("audience", AUDIENCE),
                                         expires_in_seconds=kw.get("expires", 3600)))

        return Credentials([jwt(f"user-{i}") for i in range(count)],
                           {"unknown": "Bearer not-a-jwt-" + secrets.token_hex(8), "not_bearer": "Basic dXNlcjpwdw==",
                            "expired": "Bearer " + jwt("user-0", expires=-60),
                            "wrong_audience": "Bearer " + jwt("user-0", audience="other")},
                           ["--jwt-public-key", str(work / "idp.pem"), "--jwt-issuer", ISSUER,
                            "--jwt-audience", AUDIENCE])
    tokens = [secrets.token_urlsafe(24) for _ in range(count)]
    digests = [hashlib.sha256(t.encode()).hexdigest() for t in tokens]
    (work / "tokens").write_text("# bench clients\n" + "".join(d + "\n" for d in digests))
    return Credentials(tokens, {"unknown": "Bearer " + secrets.token_urlsafe(24), "not_bearer": "Basic dXNlcjpwdw==",
                                "digest_as_token": "Bearer " + digests[0]},
                       ["--token-file", str(work / "tokens")])


# ---------------------------------------------------------------------------- calls and checks


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {t: [] for t in TOOL_MIX})
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    refused_429: int = 0  # answers 429 (http.too_many_requests): also counted in errors

    def status(self, code: int) -> None:
        if code == 429:
            self.refused_429 += 1

    def error(self, text: str) -> None:
        self.errors.append(text[:300])


class Checker:
    """The expected answer of each call, from the books' own records."""

    def __init__(self, books: dict[str, dict[str, Any]], seed: int) -> None:
        self.books = books
        self.stable = [b for b in books if b.startswith("book-")]
        self.rng = random.Random(seed)

    def next_call(self, turn: int) -> tuple[str, dict[str, Any], Any]:
        tool = TOOL_MIX[turn % len(TOOL_MIX)]
        book = self.rng.choice(self.stable)
        record_id = self.rng.choice(sorted(self.books[book]))
        text, page = self.books[book][record_id]
        if tool == "search":
            words = text.rstrip(".").split()
            return tool, {"query": " ".join(self.rng.sample(words, 3)), "top_k": 5}, None
        if tool == "read_entry":
            return tool, {"book_id": book, "record_id": record_id}, (record_id, text)
        if tool == "locate_source":
            return tool, {"book_id": book, "record_id": record_id}, page
        page = self.rng.randrange(RECORDS // 10)
        return tool, {"book_id": book, "page_index": page, "dpi": self.rng.choice((48, 60, 72, 96))}, page

    @staticmethod
    def problem(tool: str, expected: Any, result: dict[str, Any]) -> str | None:
        """None when the answer is right, else what is wrong."""
        if result.get("isError"):
            return f"{tool}: tool error {str(result.get('content'))[:200]}"
        data = result.get("structuredContent") or {}
        if tool == "search":
            hits = data.get("hits") or []
            return None if hits and all(h.get("record_id") for h in hits) else "search: no hits"
        if tool == "read_entry":
            record_id, text = expected
            return None if (data.get("record_id"), data.get("text")) == (record_id, text) else "read_entry: wrong record"
        if tool == "locate_source":
            ok = data.get("page_index") == expected and (data.get("verification") or {}).get("score", 0) >= 0.8
            return None if ok else f"locate_source: page {data.get('page_index')} (expected {expected})"
        ok = data.get("page_index") == expected and int(data.get("width_px") or 0) > 0
        return None if ok else "render_page: no image"


def rpc(method: str, params: dict[str, Any], ident: int | None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return message


def sse_message(text: str) -> dict[str, Any]:
    for line in text.splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line[5:].strip()))
    return dict(json.loads(text))


# ---------------------------------------------------------------------------- HTTP phase


def headers_for(token: str | None) -> dict[str, str]:
    found = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "MCP-Protocol-Version": PROTOCOL}
    if token is not None:
        found["Authorization"] = f"Bearer {token}"
    return found


async def http_client(url: str, token: str, checker: Checker, deadline: float, max_calls: int, tally: Tally) -> None:
    import httpx

    headers = headers_for(token)
    async with httpx.AsyncClient(timeout=60, headers=headers) as client:
        answer = await client.post(url, json=rpc("initialize", INIT, 0))
        tally.status(answer.status_code)
        if answer.status_code != 200:
            tally.error(f"initialize: HTTP {answer.status_code}")
            return
        await client.post(url, json=rpc("notifications/initialized", {}, None))
        turn = 0
        while time.monotonic() < deadline and turn < max_calls:
            tool, arguments, expected = checker.next_call(turn)
            turn += 1
            started = time.perf_counter()
            try:
                response = await client.post(url, json=rpc("tools/call", {"name": tool, "arguments": arguments}, turn))
                elapsed = (time.perf_counter() - started) * 1000
                tally.status(response.status_code)
                if response.status_code != 200:
                    tally.error(f"{tool}: HTTP {response.status_code} {response.text[:200]}")
                    continue
                message = sse_message(response.text)
            except (httpx.HTTPError, ValueError) as exc:
                tally.error(f"{tool}: {type(exc).__name__}: {exc}")
                continue
            tally.calls += 1
            tally.latencies[tool].append(elapsed)
            problem = ("JSON-RPC error " + str(message["error"])) if "error" in message else \
                Checker.problem(tool, expected, message.get("result") or {})
            if problem:
                tally.error(problem)


@dataclass
class Faults:
    disconnects: int = 0
    disconnect_refusals: dict[str, int] = field(default_factory=dict)
    big_bodies: list[int] = field(default_factory=list)
    bad_tokens: dict[str, list[int]] = field(default_factory=dict)
    catalogue: dict[str, Any] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)


async def disconnecting_client(url: str, token: str, deadline: float, seed: int, faults: Faults) -> None:
    """Sends a call, then goes away 20-100 ms later, again and again (about once a second)."""
    import httpx

    rng = random.Random(seed)
    while time.monotonic() < deadline:
        wait = rng.uniform(0.02, 0.1)
        if rng.random() < 0.7:
            call = {"name": "search", "arguments": {"query": " ".join(rng.sample(WORDS, 4)), "top_k": 50}}
        else:  # a render, most likely uncached
            call = {"name": "render_page", "arguments": {"book_id": f"book-{rng.randrange(BOOKS)}",
                                                         "page_index": rng.randrange(RECORDS // 10),
                                                         "dpi": rng.randrange(100, 200)}}
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=wait), headers=headers_for(token)) as client:
            try:
                response = await client.post(url, json=rpc("tools/call", call, 1))
                key = str(response.status_code)  # answered in time (or refused: 429 when too eager)
                faults.disconnect_refusals[key] = faults.disconnect_refusals.get(key, 0) + 1
            except httpx.ReadTimeout:
                faults.disconnects += 1
            except httpx.HTTPError as exc:
                faults.unexpected.append(f"disconnecting client: {type(exc).__name__}")
        await asyncio.sleep(rng.uniform(0.8, 1.2))


async def big_body_client(url: str, token: str, deadline: float, faults: Faults) -> None:
    """A 50 MB body, three times over the run: 413 each time."""
    import httpx

    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": ' \
           b'{"query": "' + b"x" * (50 << 20) + b'"}}}'
    start = time.monotonic()
    for share in (0.25, 0.5, 0.75):
        await asyncio.sleep(max(0.0, start + share * (deadline - start) - time.monotonic()))
        async with httpx.AsyncClient(timeout=60, headers=headers_for(token)) as client:
            try:
                faults.big_bodies.append((await client.post(url, content=body)).status_code)
            except httpx.HTTPError as exc:
                faults.unexpected.append(f"50 MB body: {type(exc).__name__}")
                faults.big_bodies.append(-1)


async def bad_token_client(url: str, bad: dict[str, str], deadline: float, faults: Faults) -> None:
    """Each refused Authorization header, twice a second."""
    import httpx

    async with httpx.AsyncClient(timeout=30) as client:
        while time.monotonic() < deadline:
            for name, value in bad.items():
                try:
                    response = await client.post(url, json=rpc("tools/call", {"name": "list_books", "arguments": {}}, 1),
                                                 headers={**headers_for(None), "Authorization": value})
                    faults.bad_tokens.setdefault(name, []).append(response.status_code)
                except httpx.HTTPError as exc:
                    faults.unexpected.append(f"bad token {name}: {type(exc).__name__}")
            await asyncio.sleep(0.5)


async def catalogue_changes(url: str, token: str, data: Path, late_package: Path, deadline: float,
                            faults: Faults) -> None:
    """At 40% of the run, register LATE (then search it); at 60%, remove DOOMED (then list)."""
    import httpx

    start = time.monotonic()

    async def call(client: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        response = await client.post(url, json=rpc("tools/call", {"name": name, "arguments": arguments}, 1))
        return dict(sse_message(response.text).get("result") or {})

    async with httpx.AsyncClient(timeout=60, headers=headers_for(token)) as client:
        await asyncio.sleep(max(0.0, start + 0.4 * (deadline - start) - time.monotonic()))
        done = await asyncio.to_thread(cli, data, "init", str(late_package))
        faults.catalogue["register_exit"] = done.returncode
        found = await call(client, "search", {"query": "river water battle", "books": [LATE]})
        hits = (found.get("structuredContent") or {}).get("hits") or []
        faults.catalogue["late_book_searchable"] = bool(hits) and all(h.get("book_id") == LATE for h in hits)
        await asyncio.sleep(max(0.0, start + 0.6 * (deadline - start) - time.monotonic()))
        done = await asyncio.to_thread(cli, data, "remove", DOOMED)
        faults.catalogue["remove_exit"] = done.returncode
        listed = await call(client, "list_books", {})
        ids = [b.get("book_id") for b in (listed.get("structuredContent") or {}).get("books") or []]
        faults.catalogue["listed_after"] = ids
        faults.catalogue["doomed_gone"] = DOOMED not in ids and LATE in ids


@dataclass
class Replica:
    proc: subprocess.Popen[bytes]
    base: str
    access_log: Path
    server_log: Path

    @property
    def url(self) -> str:
        return self.base + "/mcp"


def start_replica(index: int, data: Path, creds: Credentials, work: Path, workers: int = 1) -> Replica:
    port = free_port()
    access_log, server_log = work / f"access-{index}.log", work / f"server-{index}.log"
    access_log.unlink(missing_ok=True)
    with open(server_log, "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                                 "--port", str(port), "--access-log", str(access_log), *creds.server_args,
                                 *(["--workers", str(workers)] if workers > 1 else [])],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    return Replica(proc, f"http://127.0.0.1:{port}", access_log, server_log)


async def wait_healthy(replica: Replica, started: float) -> float:
    import httpx

    async with httpx.AsyncClient(timeout=5) as probe:
        while True:
            with contextlib.suppress(httpx.TransportError):
                if (await probe.get(replica.base + "/health")).status_code == 200:
                    return time.perf_counter() - started
            if replica.proc.poll() is not None or time.perf_counter() - started > 120:
                raise RuntimeError("the server did not start: " + replica.server_log.read_text()[-2000:])
            await asyncio.sleep(0.05)


async def http_phase(args: argparse.Namespace, data: Path, books: dict[str, dict[str, Any]], late: Path,
                     work: Path) -> dict[str, Any]:
    """N clients over HTTP against `--replicas` server processes (client i on replica i mod R;
    the faults on replica 0, the one the figures' RSS and logs detail)."""
    import httpx

    disconnectors = 4
    creds = credentials(args.auth, args.clients + disconnectors + 1, work)
    replicas: list[Replica] = []
    started = time.perf_counter()
    try:
        replicas = [start_replica(r, data, creds, work, args.workers) for r in range(args.replicas)]
        startup_s = max(await asyncio.gather(*(wait_healthy(r, started) for r in replicas)))
        for replica in replicas:  # calls of each kind: everything loaded before the clock starts
            first = Tally()  # (a client per worker, at once: each worker most likely gets some)
            await asyncio.gather(*(http_client(replica.url, creds.good[0], Checker(books, 999 + w),
                                               time.monotonic() + 60, 2 * len(TOOL_MIX), first)
                                   for w in range(args.workers)))
            if first.errors:
                raise RuntimeError("the warm-up calls failed: " + "; ".join(first.errors))
        rss_start = [proc_status(r.proc.pid, "VmRSS") for r in replicas]
        cpu_start = sum(cpu_seconds(r.proc.pid) for r in replicas)
        own_start = time.process_time()  # this load generator's CPU (its clients)
        children_start = {pid for r in replicas for pid in child_pids(r.proc.pid)}

        tally, faults = Tally(), Faults()
        began = time.monotonic()
        deadline = began + args.seconds
        fault_deadline = began + args.seconds * 0.9
        url = replicas[0].url
        tasks = [http_client(replicas[i % len(replicas)].url, creds.good[0 if args.shared_token else i],
                             Checker(books, i), deadline, args.max_calls, tally) for i in range(args.clients)]
        if not args.no_faults:
            tasks += [disconnecting_client(url, creds.good[args.clients + j], fault_deadline, j, faults)
                      for j in range(disconnectors)]
            tasks += [big_body_client(url, creds.good[-1], fault_deadline, faults),
                      bad_token_client(url, creds.bad, fault_deadline, faults),
                      catalogue_changes(url, creds.good[-1], data, late, fault_deadline, faults)]
        await asyncio.gather(*tasks)
        elapsed = time.monotonic() - began
        cpu_used = sum(cpu_seconds(r.proc.pid) for r in replicas) - cpu_start
        own_used = time.process_time() - own_start
        children_gone = len(children_start - {pid for r in replicas for pid in child_pids(r.proc.pid)})
        rss_end = [proc_status(r.proc.pid, "VmRSS") for r in replicas]
        rss_peak = [proc_status(r.proc.pid, "VmHWM") for r in replicas]
        async with httpx.AsyncClient(timeout=5) as probe:
            healthy = all([(await probe.get(r.base + "/health")).status_code == 200 for r in replicas])
    finally:
        exit_codes = [stop_process(r.proc) for r in replicas]
    log_lines = [json.loads(line) for r in replicas for line in r.access_log.read_text().splitlines() if line.strip()]
    logged = "".join(r.server_log.read_text(errors="replace") + r.access_log.read_text() for r in replicas)
    statuses: dict[str, int] = {}
    for line in log_lines:
        statuses[str(line["status"])] = statuses.get(str(line["status"]), 0) + 1
    secrets_logged = [t for t in creds.good + [v.split(" ", 1)[1] for v in creds.bad.values()] if t in logged]
    return {
        "clients": args.clients, "replicas": args.replicas, "workers": args.workers, "seconds": round(elapsed, 1),
        "auth": args.auth,
        "startup_s": round(startup_s, 2), "calls": tally.calls, "throughput_per_s": round(tally.calls / elapsed, 1),
        "server_cpu_ms_per_call": round(cpu_used * 1000 / max(tally.calls, 1), 2),
        "client_cpu_ms_per_call": round(own_used * 1000 / max(tally.calls, 1), 2),
        **latency_figures(tally),
        "errors": len(tally.errors), "error_samples": tally.errors[:10], "http_429": tally.refused_429,
        "shared_token": args.shared_token,
        "rss_start_mb": round(sum(rss_start), 1), "rss_end_mb": round(sum(rss_end), 1),
        "rss_peak_mb": round(max(rss_peak), 1), "mb_per_user": round(sum(rss_end) / args.clients, 1),
        "faults": {"disconnected_mid_call": faults.disconnects, "disconnector_answers": faults.disconnect_refusals,
                   "body_50mb_statuses": faults.big_bodies,
                   "bad_token_statuses": {k: sorted(set(v)) for k, v in faults.bad_tokens.items()},
                   "bad_token_requests": sum(len(v) for v in faults.bad_tokens.values()),
                   "catalogue": faults.catalogue, "unexpected": faults.unexpected[:10]},
        "fault_checks_passed": args.no_faults or fault_checks(faults),
        "healthy_after": healthy, "exit_codes": exit_codes, "workers_replaced": children_gone,
        "server_tracebacks": logged.count("Traceback"),
        "access_log_lines": len(log_lines), "access_log_statuses": statuses,
        "client_gone_logged": sum(1 for line in log_lines if line.get("error") == "http.client_gone"),
        "tokens_in_logs": len(secrets_logged),
    }


def fault_checks(faults: Faults) -> bool:
    return (faults.big_bodies == [413, 413, 413]
            and all(set(v) == {401} for v in faults.bad_tokens.values()) and bool(faults.bad_tokens)
            and faults.catalogue.get("register_exit") == 0 and faults.catalogue.get("remove_exit") == 0
            and faults.catalogue.get("late_book_searchable") is True and faults.catalogue.get("doomed_gone") is True
            and not faults.unexpected)


def latency_figures(tally: Tally) -> dict[str, Any]:
    every = [v for values in tally.latencies.values() for v in values]
    if not every:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "per_tool_p50_ms": {}}
    return {"p50_ms": round(percentile(every, 0.5), 1), "p95_ms": round(percentile(every, 0.95), 1),
            "p99_ms": round(percentile(every, 0.99), 1),
            "per_tool_p50_ms": {t: round(percentile(v, 0.5), 1) for t, v in tally.latencies.items() if v}}


# ---------------------------------------------------------------------------- stdio phase


async def stdio_client(proc: asyncio.subprocess.Process, checker: Checker, deadline: float, max_calls: int,
                       tally: Tally) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    turn = 0
    while time.monotonic() < deadline and turn < max_calls:
        tool, arguments, expected = checker.next_call(turn)
        turn += 1
        started = time.perf_counter()
        try:
            message = await stdio_call(proc, rpc("tools/call", {"name": tool, "arguments": arguments}, turn))
        except (OSError, ValueError, ConnectionError) as exc:
            tally.error(f"{tool}: {type(exc).__name__}: {exc}")
            return
        tally.calls += 1
        tally.latencies[tool].append((time.perf_counter() - started) * 1000)
        problem = ("JSON-RPC error " + str(message["error"])) if "error" in message else \
            Checker.problem(tool, expected, message.get("result") or {})
        if problem:
            tally.error(problem)


async def stdio_call(proc: asyncio.subprocess.Process, message: dict[str, Any]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    await proc.stdin.drain()
    while True:
        line = await proc.stdout.readline()
        if not line:
            raise ConnectionError("the stdio server closed its output")
        answer = json.loads(line)
        if answer.get("id") == message.get("id"):
            return dict(answer)


async def stdio_phase(args: argparse.Namespace, data: Path, books: dict[str, dict[str, Any]]) -> dict[str, Any]:
    procs: list[asyncio.subprocess.Process] = []
    started = time.perf_counter()
    try:
        for _ in range(args.clients):
            procs.append(await asyncio.create_subprocess_exec(
                sys.executable, "-m", "book_agent", "--data-dir", str(data), "mcp", "@all", cwd=ROOT,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                limit=64 << 20))

        async def handshake(proc: asyncio.subprocess.Process) -> float:
            await stdio_call(proc, rpc("initialize", INIT, 0))
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(rpc("notifications/initialized", {}, None)) + "\n").encode())
            await stdio_call(proc, rpc("tools/list", {}, -1))
            return time.perf_counter() - started

        ready = await asyncio.wait_for(asyncio.gather(*(handshake(p) for p in procs)), timeout=300)
        warm = Tally()
        await asyncio.gather(*(stdio_client(p, Checker(books, 999), time.monotonic() + 120, len(TOOL_MIX), warm)
                               for p in procs))
        rss_start = sum(proc_status(p.pid, "VmRSS") for p in procs)
        tally = Tally()
        began = time.monotonic()
        await asyncio.gather(*(stdio_client(p, Checker(books, i), began + args.seconds, args.max_calls, tally)
                               for i, p in enumerate(procs)))
        elapsed = time.monotonic() - began
        rss_end = sum(proc_status(p.pid, "VmRSS") for p in procs)
    finally:
        for proc in procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in procs:
            try:
                await asyncio.wait_for(proc.wait(), timeout=20)
            except TimeoutError:
                proc.kill()
                await proc.wait()
    return {"clients": args.clients, "seconds": round(elapsed, 1), "all_ready_s": round(max(ready), 2),
            "first_ready_s": round(min(ready), 2), "calls": tally.calls,
            "throughput_per_s": round(tally.calls / elapsed, 1), **latency_figures(tally),
            "errors": len(tally.errors) + len(warm.errors), "error_samples": (warm.errors + tally.errors)[:10],
            "rss_start_total_mb": round(rss_start, 1), "rss_end_total_mb": round(rss_end, 1),
            "mb_per_user": round(rss_end / args.clients, 1)}


# ---------------------------------------------------------------------------- report


def table(http: dict[str, Any], stdio: dict[str, Any] | None) -> str:
    rows = [("clients", "clients", "clients"), ("throughput (calls/s)", "throughput_per_s", "throughput_per_s"),
            ("p50 ms", "p50_ms", "p50_ms"), ("p95 ms", "p95_ms", "p95_ms"), ("p99 ms", "p99_ms", "p99_ms"),
            ("errors (well-behaved)", "errors", "errors"), ("of which HTTP 429", "http_429", "-"),
            ("calls", "calls", "calls"),
            ("server CPU ms per call", "server_cpu_ms_per_call", "-"),
            ("clients' CPU ms per call", "client_cpu_ms_per_call", "-"),
            ("RSS at start, MB", "rss_start_mb", "rss_start_total_mb"),
            ("RSS at end, MB", "rss_end_mb", "rss_end_total_mb"), ("MB per user", "mb_per_user", "mb_per_user"),
            ("start-up, s", "startup_s", "all_ready_s")]
    servers = "one server" if http["replicas"] == 1 else f"{http['replicas']} servers"
    if http.get("workers", 1) > 1:
        servers += f", {http['workers']} workers"
    lines = [f"{'':24} {'HTTP (' + servers + ')':>18} {'stdio (one each)':>18}"]
    for name, h, s in rows:
        lines.append(f"{name:24} {http.get(h)!s:>18} {(stdio or {}).get(s, '-')!s:>18}")
    f = http["faults"]
    lines += ["", f"faults during the HTTP run ({'all as expected' if http['fault_checks_passed'] else 'NOT as expected'}):",
              f"  disconnected mid-call: {f['disconnected_mid_call']} (answers to the eager ones: "
              f"{f['disconnector_answers']})",
              f"  50 MB bodies: {f['body_50mb_statuses']}",
              f"  refused tokens ({f['bad_token_requests']} requests): {f['bad_token_statuses']}",
              f"  catalogue: {json.dumps({k: v for k, v in f['catalogue'].items() if k != 'listed_after'})}",
              f"  server afterwards: healthy={http['healthy_after']}, tracebacks={http['server_tracebacks']}, "
              f"exit {http['exit_codes']}, peak RSS {http['rss_peak_mb']} MB, "
              f"access log {http['access_log_lines']} lines {http['access_log_statuses']} "
              f"({http['client_gone_logged']} http.client_gone), tokens in logs: {http['tokens_in_logs']}",
              f"  per-tool p50 ms: {http['per_tool_p50_ms']}"]
    if http["error_samples"]:
        lines.append(f"  error samples: {http['error_samples']}")
    if stdio and stdio["error_samples"]:
        lines.append(f"  stdio error samples: {stdio['error_samples']}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each phase's timed run")
    parser.add_argument("--max-calls", type=int, default=100_000, help="at most this many calls per client")
    parser.add_argument("--auth", choices=("token-file", "jwt"), default="token-file")
    parser.add_argument("--replicas", type=int, default=1, help="serve processes over the one data dir (stateless: "
                                                                 "clients spread over them, as a load balancer would)")
    parser.add_argument("--workers", type=int, default=1, help="`serve --workers N`: N processes on each "
                                                              "server's one port")
    parser.add_argument("--shared-token", action="store_true", help="every well-behaved client uses one token "
                                                                    "(a team's agents behind one key)")
    parser.add_argument("--skip-stdio", action="store_true", help="no stdio comparison")
    parser.add_argument("--no-faults", action="store_true", help="well-behaved clients only (a baseline)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if not 1 <= args.clients <= 256 or not 1 <= args.seconds <= 600 or not 1 <= args.replicas <= 8 \
            or not 1 <= args.workers <= 8:
        parser.error("--clients 1..256, --seconds 1..600, --replicas 1..8, --workers 1..8")
    BENCH.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    data, books, late = build_library()
    http = asyncio.run(http_phase(args, data, books, late, BENCH))
    stdio = None
    if not args.skip_stdio:
        data, books, _ = build_library()  # the same books, none registered or removed
        stdio = asyncio.run(stdio_phase(args, data, books))
    # a shared machine: another session's test run shows here and in the figures
    machine = {"cpus": os.cpu_count(), "load_average_before": round(load_before, 1),
               "load_average_after": round(os.getloadavg()[0], 1)}
    results = {"http": http, "stdio": stdio, "machine": machine}
    shared = "-shared" if args.shared_token else ""
    out = BENCH / f"results-{args.auth}{shared}-{args.clients}x{int(args.seconds)}s-r{args.replicas}w{args.workers}.json"
    out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1) if args.json else table(http, stdio))
    print(f"machine: {machine['cpus']} CPUs, 1-minute load average {machine['load_average_before']} before, "
          f"{machine['load_average_after']} after (this run's own load included)")
    print(f"\nfigures: {out.relative_to(ROOT)}")
    ok = http["errors"] == 0 and http["fault_checks_passed"] and http["healthy_after"] \
        and not http["server_tracebacks"] and not http["tokens_in_logs"] and (stdio is None or stdio["errors"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
