"""Whose calls a request's are, and which messages count as calls.

A client is its token (by its log label) or, without one, its address. Protocol messages
(`initialize`, `ping`, the lists, notifications, answers to the server) count toward no
client's cap (book_agent/mcp/http/limits.py): they cost little, and an agent cannot start without them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from book_agent.mcp.http.refusals import Scope

PROTOCOL_METHODS = frozenset({"initialize", "ping", "tools/list", "resources/list", "resources/templates/list",
                              "prompts/list", "logging/setLevel"})
CLASSIFIED_BODY_BYTES = 64 << 10  # a longer body is a call (protocol messages are a few hundred bytes)


def client_key(scope: Scope, label: Callable[[Any], str] | None) -> str:
    """Whose calls these are: the token (by its log label), else the client's address (as
    uvicorn reports it: a trusted local proxy's X-Forwarded-For counts)."""
    access = getattr(scope.get("user"), "access_token", None)
    if access is not None and label is not None:
        return "token:" + label(access)
    return "address:" + client_address(scope)


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


UNREADABLE: Any = object()  # a body that is not JSON (the endpoint answers it a parse error)


def read_message(body: bytes) -> Any:
    """The body as JSON, or UNREADABLE. Parsed once per request (RequestLimits keeps it in the
    scope, under MESSAGE, for the access log): a search's body carries its query vector, and
    decoding 384 numbers is ~0.1 ms, which each reading paid again."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return UNREADABLE


def is_protocol_call(body: bytes, message: Any = None) -> bool:
    """True for the protocol's own messages (initialize, ping, the lists, notifications,
    answers to the server; a batch of only those), which count toward no cap. `message`: the
    body as read_message read it already, if it was."""
    if len(body) > CLASSIFIED_BODY_BYTES:
        return False
    message = read_message(body) if message is None else message
    if message is UNREADABLE:
        return False
    messages = message if isinstance(message, list) and message else [message]
    return all(isinstance(m, dict) and _protocol_message(m) for m in messages)


def _protocol_message(message: dict[str, Any]) -> bool:
    method = message.get("method")
    if method is None:
        return "result" in message or "error" in message  # an answer to the server's request
    return isinstance(method, str) and (method in PROTOCOL_METHODS or method.startswith("notifications/"))
