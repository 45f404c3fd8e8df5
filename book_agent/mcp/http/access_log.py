"""`serve`'s access log: one JSON line per HTTP request, on stderr or `--access-log FILE`.

    {"time": "2025-05-01T09:30:00.123Z", "client": "10.0.0.7", "method": "POST", "path": "/mcp",
     "status": 200, "ms": 12.4, "bytes_in": 182, "rpc": "tools/call", "tool": "search",
     "token": "3f9a0c1e", "books": ["part-1"], "error": null}

- `token`: the token's label (mcp/auth.py `token_labeler`: 8 hex digits of a hash of its digest,
  or of a JWT's issuer and subject), never the token or its digest; null without one.
- `rpc`, `tool`, `books`: the JSON-RPC method, the tool called and the books it names
  (`book_id`, `books`), read from the body the limits middleware read anyway; null otherwise.
- `error`: a refusal's code (`http.body_too_large`, `http.too_many_requests`, ...), or the code
  of the tool error the call returned (`mcp.bad_arguments`, ...); null on success.
- `query`: the query (or quotation) text, only with `--log-queries`.
- `status` 499: the client went away before any answer was sent; `error` `http.client_gone`:
  it went away before the whole answer (a streamed answer's status, 200, was sent already).

uvicorn's own access log is turned off; its warnings and errors still go to stderr.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.http.refusals import BODY, MESSAGE, App, Message, Receive, Scope, Send, note_of

MAX_NAME_CHARS = 100  # a tool or method name in the log; a client's junk is cut, not copied whole
MAX_BOOKS = 20
MAX_QUERY_CHARS = 2000
CLIENT_CLOSED = 499


def describe_call(body: bytes, message: Any = None) -> dict[str, Any]:
    """What a JSON-RPC request body asks: method, tool, books, query. `message`: the body as
    calls.read_message read it already, if it was."""
    from book_agent.mcp.http.calls import UNREADABLE, read_message

    message = read_message(body) if message is None else message
    if message is UNREADABLE:
        return {}
    if isinstance(message, list):
        return {"rpc": "(batch)"}
    if not isinstance(message, dict):
        return {}
    method = message.get("method")
    found: dict[str, Any] = {"rpc": method[:MAX_NAME_CHARS] if isinstance(method, str) else None}
    params = message.get("params")
    if method != "tools/call" or not isinstance(params, dict):
        return found
    name = params.get("name")
    found["tool"] = name[:MAX_NAME_CHARS] if isinstance(name, str) else None
    arguments = params.get("arguments")
    if isinstance(arguments, dict):
        named = [arguments.get("book_id"), *(arguments.get("books") or [] if isinstance(arguments.get("books"), list)
                                             else [])]
        books = [b[:MAX_NAME_CHARS] for b in named if isinstance(b, str)][:MAX_BOOKS]
        found["books"] = books or None
        text = arguments.get("query") if arguments.get("query") is not None else arguments.get("quote")
        if isinstance(text, str):
            found["query"] = text[:MAX_QUERY_CHARS]
    return found


class AccessLog:
    def __init__(self, app: App, write: Callable[[str], None], label: Callable[[Any], str] | None = None,
                 log_queries: bool = False) -> None:
        self.app = app
        self.write = write
        self.label = label
        self.log_queries = log_queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        note = note_of(scope)
        status: list[int] = []
        finished: list[bool] = []

        async def send_noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished.append(True)
            await send(message)

        async def receive_noting() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect" and not finished:
                note.setdefault("error", "http.client_gone")  # went away before the whole answer
            return message

        try:
            await self.app(scope, receive_noting, send_noting)
        except BaseException:
            status.append(500)  # uvicorn answers 500 when nothing was sent yet
            raise
        finally:
            self._log(scope, note, status[0] if status else CLIENT_CLOSED, started)

    def _log(self, scope: Scope, note: dict[str, Any], status: int, started: float) -> None:
        client = scope.get("client")
        access = getattr(scope.get("user"), "access_token", None)
        call = describe_call(scope[BODY], scope.get(MESSAGE)) if scope.get(BODY) else {}
        line: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "client": str(client[0]) if client else None,
            "method": scope.get("method"),
            "path": str(scope.get("path", ""))[:200],
            "status": status,
            "ms": round((time.perf_counter() - started) * 1000, 1),
            "bytes_in": len(scope[BODY]) if scope.get(BODY) is not None else None,
            "rpc": call.get("rpc"),
            "tool": call.get("tool"),
            "token": self.label(access) if access is not None and self.label is not None else None,
            "books": call.get("books"),
            "error": note.get("error"),
        }
        if self.log_queries:
            line["query"] = call.get("query")
        # ASCII: a lone surrogate cannot break the line; a full disk or a closed stream must not
        # fail the request
        with contextlib.suppress(OSError, ValueError):
            self.write(json.dumps(line, ensure_ascii=True))


def line_writer(path: Path | None) -> Callable[[str], None]:
    """Each line written and flushed at once (a stop by signal loses nothing): to stderr, or
    appended to `path`."""
    stream: IO[str]
    if path is None:
        stream = sys.stderr
    else:
        try:
            # O_NONBLOCK: a FIFO without a reader is refused at start (ENXIO) instead of blocking
            # it, and a full pipe drops a line (write errors are suppressed) instead of the server
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
            stream = os.fdopen(os.open(path, flags, 0o644), "a", encoding="utf-8", buffering=1)
        except OSError as exc:
            why = "it is a FIFO no process reads" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
            raise BookAgentError("http.bad_access_log", f"cannot open the access log {path}: {why}",
                                 details={"path": str(path)},
                                 remediation="pass --access-log a writable file path, or leave it out (stderr)") from exc

    def write(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()

    return write


def tool_outcome_middleware() -> Any:
    """A FastMCP middleware (outermost): the error code of a request's answer goes to the access
    log, whether a tool error or a JSON-RPC error (an unknown tool, resource or prompt, a book
    outside the token) carrying our JSON in its data."""
    from fastmcp.server.dependencies import get_http_request
    from fastmcp.server.middleware import Middleware
    from mcp.shared.exceptions import MCPError

    def note(code: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # RuntimeError: not over HTTP
            note_of(get_http_request().scope)["error"] = code

    class ToolOutcome(Middleware):
        async def on_message(self, context: Any, call_next: Any) -> Any:
            try:
                return await call_next(context)
            except MCPError as exc:
                data: dict[str, Any] = exc.data if isinstance(exc.data, dict) else {}
                coded: dict[str, Any] = data["error"] if isinstance(data.get("error"), dict) else {}
                note(coded["code"] if isinstance(coded.get("code"), str) else f"rpc.{exc.code}")
                raise

        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            result = await call_next(context)
            if getattr(result, "is_error", False):
                note(error_code(result))
            return result

    return ToolOutcome()


def error_code(result: Any) -> str | None:
    """The code in a tool error's JSON text block (mcp/errors.py)."""
    for block in getattr(result, "content", None) or []:
        text = getattr(block, "text", None)
        if isinstance(text, str) and text.startswith("{"):
            try:
                code = json.loads(text).get("error", {}).get("code")
            except (ValueError, AttributeError):
                continue
            return code if isinstance(code, str) else None
    return None
