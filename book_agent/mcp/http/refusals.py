"""What `serve`'s HTTP middleware shares: the ASGI types, the scope keys the access log reads,
and the refusals (status, coded error, headers), each answered as the same JSON as a CLI error:
`{"error": {code, message, details, remediation}}`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from book_agent.domain.errors import BookAgentError

RETRY_AFTER_S = 1

NOTE = "book_agent.note"  # scope key: what the access log reports about the request
BODY = "book_agent.body"  # scope key: the body as read (the access log reads the call from it)
MESSAGE = "book_agent.message"  # scope key: the body as JSON, read once (calls.read_message)
REFUSED = "book_agent.refused"  # scope key: a refusal decided before the request (its connection's)
DEADLINE = "book_agent.deadline"  # scope key: time.monotonic() by which the head and body must be in
MARK = "book_agent.mark"  # scope key: tells the connection's ledger whether the request had a valid token

Scope = MutableMapping[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

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

    def before(self, app: App) -> App:
        """`app`, told to refuse every request with this (RequestLimits answers it: the
        access log sees it as any other refusal)."""
        async def refusing(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                scope[REFUSED] = self
            await app(scope, receive, send)

        return refusing


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


def too_many(limit: int, queue: int, waited: float) -> Refused:
    return Refused(429, BookAgentError(
        "http.too_many_requests", f"this client already has {limit} calls in flight and {queue} waiting",
        details={"limit": limit, "queue": queue, "waited_s": round(waited, 3), "retry_after_s": RETRY_AFTER_S},
        remediation=f"wait for an answer before sending more (retry after {RETRY_AFTER_S} s); the server's "
                    "--max-concurrent-per-client, --queue-per-client and --queue-wait set the limit"),
        headers=[(b"retry-after", str(RETRY_AFTER_S).encode())])


def too_many_unauthenticated(address: str, in_flight: int, rate: float, retry_after: int) -> Refused:
    return Refused(429, BookAgentError(
        "http.too_many_unauthenticated",
        f"too many requests without a valid token from {address} (at most {in_flight} in flight, {rate:g} a second)",
        details={"limit_in_flight": in_flight, "rate_per_s": rate, "retry_after_s": retry_after},
        remediation=f"send a valid bearer token (Authorization: Bearer ...); retry after {retry_after} s"),
        headers=[(b"retry-after", str(retry_after).encode())])


def too_many_connections(limit: int) -> Refused:
    return Refused(429, BookAgentError(
        "http.too_many_connections", f"this client address already holds {limit} open connections",
        details={"limit": limit, "retry_after_s": RETRY_AFTER_S},
        remediation="reuse the connections already open (keep-alive), or close idle ones; behind a proxy, "
                    "raise the server's --max-connections-per-address"),
        headers=[(b"retry-after", str(RETRY_AFTER_S).encode()), (b"connection", b"close")])


def server_busy(limit: int) -> Refused:
    return Refused(503, BookAgentError(
        "http.server_busy", f"the server holds its {limit} connections, and none can be closed for this one",
        details={"limit": limit, "retry_after_s": RETRY_AFTER_S},
        remediation="retry in a moment; a server with many clients (or behind a proxy) may raise --max-connections"),
        headers=[(b"retry-after", str(RETRY_AFTER_S).encode()), (b"connection", b"close")])


async def respond(send: Send, refusal: Refused) -> None:
    body = json.dumps({"error": refusal.error.to_dict()}, ensure_ascii=False).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *refusal.headers]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


