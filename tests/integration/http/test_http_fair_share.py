"""Issue 23, class 3, in process: the queue past a client's cap, the rate per address, which
messages count as calls, and the connection ledger's share per address."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.mcp.http.calls import PROTOCOL_METHODS, is_protocol_call
from book_agent.mcp.http.connections import FULL, PAST_ADDRESS_CAP, ConnectionLedger
from book_agent.mcp.http.limits import HttpLimits
from book_agent.mcp.http.slots import RateBuckets, Slots


def message(method: str | None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"jsonrpc": "2.0", **extra}
    if method is not None:
        found["method"] = method
    return found


@pytest.mark.parametrize("method", sorted(PROTOCOL_METHODS) + ["notifications/initialized",
                                                               "notifications/cancelled"])
def test_protocol_messages_count_toward_nothing(method: str) -> None:
    assert is_protocol_call(json.dumps(message(method, id=1, params={})).encode())
    assert is_protocol_call(json.dumps([message(method, id=1), message("ping", id=2)]).encode())


@pytest.mark.parametrize("body", [
    message("tools/call", id=1, params={"name": "search", "arguments": {"query": "river"}}),
    message("resources/read", id=1, params={"uri": "book://library/books"}),
    message("prompts/get", id=1), message("completion/complete", id=1), message("TOOLS/LIST", id=1),
    [message("ping", id=1), message("tools/call", id=2)], [], {}, 42, "initialize", message(None, id=1),
])
def test_everything_else_is_a_call(body: Any) -> None:
    assert not is_protocol_call(json.dumps(body).encode())


def test_junk_and_long_bodies_are_calls() -> None:
    for junk in (b"", b"not json", b"[" * 100_000, b'{"method": 5}', b"\xff\xfe"):
        assert not is_protocol_call(junk)
    padded = json.dumps(message("ping", id=1, params={"pad": "x" * (70 << 10)})).encode()
    assert not is_protocol_call(padded)  # past 64 KiB a body is not parsed: a call


def test_an_answer_to_the_server_is_protocol() -> None:
    assert is_protocol_call(json.dumps({"jsonrpc": "2.0", "id": 7, "result": {}}).encode())
    assert is_protocol_call(json.dumps({"jsonrpc": "2.0", "id": 7, "error": {"code": 1}}).encode())


@pytest.mark.parametrize("bad", [{"queue_per_client": -1}, {"queue_wait": 601.0}, {"queue_wait": float("inf")},
                                 {"max_connections_per_address": 0}, {"max_unauthenticated_per_address": 0},
                                 {"unauthenticated_rate": 0.0}, {"queue_per_client": True}])
def test_the_new_limits_are_bounded(bad: dict[str, Any]) -> None:
    from book_agent.domain.errors import BookAgentError

    with pytest.raises(BookAgentError) as info:
        HttpLimits(**bad).checked()
    assert info.value.code == "http.bad_limit"
    assert HttpLimits().checked().queue_per_client == 32


def test_a_burst_is_served_in_order_within_the_queue() -> None:
    async def run() -> tuple[list[int], list[bool]]:
        slots = Slots(cap=2, queue_length=3, wait=5)
        order: list[int] = []
        admitted: list[bool] = [False] * 7

        async def caller(i: int) -> None:
            admitted[i] = await slots.take("k")
            if admitted[i]:
                order.append(i)
                await anyio.sleep(0.02)
                slots.give_back("k")

        async with anyio.create_task_group() as group:
            for i in range(7):
                group.start_soon(caller, i)
                await anyio.sleep(0)  # arrive in order
        assert slots.running == {} and slots.queues == {}
        return order, admitted

    order, admitted = anyio.run(run)
    assert admitted == [True] * 5 + [False] * 2  # two running, three queued, two refused at once
    assert order == [0, 1, 2, 3, 4]  # FIFO: the queue is served oldest first


def test_a_queued_caller_gives_up_after_its_wait_and_leaves_no_trace() -> None:
    async def run() -> None:
        slots = Slots(cap=1, queue_length=4, wait=0.05)
        assert await slots.take("k")
        started = anyio.current_time()
        assert not await slots.take("k")  # the holder never lets go: the wait runs out
        assert anyio.current_time() - started >= 0.05
        assert slots.queues == {} and slots.running == {"k": 1}
        with anyio.move_on_after(0.01):  # a caller cancelled while waiting (its client went away)
            await slots.take("k")
        assert slots.queues == {}
        slots.give_back("k")
        assert slots.running == {}

    anyio.run(run)


@settings(max_examples=60, deadline=None)
@given(cap=st.integers(1, 3), queue=st.integers(0, 3),
       plan=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["hold", "quit", "cancel"])), max_size=12))
def test_slots_never_exceed_cap_or_queue_and_always_drain(cap: int, queue: int,
                                                          plan: list[tuple[int, str]]) -> None:
    """Random callers on three keys: some hold their slot a moment, some are cancelled while
    waiting. At every step no key runs more than `cap` or queues more than `queue`; at the end
    nothing is held or queued."""
    async def run() -> None:
        slots = Slots(cap, queue, wait=0.2)
        worst: dict[str, int] = {}

        def check() -> None:
            for key, running in slots.running.items():
                assert running <= cap
                worst[key] = max(worst.get(key, 0), running)
            for waiting in slots.queues.values():
                assert len(waiting) <= queue

        async def caller(key: str, how: str) -> None:
            with anyio.move_on_after(0.01 if how == "cancel" else 10):
                if await slots.take(key):
                    check()
                    try:
                        await anyio.sleep(0.005 if how == "hold" else 0)
                    finally:
                        slots.give_back(key)
            check()

        async with anyio.create_task_group() as group:
            for key, how in plan:
                group.start_soon(caller, f"k{key}", how)
        assert slots.running == {} and slots.queues == {}

    anyio.run(run)


def test_the_rate_per_key_refills_and_forgets() -> None:
    now = [0.0]
    buckets = RateBuckets(rate=2, burst=4, clock=lambda: now[0])
    assert [buckets.spend("a") for _ in range(5)] == [True] * 4 + [False]
    assert buckets.spend("b")  # another key has its own bucket
    assert 0 < buckets.wait_s("a") <= 0.5
    now[0] += 0.5
    assert buckets.spend("a") and not buckets.spend("a")
    now[0] += 100
    buckets.FORGET_AT = 1  # type: ignore[misc]
    buckets.spend("c")
    assert set(buckets.buckets) == {"c"}  # a and b are full again: forgotten


class FakeConnection:
    def __init__(self, idle: bool = True) -> None:
        self.idle = idle
        self.closed = False
        self.transport = self

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def idle(connection: FakeConnection) -> bool:
    return connection.idle


def test_an_address_past_its_share_is_refused_and_others_are_not() -> None:
    ledger = ConnectionLedger(per_address=3, everyone=100)
    held = [FakeConnection() for _ in range(3)]
    assert [ledger.admit(c, "10.0.0.2", i + 1, idle) for i, c in enumerate(held)] == [None] * 3
    assert ledger.admit(FakeConnection(), "10.0.0.2", 4, idle) == PAST_ADDRESS_CAP
    assert ledger.admit(FakeConnection(), "10.0.0.3", 4, idle) is None
    for c in held:
        ledger.leave(c, "10.0.0.2")
    assert "10.0.0.2" not in ledger.held
    assert ledger.admit(FakeConnection(), "10.0.0.2", 2, idle) is None


def test_at_the_cap_an_idle_connection_of_the_biggest_holder_makes_room() -> None:
    ledger = ConnectionLedger(per_address=10, everyone=6)
    busy = [FakeConnection(idle=False) for _ in range(2)]
    spare = [FakeConnection() for _ in range(2)]
    other = FakeConnection()
    for i, c in enumerate(busy + spare):
        ledger.admit(c, "10.0.0.2", i + 1, idle)
    ledger.admit(other, "10.0.0.4", 5, idle)
    newcomer = FakeConnection()
    assert ledger.admit(newcomer, "10.0.0.3", 6, idle) is None
    assert [c.closed for c in busy] == [False, False]  # a connection doing work is kept
    assert sum(c.closed for c in spare) == 1 and not other.closed and not newcomer.closed


def test_at_the_cap_an_unauthenticated_connection_goes_before_an_idle_one() -> None:
    ledger = ConnectionLedger(per_address=10, everyone=6)
    spare = [FakeConnection() for _ in range(3)]  # the biggest holder, idle, with a valid token
    guessing = [FakeConnection(idle=False) for _ in range(2)]  # busy being refused 401/429
    for i, c in enumerate(spare):
        ledger.admit(c, "10.0.0.2", i + 1, idle)
        ledger.mark(c, authenticated=True)
    for i, c in enumerate(guessing):
        ledger.admit(c, "10.0.0.3", 4 + i, idle)
        ledger.mark(c, authenticated=False)
    assert ledger.admit(FakeConnection(), "10.0.0.4", 6, idle) is None
    assert sum(c.closed for c in guessing) == 1 and not any(c.closed for c in spare)
    left = next(c for c in guessing if not c.closed)
    ledger.mark(left, authenticated=True)  # a later request with a valid token: work like any
    assert ledger.admit(FakeConnection(), "10.0.0.5", 6, idle) is None
    assert not left.closed and sum(c.closed for c in spare) == 1


def test_at_the_cap_with_nobody_holding_more_the_newcomer_is_refused_and_not_counted() -> None:
    ledger = ConnectionLedger(per_address=10, everyone=5)  # reaching the cap counts as at it (as uvicorn's did)
    pairs = [(FakeConnection(), f"10.0.0.{i}") for i in range(2, 6)]
    for n, (c, address) in enumerate(pairs):
        assert ledger.admit(c, address, n + 1, lambda c: True) is None
    newcomer = FakeConnection()
    assert ledger.admit(newcomer, "10.0.0.9", 5, lambda c: True) == FULL
    assert not any(c.closed for c, _ in pairs) and "10.0.0.9" not in ledger.held


def test_one_address_past_the_cap_for_everyone_cannot_push_out_a_newcomer_it_made_room_for() -> None:
    ledger = ConnectionLedger(per_address=100, everyone=12)
    flood = [FakeConnection() for _ in range(11)]
    assert [ledger.admit(c, "10.0.0.2", i + 1, idle) for i, c in enumerate(flood)] == [None] * 11
    assert ledger.admit(FakeConnection(), "10.0.0.2", 12, idle) == FULL  # its own newcomers: refused
    newcomer = FakeConnection(idle=False)
    assert ledger.admit(newcomer, "10.0.0.3", 12, idle) is None  # room made from the flood
    assert sum(c.closed for c in flood) == 1
    assert ledger.admit(FakeConnection(), "10.0.0.2", 12, idle) == FULL  # the flood reconnecting: refused
    assert not newcomer.closed


class Cycle:
    def __init__(self, more_body: bool, started: bool, complete: bool) -> None:
        self.more_body, self.response_started, self.response_complete = more_body, started, complete


@pytest.mark.parametrize(("cycle", "evictable"), [
    (None, True),                                         # no request yet (a head still arriving)
    (Cycle(more_body=True, started=False, complete=False), True),   # a body still arriving
    (Cycle(more_body=False, started=False, complete=False), False),  # read whole: the app works on it
    (Cycle(more_body=False, started=True, complete=False), False),   # being answered
    (Cycle(more_body=False, started=True, complete=True), True),     # answered: idle keep-alive
])
def test_a_connection_is_evictable_when_it_does_no_work(cycle: Cycle | None, evictable: bool) -> None:
    from book_agent.mcp.http.uvicorn_run import _evictable

    connection = FakeConnection()
    connection.cycle = cycle  # type: ignore[attr-defined]
    assert _evictable(connection) is evictable
    connection.close()
    assert _evictable(connection) is False  # closing already


def test_the_body_gets_what_is_left_of_the_requests_time() -> None:
    import time

    from book_agent.mcp.http.limits import RequestLimits
    from book_agent.mcp.http.refusals import DEADLINE

    limits = RequestLimits(app=None, limits=HttpLimits(read_timeout=15))  # type: ignore[arg-type]
    assert limits._body_time({}) == 15
    assert limits._body_time({DEADLINE: time.monotonic() - 1}) == 0  # the head used it all: 408 at once
    assert 0 < limits._body_time({DEADLINE: time.monotonic() + 5}) <= 5
    assert limits._body_time({DEADLINE: time.monotonic() + 100}) == 15


def test_a_request_past_its_deadline_gets_408_without_waiting_for_its_body() -> None:
    import time

    from book_agent.mcp.http.limits import RequestLimits
    from book_agent.mcp.http.refusals import DEADLINE

    sent: list[dict[str, Any]] = []

    async def never(*_: Any) -> None:
        raise AssertionError("the app must not run")

    async def receive() -> dict[str, Any]:
        await anyio.sleep_forever()  # a body that never comes
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def run() -> None:
        scope = {"type": "http", "path": "/mcp", "headers": [(b"content-length", b"10")], DEADLINE: time.monotonic()}
        await RequestLimits(never, HttpLimits(read_timeout=600))(scope, receive, send)

    anyio.run(run)
    assert sent[0]["status"] == 408
