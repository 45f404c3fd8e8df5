"""A raw stdio MCP session with a real server process: send any bytes, collect every line back.

The FastMCP client cannot send a malformed line or a lone surrogate (it validates and
encodes what it sends), so the reliability tests speak the wire themselves.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mcp_types import LATEST_PROTOCOL_VERSION

INIT = {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def server_argv(data_dir: Path, book_id: str) -> list[str]:
    return [sys.executable, "-m", "book_agent", "--data-dir", str(data_dir), "mcp", book_id]


def rpc(method: str, params: dict[str, Any] | None = None, ident: Any = None) -> str:
    """One JSON-RPC line; json.dumps keeps a lone surrogate as the escape `\\udXXX` (ASCII)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if ident is not None:
        message["id"] = ident
    return json.dumps(message)


def call(ident: int, tool: str, arguments: Any) -> str:
    return rpc("tools/call", {"name": tool, "arguments": arguments}, ident)


class RawSession:
    def __init__(self, data_dir: Path, book_id: str, stderr_path: Path, env: dict[str, str] | None = None,
                 argv: list[str] | None = None) -> None:
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115  # closed in close()
        self.proc = subprocess.Popen(argv or server_argv(data_dir, book_id), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        self.raw: list[bytes] = []  # every stdout line, as bytes
        self.by_id: dict[Any, list[dict[str, Any]]] = {}
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.send(rpc("initialize", INIT, 0))
        self.wait_for([0], timeout=60)
        self.send(rpc("notifications/initialized"))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line.decode("utf-8"))  # strict: stdout must be UTF-8 JSON
            with self._cond:
                self.raw.append(line)
                self.by_id.setdefault(message.get("id"), []).append(message)
                self._cond.notify_all()

    def send(self, *lines: str | bytes) -> None:
        assert self.proc.stdin is not None
        for line in lines:
            data = line if isinstance(line, bytes) else line.encode("utf-8")
            self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, idents: list[Any], timeout: float = 30, nulls: int = 0) -> dict[Any, list[dict[str, Any]]]:
        """The answers to `idents` (and `nulls` answers with id null); raises TimeoutError naming the missing ones."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._have(idents, nulls):
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    missing = [i for i in idents if i not in self.by_id]
                    raise TimeoutError(f"no answer to {missing} (nulls {len(self.by_id.get(None, []))}/{nulls})")
                self._cond.wait(min(left, 0.5))
            return {i: list(self.by_id.get(i, [])) for i in [*idents, None]}

    def _have(self, idents: list[Any], nulls: int) -> bool:
        return all(i in self.by_id for i in idents) and len(self.by_id.get(None, [])) >= nulls

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # still busy after the host went away: a failure, but leave no process
            self.proc.kill()
            code = -self.proc.wait()
        self._reader.join(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()
        return code
