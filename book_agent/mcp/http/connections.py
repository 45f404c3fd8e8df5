"""Who holds `serve`'s connections: at most a share per client address, so one cannot deny everyone.

uvicorn counts every open connection, idle keep-alive ones included, against one cap for
everyone (`--max-connections`; past it, every request gets 503 before authentication). One
address holding that many idle connections would lock every other client out. So
(`ConnectionLedger`, consulted by book_agent/mcp/http/uvicorn_run.py's protocol as each connection opens):

- **A cap per address.** A connection past `--max-connections-per-address` from one address
  (the TCP peer: a proxy's connections are the proxy's) does not count toward the cap for
  everyone; its first request is answered 429 `http.too_many_connections` with `Retry-After`
  and the connection closed, and its head must come within `OVER_CAP_HEAD_S` (else it is
  closed unanswered). The address's other connections are served as before.
- **Fair share at the cap for everyone.** When a new connection reaches `--max-connections`,
  idle connections of the addresses holding the most (more than the newcomer's address) are
  closed until there is room, so neither one address nor many each under their own cap can
  starve a newcomer. A connection carrying a request is never closed for another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OVER_CAP_HEAD_S = 2.0  # a refused connection's request head must come this soon (it is only told 429)
LEDGER = "book_agent_connection_ledger"  # attribute of uvicorn's ServerState: one ledger per server


class ConnectionLedger:
    """The open connections of one server, by client address."""

    def __init__(self, per_address: int, everyone: int) -> None:
        self.per_address = per_address
        self.everyone = everyone
        self.held: dict[str, set[Any]] = {}

    @classmethod
    def of(cls, server_state: Any, per_address: int, everyone: int) -> ConnectionLedger:
        ledger = getattr(server_state, LEDGER, None)
        if ledger is None:
            ledger = cls(per_address, everyone)
            setattr(server_state, LEDGER, ledger)
        return ledger

    def admit(self, connection: Any, address: str, counted: int, is_idle: Callable[[Any], bool]) -> bool:
        """Record `connection` (from `address`; `counted` connections are open, this one
        included); False when the address is past its cap (the caller refuses it). At the cap
        for everyone, an idle connection of the address holding the most is closed."""
        mine = self.held.setdefault(address, set())
        if len(mine) >= self.per_address:
            return False
        mine.add(connection)
        if counted >= self.everyone:
            self._make_room(address, counted, is_idle)
        return True

    def leave(self, connection: Any, address: str) -> None:
        mine = self.held.get(address)
        if mine is not None:
            mine.discard(connection)
            if not mine:
                del self.held[address]

    def _make_room(self, newcomer: str, counted: int, is_idle: Callable[[Any], bool]) -> None:
        """Close idle connections of the biggest holders (each holding more than the newcomer's
        address) until the open connections are under the cap again, or none is left to close."""
        share = len(self.held.get(newcomer, ()))
        while counted >= self.everyone:
            open_by_address = [[c for c in held if not c.transport.is_closing()] for held in self.held.values()]
            for connections in sorted(open_by_address, key=len, reverse=True):
                if len(connections) <= share:
                    return  # nobody holds more than the newcomer's address: uvicorn's 503 decides
                idle = next((c for c in connections if is_idle(c)), None)
                if idle is not None:
                    idle.transport.close()  # connection_lost removes it from uvicorn's set and from here
                    counted -= 1
                    break
            else:
                return  # every connection of a bigger holder carries a request
