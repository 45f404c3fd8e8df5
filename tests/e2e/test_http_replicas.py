"""Two `book-agent serve` processes over one data dir behind one port-splitting client: the HTTP
server is stateless, so every request of one MCP session may go to either replica (a load
balancer without sticky sessions), and both answer alike. Also: a replica serves a prepared
data dir mounted read-only (in a private mount namespace, where this machine allows one)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.support.http_serve import free_port, terminate, wait_healthy
from tests.support.library_support import LIBRARY_TOOLS, three_book_library

CALLS = [
    ("list_books", {}),
    ("search", {"query": "river water ground", "top_k": 8}),
    ("search", {"query": "battle general army", "books": ["part-0", "part-2"]}),
    ("read_entry", {"book_id": "part-1", "record_id": "d001"}),
    ("read_markdown", {"book_id": "part-2", "record_id": "d002", "context_chars": 80}),
    ("get_skill", {"book_id": "part-0"}),
    ("status", {"book_id": "part-0"}),
]


def serve(argv: list[str], port: int, log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, log)
    except BaseException:
        with contextlib.suppress(subprocess.TimeoutExpired):
            terminate(proc)  # a server that never answered must not outlive the test (nor its workers)
        raise
    return base, proc


def stop(proc: subprocess.Popen[bytes], log: Path) -> None:
    terminate(proc)
    assert b"Traceback" not in log.read_bytes(), log.read_text()


def prepared_library(tmp_path: Path, pdf: bool = False) -> Path:
    data = three_book_library(tmp_path)
    if pdf:  # a PDF book too: its pages can be located, read and rendered
        from book_agent import BookAgent
        from tests.support.package_builder import build_package

        with BookAgent(data) as agent:
            agent.init(build_package(tmp_path / "parts" / "pdf-book", book_id="pdf-book"))
    done = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), "prepare", "@all"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return data


class Alternating(httpx2.AsyncBaseTransport):
    """Sends each HTTP request to the next replica in turn: what a round-robin L7 balancer does."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.sent: list[int] = []
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[len(self.sent) % len(self.ports)]
        self.sent.append(port)
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
        self.inner = httpx2.AsyncHTTPTransport()  # the session's client closes it; a next one may follow


def comparable(result: Any) -> Any:
    """A tool result without what may differ between two correct answers (timings)."""
    data = result.structured_content
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if k not in ("timings", "elapsed_ms")}
    return [getattr(c, "text", None) for c in result.content]


async def session(url: str, transport: StreamableHttpTransport | None = None) -> tuple[set[str], list[Any]]:
    async with Client(transport or url) as client:
        tools = {t.name for t in await client.list_tools()}
        results = [await client.call_tool(name, args) for name, args in CALLS]
        return tools, [comparable(r) for r in results]


def test_one_session_split_over_two_replicas_answers_as_one_server(tmp_path: Path) -> None:
    data = prepared_library(tmp_path)
    ports = [free_port(), free_port()]
    logs = [tmp_path / f"replica-{i}.log" for i in range(2)]
    replicas = [serve([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                       "--port", str(port)], port, log) for port, log in zip(ports, logs, strict=True)]
    try:
        alone = [asyncio.run(session(base + "/mcp")) for base, _ in replicas]
        assert alone[0] == alone[1]  # the same answers from either replica
        assert alone[0][0] == LIBRARY_TOOLS
        assert alone[0][1][1]["hits"] and alone[0][1][1]["library"]["books_searched"] == 3

        split = Alternating(ports)

        def factory(**options: Any) -> Any:
            options = {k: v for k, v in options.items() if v is not None}
            return httpx2.AsyncClient(transport=split, **{"timeout": 30.0, **options})

        one = StreamableHttpTransport(f"http://127.0.0.1:{ports[0]}/mcp", httpx_client_factory=factory)
        assert asyncio.run(session("", one)) == alone[0]  # every request stood alone
        assert len(split.sent) >= len(CALLS) + 2 and set(split.sent) == set(ports)  # initialize, tools/list, calls
        assert split.sent.count(ports[0]) - split.sent.count(ports[1]) in (0, 1)  # each took half
    finally:
        for (_, proc), log in zip(replicas, logs, strict=True):
            stop(proc, log)


def read_only_namespace_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp"],
                           capture_output=True, timeout=30, check=False)
    return probe.returncode == 0


