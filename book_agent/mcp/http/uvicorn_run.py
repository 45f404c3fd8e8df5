"""`serve`'s uvicorn: the protocol, the settings, and one process or N worker processes.

- `GuardedH11Protocol`: uvicorn's h11 protocol, but a request's head must arrive within the read
  timeout of the connection opening or of the previous answer; else the connection is closed.
  (uvicorn restarts its keep-alive timer on every byte, so a client trickling a head would hold
  the connection forever.) The same deadline bounds how long an unread body is drained after a
  413. A module-level class, so that worker processes can be handed it. It also keeps the
  connections per client address (book_agent/mcp/http/connections.py): one past the address's cap is
  answered 429 and closed, and at the cap for everyone an idle connection of the address
  holding the most makes room, so one client cannot deny everyone.
- `uvicorn_settings`: the connection cap, the time limits, graceful shutdown, and no default
  access log (book_agent/mcp/http/access_log.py writes one line per request instead).
- `run_one`: the app in this process. `run_workers`: `--workers N` processes accepting on one
  socket, bound here (uvicorn's supervisor: a worker that dies is replaced). Each worker builds
  the same app from the options in the environment (`BOOK_AGENT_SERVE_OPTIONS`, read and set
  by book_agent/settings.py; book_agent/mcp/http/serve.py `worker_app`); the server is stateless, so any worker
  may answer any request. SIGTERM or Ctrl-C: each worker finishes its requests in flight (up
  to the shutdown timeout), then this process ends by the signal it was sent, as one process
  would.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from book_agent import settings
from book_agent.mcp.http.connections import OVER_CAP_HEAD_S, ConnectionLedger
from book_agent.mcp.http.limits import KEEP_ALIVE_S, MAX_CONNECTIONS, READ_TIMEOUT_S, HttpLimits
from book_agent.mcp.http.refusals import too_many_connections

WORKER_APP = "book_agent.mcp.http.serve:worker_app"


class GuardedH11Protocol(H11Protocol):
    head_timeout = READ_TIMEOUT_S  # these three are set from the limits before serving (`uvicorn_settings`)
    per_address = MAX_CONNECTIONS
    everyone = MAX_CONNECTIONS

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.address = str(self.client[0]) if self.client else "unknown"
        self.ledger: ConnectionLedger | None = ConnectionLedger.of(self.server_state, self.per_address, self.everyone)
        if not self.ledger.admit(self, self.address, len(self.connections), _idle):
            self.connections.discard(self)  # counts toward nobody's cap: refused at its first request
            self.app = too_many_connections(self.per_address).before(self.app)
            self.head_timeout = min(self.head_timeout, OVER_CAP_HEAD_S)
            self.ledger = None
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.ledger is not None:
            self.ledger.leave(self, self.address)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_head_deadline()

    def _arm_head_deadline(self) -> None:
        self.loop.call_later(self.head_timeout, self._head_deadline, self.cycle)

    def _head_deadline(self, cycle: Any) -> None:
        # no request began since the deadline was set: the head (or a drained body) is late
        if self.cycle is cycle and (cycle is None or cycle.response_complete) and not self.transport.is_closing():
            self.transport.close()


def _idle(connection: Any) -> bool:
    """No request on `connection` now (none yet, or the last one answered), and not closing."""
    cycle = connection.cycle
    return (cycle is None or cycle.response_complete) and not connection.transport.is_closing()


def uvicorn_settings(limits: HttpLimits) -> dict[str, Any]:
    """uvicorn.Config keywords for these limits (and the head deadline set for this process)."""
    GuardedH11Protocol.head_timeout = limits.read_timeout
    GuardedH11Protocol.per_address = limits.max_connections_per_address
    GuardedH11Protocol.everyone = limits.max_connections
    return {
        "http": GuardedH11Protocol,
        "limit_concurrency": limits.max_connections,
        "timeout_keep_alive": KEEP_ALIVE_S,
        "timeout_graceful_shutdown": limits.shutdown_timeout,
        "access_log": False,
        "log_level": "warning",
        "lifespan": "on",
    }


Announce = Callable[[str], None]  # "listening", "stopping", "stopped"


def _quiet(event: str) -> None:
    return None


def run_one(app: Any, host: str, port: int, limits: HttpLimits, announce: Announce | None = None) -> None:
    """Serve `app` until SIGTERM or Ctrl-C (uvicorn finishes what is in flight, then re-raises
    the signal: so "stopped" is announced at the end of the shutdown, before the signal)."""
    import uvicorn

    from book_agent.mcp.internals import finish_streams_on_shutdown

    say = announce or _quiet

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                say("listening")

        async def shutdown(self, sockets: Any = None) -> None:
            say("stopping")
            await super().shutdown(sockets)
            say("stopped")

    finish_streams_on_shutdown()
    AnnouncingServer(uvicorn.Config(app, host=host, port=int(port), **uvicorn_settings(limits))).run()


def run_workers(options_json: str, host: str, port: int, limits: HttpLimits, workers: int,
                announce: Announce | None = None) -> None:
    """`workers` processes serving on one socket bound here, until SIGTERM or Ctrl-C."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    say = announce or _quiet

    class Supervisor(Multiprocess):
        stopped_by: int | None = None

        def handle_int(self) -> None:
            self.stopped_by = self.stopped_by or signal.SIGINT
            say("stopping")
            super().handle_int()

        def handle_term(self) -> None:
            self.stopped_by = self.stopped_by or signal.SIGTERM
            say("stopping")
            super().handle_term()

    settings.set_worker_serve_options(options_json)  # spawned workers inherit it
    config = uvicorn.Config(WORKER_APP, factory=True, host=host, port=int(port), workers=workers,
                            **uvicorn_settings(limits))
    supervisor = Supervisor(config, sockets=[config.bind_socket()])
    say("listening")  # the socket is bound: connections queue until a worker accepts them
    supervisor.run()
    say("stopped")
    if supervisor.stopped_by is not None:  # end as one process would: by the signal sent
        signal.signal(supervisor.stopped_by, signal.SIG_DFL)
        signal.raise_signal(supervisor.stopped_by)
