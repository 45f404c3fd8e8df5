"""Issue 23, class 3 (one client can deny everyone), on real `serve` processes over loopback.

Several clients are told apart by their source address: each binds its end of the connection
to its own loopback address (127.0.0.2, 127.0.0.3, ...; Linux routes all of 127/8 to lo).

- idle connections from one address past `--max-connections` no longer lock everyone out: past
  its own cap they are refused (429 `http.too_many_connections`), and at the cap for everyone an
  idle one of the biggest holder makes room;
- requests without a valid token are capped per address, in flight and per second, and leave
  other addresses (and the same address's valid token) served;
- protocol calls (initialize, ping, tools/list, notifications) pass while a token's cap is full,
  a burst of calls past the cap waits in the queue and is served, and past the queue comes 429
  with Retry-After.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http_serve import (
    MCP_HEADERS,
    Served,
    bearer_headers,
    client_from,
    connect,
    head,
    pdf_book_data_dir,
    read_response,
    rpc_body,
    serving,
    sse_result,
    token_file,
)

TEAM, OTHER = "fair-team-token-1", "fair-other-token-2"


def bearer(token: str | None = TEAM) -> dict[str, str]:
    return bearer_headers(token)


def rpc(method: str, params: dict[str, Any] | None = None, ident: int | None = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if ident is not None:
        message["id"] = ident
    return json.dumps(message).encode()


INITIALIZE = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "fair-share", "version": "1"}})


def render(dpi: int) -> bytes:
    """A render at a dpi not asked before (none is cached): a call that takes a while."""
    return rpc_body("render_page", {"book_id": "pdf-book", "page_index": 1, "dpi": dpi})


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pdf_book_data_dir(tmp_path_factory.mktemp("fair"))


@pytest.fixture(scope="module")
def guarded(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A token file, at most 12 connections for everyone and 4 per address, 2 requests without
    a valid token in flight per address and 2 a second (bursts of 4)."""
    logs = tmp_path_factory.mktemp("guarded")
    with serving(library, logs, "--token-file", str(token_file(logs, TEAM, OTHER)), "--max-connections", "12",
                 "--max-connections-per-address", "4", "--max-unauthenticated-per-address", "2",
                 "--unauthenticated-rate", "2", "--read-timeout", "30", secrets=(TEAM, OTHER)) as served:
        yield served


def hold_idle(port: int, source: str, count: int) -> list[socket.socket]:
    """`count` connections from `source` that send nothing (as an idle keep-alive pool would)."""
    return [connect(port, timeout=30, source=source) for _ in range(count)]


def closed_or_refused(sock: socket.socket, port: int) -> tuple[int, str] | None:
    """What a request on `sock` gets: (status, error code), or None when the server closed it."""
    body = rpc("ping")
    try:
        sock.sendall(head(port, len(body), TEAM) + body)
        status, _, answer = read_response(sock)
    except (ConnectionError, OSError):
        return None
    return status, json.loads(answer)["error"]["code"] if answer.startswith(b"{\"error\"") else ""


def served_from(served: Served, source: str, token: str | None = TEAM) -> int:
    with client_from(source) as client:
        return client.post(served.base + "/mcp", content=rpc("ping"), headers=bearer(token)).status_code


def settle(served: Served, source: str, held: list[socket.socket]) -> None:
    """Wait until the server has taken every held connection (one request from `source` after them)."""
    with client_from(source) as client:
        client.get(served.base + "/health")
    time.sleep(0.3)


def test_idle_connections_past_the_cap_from_one_address_leave_others_served(guarded: Served) -> None:
    held = hold_idle(guarded.port, "127.0.0.2", 14)  # more than --max-connections (12) from one address
    try:
        settle(guarded, "127.0.0.9", held)
        assert served_from(guarded, "127.0.0.3") == 200  # before: 503 for everyone, before authentication
        assert served_from(guarded, "127.0.0.3", OTHER) == 200
        answers = [closed_or_refused(sock, guarded.port) for sock in held]
        served = [a for a in answers if a is not None and a[0] == 200]
        refused = [a for a in answers if a is not None and a[0] == 429]
        assert len(served) == 4  # the address's own four connections serve it as before
        # the others: answered 429 (or, past their short head deadline, closed unanswered)
        assert {code for _, code in refused} <= {"http.too_many_connections"}
        assert len(served) + len(refused) + answers.count(None) == 14
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert served_from(guarded, "127.0.0.2") == 200  # the address itself recovers once it lets go