@pytest.mark.slow
def test_a_replica_serves_a_prepared_data_dir_mounted_read_only(tmp_path: Path) -> None:
    if not read_only_namespace_works():
        pytest.skip("no private mount namespace here (unshare -m with a read-only bind mount)")
    data = prepared_library(tmp_path, pdf=True)
    port = free_port()
    log = tmp_path / "replica-ro.log"
    script = (f'mount --bind "{data}" "{data}" && mount -o remount,bind,ro "{data}" && '
              f'exec "{sys.executable}" -m book_agent --data-dir "{data}" serve @all --port {port}')
    base, proc = serve(["unshare", "-m", "sh", "-c", script], port, log)

    async def pdf_tools() -> list[Any]:
        async with Client(base + "/mcp") as client:
            found = await client.call_tool("search", {"query": "diagram supply chain", "books": ["pdf-book"]})
            hit = found.structured_content["hits"][0]
            located = await client.call_tool("locate_source", {"book_id": "pdf-book", "hit": hit})
            locator = {k: v for k, v in located.structured_content.items() if k != "verification"}
            source = await client.call_tool("read_source", {"book_id": "pdf-book", "locator": locator})
            page = await client.call_tool("render_page", {"book_id": "pdf-book", "page_index": 0},
                                          raise_on_error=False)
            return [located, source, page]

    try:
        tools, results = asyncio.run(session(base + "/mcp"))
        assert tools == LIBRARY_TOOLS
        assert results[1]["hits"] and results[1]["library"]["books_searched"] == 4
        assert results[3]["record_id"] == "d001"
        located, source, page = asyncio.run(pdf_tools())
        assert located.structured_content["verification"]["method"] == "exact"
        assert source.structured_content["text"]
        # a page never rendered cannot be cached on a read-only data dir: a coded refusal, not a crash
        assert page.is_error and '"render.write_failed"' in page.content[0].text
    finally:
        stop(proc, log)


def worker_pids(pid: int) -> list[int]:
    """The `serve --workers` processes of `pid` (its spawned children, not the resource tracker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"multiprocessing.spawn" in cmdline:
                found.append(int(child))
    return sorted(found)


def two_workers(pid: int, keep: int | None = None, gone: int | None = None) -> list[int]:
    """The two workers of `pid`, once there are two, `keep` among them and `gone` not (60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        now = worker_pids(pid)
        if len(now) == 2 and (keep is None or keep in now) and gone not in now:
            return now
        assert time.monotonic() < deadline, (now, keep, gone)
        time.sleep(0.2)


def test_workers_share_one_port_and_each_answers(tmp_path: Path) -> None:
    """`serve --workers 2`: two processes accept on the one port; with either stopped (SIGSTOP),
    the other answers every call; one killed is replaced; SIGTERM stops all, as one process."""
    data = prepared_library(tmp_path)
    port, log = free_port(), tmp_path / "workers.log"
    base, proc = serve([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                        "--port", str(port), "--workers", "2", "--access-log", str(tmp_path / "access.log")],
                       port, log)
    try:
        workers = two_workers(proc.pid)
        expected = asyncio.run(session(base + "/mcp"))
        assert expected[0] == LIBRARY_TOOLS and expected[1][3]["record_id"] == "d001"
        stopped = workers[0]
        for _ in range(2):  # each worker answers alone: the first, then the one that just did
            running = next(pid for pid in workers if pid != stopped)
            os.kill(stopped, signal.SIGSTOP)  # only `running` can accept now
            try:
                assert asyncio.run(session(base + "/mcp")) == expected, f"worker {running} alone"
            finally:
                # uvicorn's supervisor pings its workers and replaces one that stays silent
                # for 5 s: on a slow machine the stopped one may be gone (and replaced) by now
                with contextlib.suppress(ProcessLookupError):
                    os.kill(stopped, signal.SIGCONT)
            workers = two_workers(proc.pid, keep=running)
            stopped = running
        os.kill(workers[0], signal.SIGKILL)  # the supervisor replaces a dead worker
        now = two_workers(proc.pid, gone=workers[0])
        assert workers[1] in now
        assert asyncio.run(session(base + "/mcp")) == expected
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=40) == -signal.SIGTERM  # as one process: ends by the signal sent
        assert not any(Path(f"/proc/{pid}").exists() for pid in now)
    finally:
        stop(proc, log)
    lines = (tmp_path / "access.log").read_text().splitlines()
    assert lines and all(json.loads(line)["status"] in (200, 202) for line in lines)


@pytest.mark.parametrize(("option", "code"), [(("--workers", "0"), "http.bad_limit"),
                                              (("nope", "--workers", "2"), "book.not_registered")])
def test_workers_are_checked_before_anything_listens(option: tuple[str, ...], code: str, tmp_path: Path) -> None:
    from tests.support.cli_support import run_cli

    data = three_book_library(tmp_path)
    books, *rest = option if option[0] == "nope" else ("@all", *option)
    out = run_cli("--data-dir", str(data), "--json", "serve", books, "--port", str(free_port()), *rest)
    assert out.code == 1 and out.error_code == code
