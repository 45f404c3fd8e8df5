"""`book-agent serve` in a subprocess on 127.0.0.1, and raw HTTP/1.1 on a socket (for the
requests a well-behaved client library would never send: a trickled body, a head that never ends)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from tests.support import REPO_ROOT

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    base: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]

    def output(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def start_server(data: Path, logs: Path, *extra: str, timeout: float = 60) -> Served:
    port = free_port()
    log_path = logs / f"server-{port}.log"
    log = open(log_path, "wb")  # noqa: SIM115  (closed by stop_server)
    proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                             "--port", str(port), *extra], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ), cwd=REPO_ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, log_path, timeout)
    except AssertionError:
        proc.kill()
        log.close()
        raise
    return Served(base, port, proc, log_path, log)


@contextmanager
def serving(data: Path, logs: Path, *extra: str, secrets: tuple[str, ...] = ()) -> Iterator[Served]:
    """A server for the block; once stopped, its output holds no traceback and none of
    `secrets` (tokens, nor their digests: a server must never print either)."""
    served = start_server(data, logs, *extra)
    try:
        yield served
    finally:
        stop_server(served)
    output = served.output()
    assert "Traceback" not in output, output
    for secret in secrets:
        assert secret not in output and token_digest(secret) not in output


def token_digest(token: str) -> str:
    """What a `--token-file` line holds for `token`."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_file(folder: Path, *tokens: str) -> Path:
    """A `--token-file` admitting `tokens` (one digest per line)."""
    path = folder / "tokens"
    path.write_text("".join(token_digest(token) + "\n" for token in tokens), encoding="utf-8")
    return path


def bearer_headers(token: str | None) -> dict[str, str]:
    """MCP's headers, with `Authorization: Bearer token` when there is one."""
    return {**MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}


def wait_healthy(base: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    """Until `base`/health answers 200; an AssertionError with the server's log when it exits or times out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(log.read_text(errors="replace"))
        time.sleep(0.2)


def stop_server(served: Served) -> int:
    try:
        return terminate(served.proc, timeout=30)
    finally:
        served.log.close()


def terminate(proc: subprocess.Popen[bytes], timeout: float = 20) -> int:
    """SIGTERM (a graceful stop), then the exit code; killed if it has not stopped in `timeout` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def rpc_body(name: str, arguments: dict[str, Any], ident: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


def head(port: int, length: int | None, token: str | None = None, path: str = "/mcp") -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
             "Accept: application/json, text/event-stream"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(port: int, timeout: float = 10, source: str | None = None) -> socket.socket:
    """A connection to the server on 127.0.0.1; `source` binds the client's end to another
    loopback address (127.0.0.2, ...: Linux routes all of 127/8 to lo), a client of its own."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source, 0) if source else None)
    sock.settimeout(timeout)
    return sock


def client_from(source: str, timeout: float = 30, **options: Any) -> httpx.Client:
    """An httpx client whose connections come from the loopback address `source`."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=timeout, **options)


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one response (Content-Length, chunked or close-delimited)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response head: {data!r}")
        data += chunk
    raw_head, body = data.split(b"\r\n\r\n", 1)
    status_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in header_lines)}

    def more() -> bool:
        nonlocal body
        chunk = sock.recv(65536)
        body += chunk
        return bool(chunk)

    if "content-length" in headers:
        while len(body) < int(headers["content-length"]) and more():
            pass
    elif headers.get("transfer-encoding") == "chunked":
        while not body.endswith(b"0\r\n\r\n") and more():
            pass
        body = dechunk(body)
    else:
        while more():
            pass
    return int(status_line.split()[1]), headers, body


def dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2:]
    return out


def sse_result(body: bytes) -> dict[str, Any]:
    """The JSON-RPC message in an SSE answer (or a plain JSON one)."""
    text = body.decode("utf-8", errors="replace")
    for line in text.splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line[5:].strip()))
    start = text.find("{")
    return dict(json.loads(text[start:text.rfind("}") + 1]))


def pdf_book_data_dir(tmp: Path) -> Path:
    """A data dir holding `pdf-book`, a 20-record PDF package: what the served-load suites
    (fair share, floods) search and render."""
    from book_agent import BookAgent
    from tests.support.library_support import corpus
    from tests.support.package_builder import build_package

    with BookAgent(tmp / "data") as agent:
        agent.init(build_package(tmp / "pdf", book_id="pdf-book", kind="pdf", records=corpus(20)))
    return tmp / "data"
