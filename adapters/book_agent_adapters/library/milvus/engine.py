"""One Milvus server as the library backend sees it: a lazily made client whose every call is
bounded by a timeout and whose every failure is a coded error.

pymilvus is an optional extra (`pip install 'book-agent[milvus]'`), imported here only, on
the first call (a one-book command, or a library on the local backend, never loads it). The
client is made on first use and made again after the server was unreachable, so a server
that comes back is used without a restart.

| failure | code |
|---|---|
| pymilvus not installed | `engine.client_missing` |
| no URI configured | `engine.not_configured` |
| the server cannot be reached (down at start, gone mid-call) | `engine.unavailable` |
| a call outlived `timeout_s` (a slow or overloaded server) | `engine.timeout` |
| a collection the pointer names is gone | `engine.collection_missing` |
| the server refused the call | `engine.failed` |
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from book_agent.domain.errors import BookAgentError

T = TypeVar("T")
UNAVAILABLE_HINT = ("start the Milvus server, or point BOOK_AGENT_MILVUS_URI (or [library.milvus] uri) at a "
                    "running one; `book-agent prepare @all` loads it")
_MISSING_MARKS = ("collection not found", "can't find collection", "collection not exist", "not found[collection")
_DOWN_MARKS = ("fail connecting", "unavailable", "connection refused", "failed to connect", "connect failed",
               "socket closed", "connection reset", "not ready", "channel closed", "cannot invoke rpc")
_SLOW_MARKS = ("deadline", "timeout", "timed out")
# pymilvus pings every 10 s even on an idle channel; a server with gRPC's default policy (milvus-lite)
# answers an idle client's pings with GOAWAY "too many pings" and refuses it. Ping only while a call
# is in flight: an idle process then keeps a usable channel, and a call still bounds its wait.
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 60_000, "grpc.keepalive_permit_without_calls": 0}


@dataclass(frozen=True)
class EngineSettings:
    """Where the server is and how long a call may take. The token is the value of an
    environment variable named in config, read when the backend is made, never stored."""

    uri: str
    token: str = ""
    db_name: str = ""
    timeout_s: float = 10.0
    shards: int = 1  # a rows collection's shards (write parallelism on a Distributed cluster)
    replicas: int = 1  # in-memory replicas each collection is loaded with (query nodes serving it)


def import_pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError as exc:
        raise BookAgentError(
            "engine.client_missing", f"the Milvus library backend needs pymilvus, which cannot be imported: {exc}",
            remediation="pip install 'book-agent[milvus]' into book-agent's environment (or choose "
                        "--library-backend local)") from exc
    # pymilvus logs every failed RPC at ERROR on its own handler; ours are coded errors instead
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    return pymilvus


class MilvusEngine:
    """Calls on one server, each bounded by `timeout_s`, failures translated to coded errors."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def uri(self) -> str:
        return self.settings.uri

    def call(self, what: str, action: Callable[[Any], T], idempotent: bool = True) -> T:
        """`action(client)` with the client, its failures as coded errors naming `what`. A
        channel that served before and is now unusable (the server restarted, or closed it) is
        replaced and an idempotent call made once more; a server still unreachable then is
        `engine.unavailable`."""
        pymilvus = import_pymilvus()
        reused = self._client is not None
        for attempt in (1, 2):
            client = self._connected(pymilvus)
            try:
                return action(client)
            except BookAgentError:
                raise
            except Exception as exc:  # noqa: BLE001 - pymilvus and grpc raise many kinds; each becomes a code
                error = self.translate(what, exc)
                if error.code not in ("engine.unavailable", "engine.timeout"):
                    raise error from exc
                self._forget(client)
                if attempt == 2 or not reused or not idempotent or error.code == "engine.timeout":
                    raise error from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _connected(self, pymilvus: Any) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    self._client = pymilvus.MilvusClient(
                        uri=self.settings.uri, token=self.settings.token, db_name=self.settings.db_name,
                        timeout=self.settings.timeout_s, grpc_options=dict(GRPC_OPTIONS))
                except Exception as exc:  # noqa: BLE001
                    error = self.translate("connect", exc)
                    if error.code == "engine.failed":  # a refused handshake is still "cannot use it"
                        error = self._unavailable("connect", exc)
                    raise error from exc
            return self._client

    def _forget(self, client: Any) -> None:
        """Drop a client whose server went away: the next call connects again."""
        with self._lock:
            if self._client is client:
                self._client = None
        with contextlib.suppress(Exception):  # closing a dead channel may fail; it is dropped either way
            client.close()

    def translate(self, what: str, exc: BaseException) -> BookAgentError:
        text = f"{type(exc).__name__}: {exc}".lower()
        details = {"uri": self.settings.uri, "call": what}
        if any(mark in text for mark in _MISSING_MARKS):
            return BookAgentError("engine.collection_missing", f"Milvus has no such collection ({what}): {exc}",
                                  details=details, remediation="run `book-agent prepare @all` to load it again")
        if any(mark in text for mark in _SLOW_MARKS):
            return BookAgentError(
                "engine.timeout", f"Milvus did not answer {what} within {self.settings.timeout_s:g} s",
                details={**details, "timeout_s": self.settings.timeout_s},
                remediation="check the server's load, or raise [library.milvus] timeout_s")
        if any(mark in text for mark in _DOWN_MARKS):
            return self._unavailable(what, exc)
        return BookAgentError("engine.failed", f"Milvus refused {what}: {exc}", details=details,
                              remediation="check the server's log and version (Milvus 2.5 or later)")

    def _unavailable(self, what: str, exc: BaseException) -> BookAgentError:
        return BookAgentError("engine.unavailable", f"the Milvus server at {self.settings.uri} cannot be reached "
                              f"({what}): {exc}", details={"uri": self.settings.uri, "call": what},
                              remediation=UNAVAILABLE_HINT)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
