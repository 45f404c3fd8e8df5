"""serve's limits and access log, in process: option bounds, what a request body says, who a client is."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.auth import DigestTokenVerifier, TokenEntry, digest_label, token_labeler
from book_agent.mcp.http.access_log import AccessLog, describe_call, error_code
from book_agent.mcp.http.calls import client_key
from book_agent.mcp.http.limits import HttpLimits, RequestLimits


def call(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


def test_the_defaults_hold_and_nonsense_is_refused() -> None:
    assert HttpLimits().checked().max_body_bytes == 1 << 20
    for bad in ({"max_body_bytes": 0}, {"max_concurrent_per_client": 0}, {"read_timeout": float("nan")},
                {"max_connections": -1}, {"shutdown_timeout": 1e9}):
        with pytest.raises(BookAgentError) as info:
            HttpLimits(**bad).checked()  # type: ignore[arg-type]
        assert info.value.code == "http.bad_limit"


def test_a_call_is_described_without_its_junk() -> None:
    assert describe_call(call("search", {"query": "river", "books": ["a", "b", 3]})) == {
        "rpc": "tools/call", "tool": "search", "books": ["a", "b"], "query": "river"}
    assert describe_call(call("locate_source", {"book_id": "a", "quote": "q"}))["query"] == "q"
    assert describe_call(call("x" * 500, {}))["tool"] == "x" * 100
    assert describe_call(b'{"jsonrpc": "2.0", "method": "ping", "id": 1}') == {"rpc": "ping"}
    for junk in (b"", b"not json", b"[" * 100_000, b"42", b'{"method": 5}'):
        assert describe_call(junk).get("tool") is None
    assert describe_call(b"[{}, {}]") == {"rpc": "(batch)"}


def test_a_client_is_its_token_label_else_its_address() -> None:
    digest = hashlib.sha256(b"team-token").hexdigest()
    verifier = DigestTokenVerifier([TokenEntry(digest, None)])
    access = asyncio.run(verifier.verify_token("team-token"))
    label = token_labeler(verifier)
    assert label(access) == digest_label(digest) == hashlib.sha256(digest.encode()).hexdigest()[:8]
    assert digest[:8] not in access.client_id  # neither the digest nor the token shows

    class User:
        access_token = access

    assert client_key({"user": User(), "client": ("10.0.0.1", 5)}, label) == "token:" + digest_label(digest)
    assert client_key({"client": ("10.0.0.1", 5)}, label) == "address:10.0.0.1"

    class Jwt:
        client_id, claims = "app", {"iss": "https://idp", "sub": "alice"}

    assert token_labeler(object())(Jwt()) == hashlib.sha256(b"https://idp alice").hexdigest()[:8]


def test_a_tool_error_code_is_found_in_its_text() -> None:
    from book_agent.mcp.errors import error_result, unknown_tool

    assert error_code(error_result(unknown_tool("x", []))) == "mcp.unknown_tool"


def run_asgi(app: Any, scope: dict[str, Any], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop(0)
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def scope(**headers: str) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/mcp", "client": ("127.0.0.1", 1),
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}


def test_limits_and_log_together_in_process() -> None:
    lines: list[str] = []
    seen: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    limits = HttpLimits(max_body_bytes=2048, max_concurrent_per_client=1, read_timeout=0.2)
    stack = AccessLog(RequestLimits(app, limits), lines.append)
    body = call("search", {"query": "secret words", "book_id": "b"})
    sent = run_asgi(stack, scope(content_length=str(len(body))), [
        {"type": "http.request", "body": body[:10], "more_body": True},
        {"type": "http.request", "body": body[10:], "more_body": False}])
    assert seen == [body] and sent[0]["status"] == 200  # the body, read whole, reaches the app unchanged
    sent = run_asgi(stack, scope(content_length="4096"), [])
    assert sent[0]["status"] == 413
    sent = run_asgi(stack, scope(), [{"type": "http.request", "body": b"x" * 100, "more_body": True}])
    assert sent[0]["status"] == 408 and (b"connection", b"close") in sent[0]["headers"]
    logged = [json.loads(line) for line in lines]
    assert [(line["status"], line["error"]) for line in logged] == [
        (200, None), (413, "http.body_too_large"), (408, "http.body_timeout")]
    assert logged[0]["books"] == ["b"] and "query" not in logged[0] and "secret" not in "".join(lines)


def test_a_second_call_in_flight_gets_429_and_is_logged() -> None:
    lines: list[str] = []
    release = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    stack = AccessLog(RequestLimits(app, HttpLimits(max_concurrent_per_client=1, queue_per_client=0)), lines.append)
    body = [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def both() -> list[list[dict[str, Any]]]:
        async def one(delay: float) -> list[dict[str, Any]]:
            await asyncio.sleep(delay)
            sent: list[dict[str, Any]] = []
            queue = list(body)

            async def receive() -> dict[str, Any]:
                if queue:
                    return queue.pop(0)
                await asyncio.sleep(3600)  # uvicorn: nothing more until the client leaves
                return {"type": "http.disconnect"}

            async def send(message: dict[str, Any]) -> None:
                sent.append(message)
                if message.get("status") == 429:
                    release.set()

            await stack(scope(), receive, send)
            return sent

        return list(await asyncio.gather(one(0), one(0.05)))

    first, second = asyncio.run(both())
    assert first[0]["status"] == 200 and second[0]["status"] == 429
    assert (b"retry-after", b"1") in second[0]["headers"]
    assert sorted(str(json.loads(line)["error"]) for line in lines) == ["None", "http.too_many_requests"]


def test_a_client_gone_mid_call_cancels_it_frees_its_slot_and_is_logged() -> None:
    lines: list[str] = []
    started, cancelled = asyncio.Event(), []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        started.set()
        try:
            await asyncio.sleep(3600)  # a long call, answered as one JSON message at its end
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    limits = RequestLimits(app, HttpLimits(max_concurrent_per_client=1))
    stack = AccessLog(limits, lines.append)

    async def gone() -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []
        queue = [{"type": "http.request", "body": b"{}", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if queue:
                return queue.pop(0)
            await started.wait()
            await asyncio.sleep(0.05)
            return {"type": "http.disconnect"}  # the client closed its connection

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await asyncio.wait_for(stack(scope(), receive, send), timeout=10)
        return sent

    assert asyncio.run(gone()) == [] and cancelled == [True]
    assert limits.calls.running == {} and limits.calls.queues == {}
    line = json.loads(lines[0])
    assert (line["status"], line["error"]) == (499, "http.client_gone")


def test_renders_run_one_at_a_time() -> None:
    """The global cap on renders: render_page runs on the work lane, which has one thread."""
    from book_agent.mcp.session import BookSession
    from book_agent.mcp.tools.table import TOOLS

    session = BookSession("any", agent=object())
    try:
        assert next(t.lane for t in TOOLS if t.name == "render_page") == "work" and session._lanes["work"]._max_workers == 1
    finally:
        session.close()


def test_a_request_body_is_read_as_json_once() -> None:
    """RequestLimits parses the body once and keeps it in the scope; the classification and the
    access log read that (a search's body carries its vector: each parse cost ~0.1 ms)."""
    from book_agent.mcp.http.calls import UNREADABLE, is_protocol_call, read_message
    from book_agent.mcp.http.refusals import BODY, MESSAGE

    body = call("search", {"query": "river", "query_vector": [0.5] * 384})
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.update(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return pending.pop() if pending else {"type": "http.disconnect"}

    async def send(_: Any) -> None:
        return None

    scope = {"type": "http", "path": "/mcp", "method": "POST", "headers": [], "client": ("127.0.0.1", 1)}
    asyncio.run(asyncio.wait_for(RequestLimits(app, HttpLimits().checked())(scope, receive, send), 30))
    assert seen[BODY] == body and seen[MESSAGE] == json.loads(body)
    # what was read is what the readers use: a message handed over is not parsed again
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert is_protocol_call(b"not json", ping) and not is_protocol_call(b'{"method": "ping"}', UNREADABLE)
    assert describe_call(b"not json", json.loads(body))["tool"] == "search"
    assert describe_call(body, UNREADABLE) == {} and read_message(b"[" * 100_000) is UNREADABLE
