"""Who holds `serve`'s connections: at most a share per client address, so one cannot deny everyone.

`ConnectionLedger` (consulted by book_agent/mcp/http/uvicorn_run.py's protocol as each connection opens) keeps
the cap for everyone (`--max-connections`) itself, by address, instead of leaving it to uvicorn
(whose 503 counted every open connection, idle and half-sent ones included, against one cap):

- **A cap per address.** A connection past `--max-connections-per-address` from one address
  (the TCP peer: a proxy's connections are the proxy's) does not count toward the cap for
  everyone; its first request is answered 429 `http.too_many_connections` with `Retry-After`
  and the connection closed, and its head must come within `OVER_CAP_HEAD_S` (else it is
  closed unanswered). The address's other connections are served as before.
- **Fair share at the cap for everyone.** When a new connection reaches `--max-connections`,
  connections that do no work for anyone are closed until there is room: from the addresses
  holding the most (more than the newcomer's address), an idle one, one whose request is still
  arriving (a half-sent head or body is no work done: slow heads and bodies used to be kept),
  or one whose last request carried no valid token (unauthenticated work yields to
  authenticated work: those go first). A connection whose request is read whole and carries a
  valid token (or any, without authentication) is never closed for another.
- **No room: the newcomer is refused**, not counted (503 `http.server_busy` on its first request,
  within `OVER_CAP_HEAD_S`, then closed), so a flood's own newcomers cannot push the count over
  the cap between an eviction and the request of the client it made room for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OVER_CAP_HEAD_S = 2.0  # a refused connection's request head must come this soon (it is only told 429/503)
LEDGER = "book_agent_connection_ledger"  # attribute of uvicorn's ServerState: one ledger per server
PAST_ADDRESS_CAP, FULL = "address", "full"  # why a connection is refused


class ConnectionLedger:
    """The open connections of one server, by client address."""

    def __init__(self, per_address: int, everyone: int) -> None:
        self.per_address = per_address
        self.everyone = everyone
        self.held: dict[str, set[Any]] = {}
        self.unauthenticated: set[Any] = set()  # connections whose last request had no valid token

    @classmethod
    def of(cls, server_state: Any, per_address: int, everyone: int) -> ConnectionLedger:
        ledger = getattr(server_state, LEDGER, None)
        if ledger is None:
            ledger = cls(per_address, everyone)
            setattr(server_state, LEDGER, ledger)
        return ledger

    def admit(self, connection: Any, address: str, counted: int, evictable: Callable[[Any], bool]) -> str | None:
        """Record `connection` (from `address`; `counted` connections are open, this one
        included). None: admitted; PAST_ADDRESS_CAP or FULL: refused (the caller answers and
        closes it, and it counts toward nobody's cap). At the cap for everyone, a connection
        doing no work for anyone, of an address holding more than this one's, is closed."""
        mine = self.held.setdefault(address, set())
        if len(mine) >= self.per_address:
            self._forget_empty(address)
            return PAST_ADDRESS_CAP
        mine.add(connection)
        if counted >= self.everyone and not self._make_room(address, counted, evictable):
            self.leave(connection, address)
            return FULL
        return None

    def mark(self, connection: Any, authenticated: bool) -> None:
        """What the connection's latest request carried: a valid token or not."""
        if authenticated:
            self.unauthenticated.discard(connection)
        else:
            self.unauthenticated.add(connection)

    def leave(self, connection: Any, address: str) -> None:
        self.unauthenticated.discard(connection)
        mine = self.held.get(address)
        if mine is not None:
            mine.discard(connection)
            self._forget_empty(address)

    def _forget_empty(self, address: str) -> None:
        if not self.held.get(address, True):
            del self.held[address]

    def _make_room(self, newcomer: str, counted: int, evictable: Callable[[Any], bool]) -> bool:
        """Close connections doing no work, of the biggest holders (each holding more than the
        newcomer's address; unauthenticated ones first), until the open connections are under
        the cap again. False when none is left to close."""
        share = len(self.held.get(newcomer, ()))
        while counted >= self.everyone:
            victim = self._victim(share, evictable)
            if victim is None:
                return False
            victim.transport.close()  # connection_lost removes it from uvicorn's set and from here
            counted -= 1
        return True

    def _victim(self, share: int, evictable: Callable[[Any], bool]) -> Any:
        best: tuple[bool, int] | None = None
        chosen = None
        for held in self.held.values():
            open_ones = [c for c in held if not c.transport.is_closing()]
            if len(open_ones) <= share:
                continue  # nobody is closed for a newcomer holding as much
            for connection in open_ones:
                unauthenticated = connection in self.unauthenticated
                if not (unauthenticated or evictable(connection)):
                    continue
                rank = (unauthenticated, len(open_ones))
                if best is None or rank > best:
                    best, chosen = rank, connection
        return chosen
