"""A real HTTP server on 127.0.0.1 for testing remote adapters (embeddings, rerank).

Tests script it: `server.handler = lambda req: Reply(200, {...})`, or queue replies with
`server.queue(Reply(429), Reply(200, {...}))` (queued replies go first, then the handler).
Every request is recorded (method, path, headers, parsed JSON body) in `server.requests`.

    with LoopbackServer() as server:
        server.handler = lambda req: Reply(200, {"data": [...]})
        url = server.url("/v1/embeddings")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; bytes/str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (for timeouts)

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode("utf-8"), "application/json"
        return json.dumps(self.body if self.body is not None else {}).encode("utf-8"), "application/json"


class LoopbackServer:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.handler: Callable[[Request], Reply] = lambda request: Reply(404, {"error": "no handler"})
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(self.command, self.path, dict(self.headers.items()), self.rfile.read(length))
                with server._lock:
                    server.requests.append(request)
                    reply = server._queue.popleft() if server._queue else None
                if reply is None:
                    reply = server.handler(request)
                if reply.delay:
                    time.sleep(reply.delay)
                body, content_type = reply.encoded()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.headers.get("Content-Type", content_type))
                    for name, value in reply.headers.items():
                        if name != "Content-Type":
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll interval: shutdown() waits for the loop to notice (0.5 s by default)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
