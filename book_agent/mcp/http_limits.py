"""What one HTTP client may ask of `serve`: body size, concurrent calls, time to send a request.

A pure ASGI middleware (`RequestLimits`) in front of FastMCP's streamable-HTTP app, with the
uvicorn settings it relies on in mcp/http_uvicorn.py:

- **Body size.** A declared `Content-Length` over `max_body_bytes` is refused with 413 before a
  byte of the body is read; a chunked body is counted as it streams and refused once past it.
- **Time to send.** The body must arrive within `read_timeout` seconds of the request's head,
  else 408 (a client that sends headers, then trickles the body, holds nothing for longer). The
  head itself must arrive within `read_timeout` of the connection opening or the previous answer,
  else the connection is closed (mcp/http_uvicorn.py: uvicorn's keep-alive timer alone restarts
  on every byte). Idle keep-alive connections close after `KEEP_ALIVE_S`.
- **Concurrent calls per client.** At most `max_concurrent_per_client` requests in flight per
  token (its log label) or, without authentication, per client address; the next gets 429 with
  `Retry-After`. uvicorn's `limit_concurrency` caps connections and tasks for everyone at
  `max_connections` (503 past it).

Each refusal is JSON, `{"error": {code, message, details, remediation}}` as everywhere else, and
names its code for the access log. Accepted bodies are read whole (at most `max_body_bytes`)
and handed on unchanged, so the app never reads from a slow client itself.

A call whose client goes away is cancelled (`answer_while_connected`: answers are plain JSON,
which listens for nothing itself): the tool's coroutine is cancelled, and a call still queued on
a session lane is dropped before it starts (`asyncio.wrap_future`); one already running finishes
on its lane. So vanished clients cannot pile work up.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from book_agent.domain.errors import BookAgentError

MAX_BODY_BYTES = 1 << 20  # a tools/call is a few hundred bytes; a query vector a few dozen KiB
MAX_CONCURRENT_PER_CLIENT = 8
READ_TIMEOUT_S = 15.0
MAX_CONNECTIONS = 512
SHUTDOWN_TIMEOUT_S = 30.0
KEEP_ALIVE_S = 5
RETRY_AFTER_S = 1

NOTE = "book_agent.note"  # scope key: what the access log reports about the request
BODY = "book_agent.body"  # scope key: the body as read (the access log reads the call from it)

Scope = MutableMapping[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class HttpLimits:
    max_body_bytes: int = MAX_BODY_BYTES
    max_concurrent_per_client: int = MAX_CONCURRENT_PER_CLIENT
    read_timeout: float = READ_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    shutdown_timeout: float = SHUTDOWN_TIMEOUT_S

    def checked(self) -> HttpLimits:
        bounds: list[tuple[str, float, float, float]] = [
            ("max_body_bytes", self.max_body_bytes, 1024, 1 << 30),
            ("max_concurrent_per_client", self.max_concurrent_per_client, 1, 100_000),
            ("read_timeout", self.read_timeout, 0.1, 3600),
            ("max_connections", self.max_connections, 1, 1_000_000),
            ("shutdown_timeout", self.shutdown_timeout, 0, 3600),
        ]
        for name, value, low, high in bounds:
            if not isinstance(value, int | float) or not math.isfinite(value) or not low <= value <= high:
                flag = "--" + name.replace("_", "-")
                raise BookAgentError("http.bad_limit", f"{flag} {value!r} is outside {low:g}..{high:g}",
                                     details={"option": flag, "value": value, "range": [low, high]},
                                     remediation=f"pass {flag} within {low:g}..{high:g}, or leave the default")
        return self


def note_of(scope: Scope) -> dict[str, Any]:
    note: dict[str, Any] = scope.setdefault(NOTE, {})
    return note


def header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value)
    return None


class Refused(Exception):
    def __init__(self, status: int, error: BookAgentError, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(error.message)
        self.status, self.error, self.headers = status, error, list(headers)


class ClientGone(Exception):
    """The client disconnected before its request was read whole."""


def too_large(limit: int, declared: int | None = None) -> Refused:
    said = f"declares {declared} bytes, more" if declared is not None else "is longer"
    return Refused(413, BookAgentError(
        "http.body_too_large", f"the request body {said} than the {limit}-byte limit",
        details={"limit": limit, **({"declared": declared} if declared is not None else {})},
        remediation="send a smaller request (a tool call is a few KiB), or raise the server's --max-body-bytes"))


def too_slow(timeout: float) -> Refused:
    return Refused(408, BookAgentError(
        "http.body_timeout", f"the request body did not arrive within {timeout:g} s",
        details={"timeout_s": timeout},
        remediation="send the whole request at once; a server behind a slow link may raise --read-timeout"),
        headers=[(b"connection", b"close")])


def too_many(limit: int) -> Refused:
    return Refused(429, BookAgentError(
        "http.too_many_requests", f"this client already has {limit} requests in flight",
        details={"limit": limit, "retry_after_s": RETRY_AFTER_S},
        remediation=f"wait for an answer before sending more (retry after {RETRY_AFTER_S} s); the server's "
                    "--max-concurrent-per-client sets the limit"),
        headers=[(b"retry-after", str(RETRY_AFTER_S).encode())])


async def respond(send: Send, refusal: Refused) -> None:
    body = json.dumps({"error": refusal.error.to_dict()}, ensure_ascii=False).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *refusal.headers]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def declared_length(scope: Scope) -> int | None:
    raw = header(scope, b"content-length")
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None  # h11 refuses a malformed Content-Length before any app sees it


async def read_body(receive: Receive, limit: int, timeout: float) -> bytes:
    """The whole body, or Refused (413 past `limit`, 408 past `timeout`), or ClientGone."""
    import anyio

    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(timeout) as deadline:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone
            chunk = message.get("body") or b""
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)
    assert deadline.cancelled_caught
    raise too_slow(timeout)


async def answer_while_connected(app: App, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
    """Run the app on the body read already, and cancel it if the client goes away before the
    whole answer is sent (a JSON answer listens for nothing itself; this is what cancels the
    tool's coroutine, and drops a call still queued on a lane). The app's own receive gives the
    body, then waits for the disconnect (what a streamed answer listens for)."""
    import anyio

    gone = anyio.Event()
    answered = False
    given = False

    async def app_receive() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send_noting(message: Message) -> None:
        nonlocal answered
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered = True
        await send(message)

    async with anyio.create_task_group() as group:
        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass  # the body is read whole: only the disconnect (or the answer's end) comes
            gone.set()
            if not answered:
                group.cancel_scope.cancel()

        group.start_soon(watch)
        await app(scope, app_receive, send_noting)
        group.cancel_scope.cancel()


def client_key(scope: Scope, label: Callable[[Any], str] | None) -> str:
    """Whose calls these are: the token (by its log label), else the client's address (as
    uvicorn reports it: a trusted local proxy's X-Forwarded-For counts)."""
    access = getattr(scope.get("user"), "access_token", None)
    if access is not None and label is not None:
        return "token:" + label(access)
    client = scope.get("client")
    return "address:" + (str(client[0]) if client else "unknown")


class RequestLimits:
    def __init__(self, app: App, limits: HttpLimits, label: Callable[[Any], str] | None = None,
                 unlimited_paths: Iterable[str] = ()) -> None:
        self.app = app
        self.limits = limits
        self.label = label
        self.unlimited_paths = frozenset(unlimited_paths)
        self.in_flight: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        note = note_of(scope)
        key = None
        try:
            declared = declared_length(scope)
            if declared is not None and declared > self.limits.max_body_bytes:
                # not read: uvicorn discards what still comes, within --read-timeout (http_uvicorn.py)
                raise too_large(self.limits.max_body_bytes, declared)
            if scope.get("path") not in self.unlimited_paths:
                key = client_key(scope, self.label)
                if self.in_flight.get(key, 0) >= self.limits.max_concurrent_per_client:
                    key = None
                    raise too_many(self.limits.max_concurrent_per_client)
                self.in_flight[key] = self.in_flight.get(key, 0) + 1
            body = await read_body(receive, self.limits.max_body_bytes, self.limits.read_timeout)
        except Refused as refusal:
            note["error"] = refusal.error.code
            self._release(key)
            await respond(send, refusal)
            return
        except ClientGone:
            note["error"] = "http.client_gone"
            self._release(key)
            return
        scope[BODY] = body
        try:
            await answer_while_connected(self.app, scope, body, receive, send)
        finally:
            self._release(key)

    def _release(self, key: str | None) -> None:
        if key is None:
            return
        left = self.in_flight.get(key, 0) - 1
        if left > 0:
            self.in_flight[key] = left
        else:
            self.in_flight.pop(key, None)
