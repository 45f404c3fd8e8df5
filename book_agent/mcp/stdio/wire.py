"""One JSON-RPC message per line, checked both ways: every request is answered, every answer is written.

The MCP SDK's stdio transport parses a line with pydantic's JSON parser and, when that fails,
hands the exception to the session, which drops it (a debug log line): the client waits for
ever. That is what happened to a line that is not JSON, to `"jsonrpc": "1.0"`, and to a
request holding a lone UTF-16 surrogate escape (`"\\ud800"`), which that parser refuses as
invalid JSON although Python's json keeps it. On the way out, a message whose text holds a
lone surrogate has no UTF-8 form: the SDK's writer raised and the server stopped.

So here a line is parsed by Python's json, its lone surrogates kept, so the request reaches
the tools, where `ArgumentErrors` refuses such an argument with `mcp.bad_arguments`; a line
that is not JSON is answered -32700, one that is JSON but not a JSON-RPC 2.0 message -32600
(with its id when it has a usable one). An outgoing message that cannot be encoded has its
lone surrogates replaced by U+FFFD; one that still cannot becomes an internal error.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from book_agent.domain.unicode_text import has_lone_surrogate, needs_scrub, scrub, scrub_text

log = logging.getLogger("book_agent.mcp")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: Python's json would accept them


def _error(ident: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))


def _usable_id(message: Any) -> int | str | None:
    ident = message.get("id") if isinstance(message, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        return None
    return None if isinstance(ident, str) and has_lone_surrogate(ident) else ident


def read_line(line: str) -> tuple[types.JSONRPCMessage | None, types.JSONRPCError | None]:
    """(message, None) for a JSON-RPC message; (None, error reply) for anything else; (None, None) for a blank line."""
    if not line.strip():
        return None, None
    try:
        data = json.loads(line, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        return None, _error(None, types.PARSE_ERROR, "Parse error: the line is not a JSON document")
    try:
        message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except (ValidationError, RecursionError):
        message = None
    is_dict = isinstance(data, dict)
    if message is None and is_dict and "method" not in data and ("result" in data or "error" in data):
        log.warning("dropped a malformed response from the client")  # answering it could loop
        return None, None
    # an id that is not an integer or string (true, null, 1.5) would make a request pass as a
    # notification; one with a lone surrogate could not be echoed back as sent
    bad_id = is_dict and "method" in data and "id" in data and _usable_id(data) is None
    if message is None or bad_id:
        why = "Invalid Request: not a JSON-RPC 2.0 message (jsonrpc \"2.0\", a method or result, an integer or string id)"
        return None, _error(_usable_id(data), types.INVALID_REQUEST, why)
    return message, None


def too_long() -> types.JSONRPCError:
    return _error(None, types.INVALID_REQUEST, "Invalid Request: the line is too long to be a request of this server")


def _dump(message: types.JSONRPCMessage) -> str:
    return message.model_dump_json(by_alias=True, exclude_unset=True)


def encode(message: types.JSONRPCMessage) -> str:
    """The message as one line of JSON text that is valid UTF-8, whatever strings it holds."""
    try:
        return _dump(message)
    except (ValueError, UnicodeError):  # pydantic's serialization error is a ValueError
        pass
    try:
        data = message.model_dump(by_alias=True, exclude_unset=True, mode="json")
        data = scrub(data) if needs_scrub(data) else data
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
    except (ValueError, TypeError, UnicodeError, RecursionError):
        log.exception("an outgoing message could not be encoded")
    ident = getattr(message, "id", None)
    return _dump(_error(scrub_text(ident) if isinstance(ident, str) else ident, types.INTERNAL_ERROR, "the answer could not be encoded; see the server's log"))