def test_a_refused_connection_says_why_and_is_closed(guarded: Served) -> None:
    held = hold_idle(guarded.port, "127.0.0.4", 4)
    try:
        settle(guarded, "127.0.0.9", held)
        with connect(guarded.port, source="127.0.0.4") as fifth:
            body = rpc("ping")
            fifth.sendall(head(guarded.port, len(body), TEAM) + body)
            status, headers, answer = read_response(fifth)
            error = json.loads(answer)["error"]
            assert status == 429 and headers["retry-after"] == "1" and headers.get("connection") == "close"
            assert error["code"] == "http.too_many_connections" and error["details"]["limit"] == 4
            assert "--max-connections-per-address" in error["remediation"]
            assert fifth.recv(100) == b""  # and the connection is closed
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    logged = [json.loads(line) for line in guarded.output().splitlines() if line.startswith("{")]
    assert any(line["error"] == "http.too_many_connections" and line["client"] == "127.0.0.4" for line in logged)


def test_at_the_cap_for_everyone_an_idle_connection_of_the_biggest_holder_makes_room(guarded: Served) -> None:
    # 4 + 4 + 3 = 11 idle connections from three addresses, each within its own cap of 4
    held = {source: hold_idle(guarded.port, source, n)
            for source, n in (("127.0.0.5", 4), ("127.0.0.6", 4), ("127.0.0.7", 3))}
    try:
        time.sleep(0.5)
        # the 12th connection reaches --max-connections: before, 503 (uvicorn counts idle ones)
        assert served_from(guarded, "127.0.0.8") == 200
        closed = 0
        for sock in held["127.0.0.5"] + held["127.0.0.6"]:
            readable, _, _ = select.select([sock], [], [], 0)
            closed += bool(readable) and sock.recv(1) == b""
        assert closed >= 1  # room was made by closing an idle connection of a biggest holder
        assert all(closed_or_refused(sock, guarded.port) == (200, "") for sock in held["127.0.0.7"])
    finally:
        for socks in held.values():
            for sock in socks:
                sock.close()


def test_requests_without_a_valid_token_are_capped_per_address(guarded: Served) -> None:
    body = rpc("tools/call", {"name": "list_books", "arguments": {}})
    held = []
    for _ in range(2):  # two requests with a wrong token in flight: heads sent, bodies held back
        sock = connect(guarded.port, timeout=30, source="127.0.0.10")
        sock.sendall(head(guarded.port, len(body), "wrong-token") + body[:5])
        held.append(sock)
    try:
        time.sleep(0.5)
        with client_from("127.0.0.10") as client:
            third = client.post(guarded.base + "/mcp", content=body, headers=bearer("wrong-token"))
            assert third.status_code == 429 and int(third.headers["retry-after"]) >= 1
            assert third.json()["error"]["code"] == "http.too_many_unauthenticated"
            assert "wrong-token" not in third.text
            # the same address with a valid token is not held to it
            assert client.post(guarded.base + "/mcp", content=body, headers=bearer()).status_code == 200
        with client_from("127.0.0.11") as client:  # another address is refused as usual: 401
            assert client.post(guarded.base + "/mcp", content=body, headers=bearer("wrong-token")).status_code == 401
        for sock in held:
            sock.sendall(body[5:])
            assert read_response(sock)[0] == 401
    finally:
        for sock in held:
            sock.close()


def test_requests_without_a_valid_token_are_limited_per_second_per_address(guarded: Served) -> None:
    with client_from("127.0.0.12") as flood:
        statuses = [flood.post(guarded.base + "/mcp", content=rpc("ping"), headers=bearer(f"guess-{i}"))
                    for i in range(12)]
        codes = [r.status_code for r in statuses]
        assert set(codes) == {401, 429} and codes[:4] == [401] * 4  # a burst of twice the rate, then 429
        limited = next(r for r in statuses if r.status_code == 429)
        assert int(limited.headers["retry-after"]) >= 1
        assert limited.json()["error"]["code"] == "http.too_many_unauthenticated"
        assert flood.post(guarded.base + "/mcp", content=rpc("ping"), headers=bearer()).status_code == 200
    assert served_from(guarded, "127.0.0.13", "another-guess") == 401  # other addresses: unaffected
    time.sleep(2.5)  # the bucket refills
    assert served_from(guarded, "127.0.0.12", "late-guess") == 401


