"""What one HTTP client may ask of `serve`: body size, concurrent calls, time to send a request.

A pure ASGI middleware (`RequestLimits`) in front of FastMCP's streamable-HTTP app, with the
uvicorn settings it relies on in book_agent/mcp/http/uvicorn_run.py:

- **Body size.** A declared `Content-Length` over `max_body_bytes` is refused with 413 before a
  byte of the body is read; a chunked body is counted as it streams and refused once past it.
- **Time to send.** The head and the body share one deadline: both must arrive within
  `read_timeout` seconds of the connection opening or of the previous answer (book_agent/mcp/http/uvicorn_run.py
  sets it and closes a connection whose head is late; uvicorn's keep-alive timer alone restarts
  on every byte), else 408 (a client trickling a head, then a body, holds nothing for longer).
  Idle keep-alive connections close after `KEEP_ALIVE_S`.
- **Concurrent calls per client.** At most `max_concurrent_per_client` calls (`tools/call`,
  `resources/read`, `prompts/get`, anything but the protocol's own methods) in flight per token
  (its log label) or, without authentication, per client address. Protocol calls
  (`initialize`, `ping`, `tools/list` and the other lists, notifications, answers to the
  server) count toward nothing: they cost little and an agent cannot start without them. A
  call past the cap waits in a FIFO queue of at most `queue_per_client` calls for at most
  `queue_wait` seconds (a burst is smoothed, not refused); past that, 429 with `Retry-After`.
- **Requests without a valid token, per address** (with authentication on): at most
  `max_unauthenticated_per_address` in flight and `unauthenticated_rate` a second (bursts of
  twice that) from one client address; past either, 429 `http.too_many_unauthenticated` with
  `Retry-After`, before the body is read, answered UNAUTHENTICATED_TARPIT_S late. A token's own
  calls are not held to it. Each request tells its connection's ledger whether it had a valid
  token: at the cap for everyone, connections without one are closed first.
- **Connections.** book_agent/mcp/http/connections.py keeps the caps for everyone and per address (uvicorn's
  `limit_concurrency` is only a backstop, at four times the cap).

Each refusal is JSON, `{"error": {code, message, details, remediation}}` as everywhere else, and
names its code for the access log. Accepted bodies are read whole (at most `max_body_bytes`)
and handed on unchanged, so the app never reads from a slow client itself.

A call whose client goes away is cancelled (`answer_while_connected`: answers are plain JSON,
which listens for nothing itself): the tool's coroutine is cancelled, and a call still queued on
a session lane is dropped before it starts (`asyncio.wrap_future`); one already running finishes
on its lane. So vanished clients cannot pile work up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.http.calls import client_address, client_key, is_protocol_call, read_message
from book_agent.mcp.http.refusals import (
    BODY,
    DEADLINE,
    MARK,
    MESSAGE,
    REFUSED,
    RETRY_AFTER_S,
    App,
    ClientGone,
    Message,
    Receive,
    Refused,
    Scope,
    Send,
    header,
    note_of,
    respond,
    too_large,
    too_many,
    too_many_unauthenticated,
    too_slow,
)

MAX_BODY_BYTES = 1 << 20  # a tools/call is a few hundred bytes; a query vector a few dozen KiB
MAX_CONCURRENT_PER_CLIENT = 8
QUEUE_PER_CLIENT = 32  # calls waiting past the cap, per client (16 agents on one token fit, and 8 more)
QUEUE_WAIT_S = 10.0  # how long one waits for a slot before its 429
READ_TIMEOUT_S = 15.0
MAX_CONNECTIONS = 512
MAX_CONNECTIONS_PER_ADDRESS = 128  # a quarter of the default cap: one address cannot hold all of it
MAX_UNAUTHENTICATED_PER_ADDRESS = 8  # requests without a valid token in flight, per address
UNAUTHENTICATED_RATE = 20.0  # such requests a second per address (bursts of twice that)
SHUTDOWN_TIMEOUT_S = 30.0
UNAUTHENTICATED_TARPIT_S = 1.0  # a 429 for requests without a valid token is answered this late
KEEP_ALIVE_S = 5



@dataclass(frozen=True)
class HttpLimits:
    max_body_bytes: int = MAX_BODY_BYTES
    max_concurrent_per_client: int = MAX_CONCURRENT_PER_CLIENT
    read_timeout: float = READ_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    shutdown_timeout: float = SHUTDOWN_TIMEOUT_S
    queue_per_client: int = QUEUE_PER_CLIENT
    queue_wait: float = QUEUE_WAIT_S
    max_connections_per_address: int = MAX_CONNECTIONS_PER_ADDRESS
    max_unauthenticated_per_address: int = MAX_UNAUTHENTICATED_PER_ADDRESS
    unauthenticated_rate: float = UNAUTHENTICATED_RATE

    def checked(self) -> HttpLimits:
        bounds: list[tuple[str, float, float, float]] = [
            ("max_body_bytes", self.max_body_bytes, 1024, 1 << 30),
            ("max_concurrent_per_client", self.max_concurrent_per_client, 1, 100_000),
            ("read_timeout", self.read_timeout, 0.1, 3600),
            ("max_connections", self.max_connections, 1, 1_000_000),
            ("shutdown_timeout", self.shutdown_timeout, 0, 3600),
            ("queue_per_client", self.queue_per_client, 0, 100_000),
            ("queue_wait", self.queue_wait, 0, 600),
            ("max_connections_per_address", self.max_connections_per_address, 1, 1_000_000),
            ("max_unauthenticated_per_address", self.max_unauthenticated_per_address, 1, 100_000),
            ("unauthenticated_rate", self.unauthenticated_rate, 0.01, 1_000_000),
        ]
        for name, value, low, high in bounds:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or not low <= value <= high:
                flag = "--" + name.replace("_", "-")
                raise BookAgentError("http.bad_limit", f"{flag} {value!r} is outside {low:g}..{high:g}",
                                     details={"option": flag, "value": value, "range": [low, high]},
                                     remediation=f"pass {flag} within {low:g}..{high:g}, or leave the default")
        return self


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


Admit = Callable[[], Awaitable["Refused | None"]]


def _mark(scope: Scope, authenticated: bool) -> None:
    mark = scope.get(MARK)
    if mark is not None:
        mark(authenticated)


async def answer_while_connected(app: App, scope: Scope, body: bytes, receive: Receive, send: Send,
                                 admit: Admit | None = None) -> None:
    """Run the app on the body read already, and cancel it if the client goes away before the
    whole answer is sent (a JSON answer listens for nothing itself; this is what cancels the
    tool's coroutine, and drops a call still queued on a lane). The app's own receive gives the
    body, then waits for the disconnect (what a streamed answer listens for). `admit` (a wait
    for a slot) runs first, under the same watch: a client gone while queued leaves the queue;
    a refusal it returns is answered instead of the app."""
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
        refusal = await admit() if admit is not None else None
        if refusal is not None:
            note_of(scope)["error"] = refusal.error.code
            answered = True
            await respond(send, refusal)
        else:
            await app(scope, app_receive, send_noting)
        group.cancel_scope.cancel()


class RequestLimits:
    def __init__(self, app: App, limits: HttpLimits, label: Callable[[Any], str] | None = None,
                 unlimited_paths: Iterable[str] = ()) -> None:
        from book_agent.mcp.http.slots import RateBuckets, Slots

        self.app = app
        self.limits = limits
        self.label = label  # None: no authentication, every request is its address's
        self.unlimited_paths = frozenset(unlimited_paths)
        self.calls = Slots(limits.max_concurrent_per_client, limits.queue_per_client, limits.queue_wait)
        self.unauthenticated = Slots(limits.max_unauthenticated_per_address, 0, 0)
        self.unauthenticated_rate = RateBuckets(limits.unauthenticated_rate, 2 * limits.unauthenticated_rate)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        note = note_of(scope)
        limited = scope.get("path") not in self.unlimited_paths
        held: str | None = None  # the address whose unauthenticated slot this request holds
        try:
            if scope.get(REFUSED) is not None:
                raise scope[REFUSED]
            declared = declared_length(scope)
            if declared is not None and declared > self.limits.max_body_bytes:
                # not read: uvicorn discards what still comes, within --read-timeout (http_uvicorn.py)
                raise too_large(self.limits.max_body_bytes, declared)
            if limited and self.label is not None:
                unauthenticated = self._unauthenticated(scope)
                _mark(scope, not unauthenticated)  # the connection's rank when room must be made
                if unauthenticated:
                    held = self._admit_unauthenticated(client_address(scope))
            body = await read_body(receive, self.limits.max_body_bytes, self._body_time(scope))
        except Refused as refusal:
            note["error"] = refusal.error.code
            self._release_unauthenticated(held)
            if refusal.error.code == "http.too_many_unauthenticated":
                import anyio

                await anyio.sleep(UNAUTHENTICATED_TARPIT_S)  # a flood's next guess waits: its 429s cost little
            await respond(send, refusal)
            return
        except ClientGone:
            note["error"] = "http.client_gone"
            self._release_unauthenticated(held)
            return
        scope[BODY] = body
        scope[MESSAGE] = message = read_message(body)
        key = client_key(scope, self.label) if limited and held is None and not is_protocol_call(body, message) \
            else None
        taken = False

        async def admit() -> Refused | None:
            nonlocal taken
            assert key is not None
            started = time.monotonic()
            taken = await self.calls.take(key)
            if taken:
                return None
            return too_many(self.limits.max_concurrent_per_client, self.limits.queue_per_client,
                            time.monotonic() - started)

        try:
            await answer_while_connected(self.app, scope, body, receive, send, admit if key is not None else None)
        finally:
            if taken and key is not None:
                self.calls.give_back(key)
            self._release_unauthenticated(held)

    def _body_time(self, scope: Scope) -> float:
        """What is left of the request's time: the head and the body share one deadline (set
        when the connection opened or its last answer ended), so a request trickled byte by
        byte is cut after --read-timeout in all, not after a head's and a body's worth."""
        deadline = scope.get(DEADLINE)
        if deadline is None:
            return self.limits.read_timeout
        return max(0.0, min(self.limits.read_timeout, float(deadline) - time.monotonic()))

    def _unauthenticated(self, scope: Scope) -> bool:
        """Authentication is on and this request carries no valid token (it will get 401)."""
        return self.label is not None and getattr(scope.get("user"), "access_token", None) is None

    def _admit_unauthenticated(self, address: str) -> str:
        if not self.unauthenticated_rate.spend(address):
            wait = self.unauthenticated_rate.wait_s(address)
            raise too_many_unauthenticated(address, self.limits.max_unauthenticated_per_address,
                                           self.limits.unauthenticated_rate, max(1, math.ceil(wait)))
        if not self.unauthenticated.try_take(address):
            raise too_many_unauthenticated(address, self.limits.max_unauthenticated_per_address,
                                           self.limits.unauthenticated_rate, RETRY_AFTER_S)
        return address

    def _release_unauthenticated(self, address: str | None) -> None:
        if address is not None:
            self.unauthenticated.give_back(address)
