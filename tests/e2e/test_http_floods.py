"""Floods that must not deny others (issue 44, class 4), on real `serve` processes over loopback.

Attackers bind their ends to their own loopback addresses (127.0.0.x), each within its
per-address cap, together past the cap for everyone; a token holder at another address must
keep being served: every one of its requests answered 200. Before, slow bodies from 6 addresses
x 8 sockets got every legitimate request a 503 (half-sent requests were never closed to make
room), and 96 unauthenticated clients at one address let 6 of 20 through."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.http_serve import (
    Served,
    bearer_headers,
    client_from,
    connect,
    head,
    pdf_book_data_dir,
    serving,
    token_file,
)

LEGIT, INSIDER = "flood-legit-token-1", "flood-insider-token-2"
SEARCH = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "search", "arguments": {"query": "water ground"}}}).encode()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pdf_book_data_dir(tmp_path_factory.mktemp("floods"))


@pytest.fixture(scope="module")
def capped(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """At most 24 connections for everyone and 8 per address: 6 addresses x 8 are twice the cap."""
    logs = tmp_path_factory.mktemp("capped")
    with serving(library, logs, "--token-file", str(token_file(logs, LEGIT, INSIDER)), "--max-connections", "24",
                 "--max-connections-per-address", "8", "--read-timeout", "20",
                 secrets=(LEGIT, INSIDER)) as served:
        yield served


class Flood:
    """Attackers on their own threads until stopped; each socket reconnects when closed."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=(self.stop, *args), daemon=True)  # type: ignore[arg-type]
        thread.start()
        self.threads.append(thread)

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


def trickle(stop: threading.Event, port: int, source: str, token: str | None, body: bool) -> None:
    """A request sent a byte every 0.2 s (its head, or a whole head and then its body)."""
    while not stop.is_set():
        try:
            sock = connect(port, timeout=5, source=source)
        except OSError:
            time.sleep(0.1)
            continue
        with sock:
            try:
                pending = head(port, 2048, token)
                if body:
                    sock.sendall(pending)
                    pending = b"{" + b" " * 2047
                for i in range(len(pending)):
                    if stop.wait(0.2):
                        return
                    sock.sendall(pending[i:i + 1])
            except OSError:
                continue  # closed to make room, or refused: start again


def guess(stop: threading.Event, port: int, source: str) -> None:
    """Requests without a token, back to back on one keep-alive connection."""
    with client_from(source, timeout=10) as client:
        while not stop.is_set():
            try:
                client.post(f"http://127.0.0.1:{port}/mcp", content=SEARCH, headers=bearer_headers(None))
            except httpx.HTTPError:
                stop.wait(0.05)


def legitimate(served: Served, count: int = 10) -> list[int | str]:
    """A token holder at 127.0.0.100 arriving `count` times on a new connection each time."""
    outcomes: list[int | str] = []
    for _ in range(count):
        try:
            with client_from("127.0.0.100", timeout=30) as client:
                outcomes.append(client.post(served.base + "/mcp", content=SEARCH,
                                            headers=bearer_headers(LEGIT)).status_code)
        except httpx.HTTPError as exc:
            outcomes.append(type(exc).__name__)
        time.sleep(0.2)
    return outcomes


@pytest.mark.parametrize(("token", "body"), [(None, False), (None, True), (INSIDER, True)],
                         ids=["slow heads", "slow bodies", "slow bodies with a valid token"])
def test_slow_requests_from_six_addresses_leave_a_token_holder_served(capped: Served, token: str | None,
                                                                     body: bool) -> None:
    flood = Flood()
    try:
        for address in range(6):
            for _ in range(8):
                flood.start(trickle, capped.port, f"127.0.0.{40 + address}", token, body)
        time.sleep(2)  # every attacker socket is open before the first legitimate request
        assert legitimate(capped) == [200] * 10
    finally:
        flood.end()


def test_ninety_six_unauthenticated_clients_leave_a_token_holder_served(capped: Served) -> None:
    flood = Flood()
    try:
        for _ in range(96):
            flood.start(guess, capped.port, "127.0.0.50")
        time.sleep(2)
        assert legitimate(capped) == [200] * 10
    finally:
        flood.end()


def test_at_the_cap_with_nobody_holding_more_a_newcomer_is_told_503_server_busy(capped: Served) -> None:
    held = [connect(capped.port, timeout=30, source=f"127.0.0.{61 + i}") for i in range(24)]  # one each
    try:
        time.sleep(0.5)
        late = socket.create_connection(("127.0.0.1", capped.port), timeout=10, source_address=("127.0.0.90", 0))
        with late:  # nobody holds more than the newcomer's address: none is closed for it
            late.sendall(head(capped.port, 2) + b"{}")
            answer = b""
            while chunk := late.recv(65536):  # the server closes it after the answer
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 503") or answer == b""  # refused (or closed past its 2 s)
        if answer:
            assert b"http.server_busy" in answer and b"retry-after: 1" in answer.lower()
    finally:
        for sock in held:
            sock.close()