@pytest.fixture(scope="module")
def strict(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """No authentication (calls counted per address), one call in flight, no queue; at most 16
    connections for everyone, and the per-address cap left at its default (128: it never binds)."""
    with serving(library, tmp_path_factory.mktemp("strict"), "--max-concurrent-per-client", "1",
                 "--queue-per-client", "0", "--max-connections", "16", "--access-log",
                 str(tmp_path_factory.mktemp("strict-log") / "access.log")) as served:
        yield served


@pytest.fixture(scope="module")
def queued(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One call in flight per client, eight more waiting for up to a minute."""
    with serving(library, tmp_path_factory.mktemp("queued"), "--max-concurrent-per-client", "1",
                 "--queue-per-client", "8", "--queue-wait", "60") as served:
        yield served


def post_from(served: Served, source: str, body: bytes) -> httpx.Response:
    with client_from(source, timeout=120) as client:
        return client.post(served.base + "/mcp", content=body, headers=MCP_HEADERS)


def burst(served: Served, source: str, bodies: list[bytes]) -> list[tuple[int, dict[str, str], bytes]]:
    """Every request sent at once (connections opened first, then the requests back to back),
    then each answer read."""
    socks = [connect(served.port, timeout=120, source=source) for _ in bodies]
    try:
        for sock, body in zip(socks, bodies, strict=True):
            sock.sendall(head(served.port, len(body)) + body)
        return [read_response(sock) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def test_one_address_holding_more_idle_connections_than_everyone_may_leaves_others_served(strict: Served) -> None:
    held = hold_idle(strict.port, "127.0.0.30", 20)  # past --max-connections 16, within its own cap
    try:
        time.sleep(0.5)
        with client_from("127.0.0.31") as client:  # before: 503, the flood held every connection
            answer = client.post(strict.base + "/mcp", content=rpc_body("list_books", {}), headers=MCP_HEADERS)
            assert answer.status_code == 200
            assert sse_result(answer.content)["result"]["structuredContent"]["books"]
            assert client.get(strict.base + "/health").status_code == 200
        answers = [closed_or_refused(sock, strict.port) for sock in held]
        # past the cap its own newcomers were refused (503 http.server_busy, or closed past their
        # short head deadline), and an idle one made room for the other address
        assert sum(a is None or a == (503, "http.server_busy") for a in answers) >= 5, answers
    finally:
        for sock in held:
            sock.close()


def test_protocol_calls_pass_while_the_cap_is_full_and_calls_past_it_get_429(strict: Served) -> None:
    for attempt in range(5):  # a slow render holds the one slot; retried if it ends too soon
        sock = connect(strict.port, timeout=120, source="127.0.0.20")
        try:
            body = render(400 + 61 * attempt)  # ~4x the pixels of 200 dpi: outlasts the protocol calls on a busy machine
            sock.sendall(head(strict.port, len(body)) + body)
            deadline = time.monotonic() + 10
            while True:  # once the render holds the slot, another call is refused at once
                refused = post_from(strict, "127.0.0.20", rpc_body("list_books", {}))
                if refused.status_code == 429 or time.monotonic() > deadline:
                    break
            assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
            error = refused.json()["error"]
            assert error["code"] == "http.too_many_requests" and error["details"]["limit"] == 1
            assert error["details"]["queue"] == 0
            protocol = [post_from(strict, "127.0.0.20", body) for body in
                        (INITIALIZE, rpc("ping"), rpc("tools/list"), rpc("notifications/initialized", ident=None))]
            still_full = post_from(strict, "127.0.0.20", rpc_body("list_books", {})).status_code == 429
            other = post_from(strict, "127.0.0.21", rpc_body("list_books", {}))  # another client: its own cap
            status, _, answer = read_response(sock)
        finally:
            sock.close()
        assert status == 200 and sse_result(answer)["result"]["structuredContent"]["width_px"] > 0
        assert other.status_code == 200
        if still_full:  # the slot was held throughout: the protocol calls passed a full cap
            break
    assert still_full, "the render never outlasted the protocol calls"
    assert [r.status_code for r in protocol] == [200, 200, 200, 202]
    assert sse_result(protocol[0].content)["result"]["serverInfo"]
    assert {t["name"] for t in sse_result(protocol[2].content)["result"]["tools"]} >= {"search", "render_page"}


def test_without_a_queue_a_burst_of_calls_is_partly_refused(strict: Served) -> None:
    answers = burst(strict, "127.0.0.22", [render(dpi) for dpi in range(231, 239)])
    codes = [status for status, _, _ in answers]
    assert set(codes) == {200, 429} and codes.count(429) >= 4


def test_the_queue_smooths_a_burst_past_the_cap(queued: Served) -> None:
    started = time.monotonic()
    answers = burst(queued, "127.0.0.23", [render(dpi) for dpi in range(241, 248)])  # 1 runs, 6 wait
    assert [status for status, _, _ in answers] == [200] * 7, [body[:200] for _, _, body in answers]
    pages = [sse_result(body)["result"]["structuredContent"] for _, _, body in answers]
    assert all(p["page_index"] == 1 and p["width_px"] > 0 for p in pages)
    assert time.monotonic() - started < 60


def test_past_the_queue_comes_429_with_retry_after(queued: Served) -> None:
    # one running and eight waiting fill the queue; the rest of a burst of 14 is refused at once
    answers = burst(queued, "127.0.0.24", [render(dpi) for dpi in range(251, 265)])
    codes = [status for status, _, _ in answers]
    assert set(codes) == {200, 429} and codes.count(200) >= 9, codes
    for status, headers, body in answers:
        if status == 429:
            assert headers["retry-after"] == "1"
            error = json.loads(body)["error"]
            assert error["code"] == "http.too_many_requests"
            assert error["details"] == {"limit": 1, "queue": 8, "waited_s": 0.0, "retry_after_s": 1}
