"""One Milvus server as the library backend sees it: a lazily made client whose every call is
bounded by a timeout, whose every failure is a coded error, and which stops waiting on a sick
server (a circuit breaker).

pymilvus is an optional extra (`pip install 'book-agent[milvus]'`), imported here only, on
the first call (a one-book command, or a library on the local backend, never loads it). The
client is made on first use and made again after the server was unreachable, so a server
that comes back is used without a restart.

| failure | code |
|---|---|
| pymilvus not installed | `engine.client_missing` |
| no URI configured | `engine.not_configured` |
| the server cannot be reached (down at start, gone mid-call, a TLS handshake refused) | `engine.unavailable` |
| a call outlived `timeout_s` (a slow, overloaded or hung server) | `engine.timeout` |
| the breaker is open: a recent call timed out or found no server, so none waits now | `engine.circuit_open` |
| the server refused the credentials (token, user and password) | `engine.auth_failed` |
| a collection the pointer names is gone | `engine.collection_missing` |
| the server refused the call | `engine.failed` |

The breaker: a call that times out or finds no server opens it for `breaker_s`; meanwhile every
call fails at once with `engine.circuit_open` (a library search degrades that channel without
waiting; contracts/beyond-one-node.md). Then the next call first probes the server with a cheap
call bounded by `timeout_s` (never a build's long one): answered, the breaker closes and the call
goes on; failed, it opens again, for twice as long (at most 300 s: breaker.py).

Credentials and TLS come from the settings (contracts/beyond-one-node.md, "Milvus"): a token or
a user and password (their values read from environment variables, never stored or logged), a
CA file, a client certificate and key (mutual TLS), the name the server's certificate bears.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.library.milvus.breaker import Breaker
from book_agent_adapters.library.milvus.engine_settings import EngineSettings

__all__ = ["EngineSettings", "MilvusEngine", "import_pymilvus"]

T = TypeVar("T")
UNAVAILABLE_HINT = ("start the Milvus server, or point BOOK_AGENT_MILVUS_URI (or [library.milvus] uri) at a "
                    "running one; `book-agent prepare @all` loads it")
_MISSING_MARKS = ("collection not found", "can't find collection", "collection not exist", "not found[collection")
_DOWN_MARKS = ("fail connecting", "unavailable", "connection refused", "failed to connect", "connect failed",
               "socket closed", "connection reset", "not ready", "channel closed", "cannot invoke rpc")
_SLOW_MARKS = ("deadline", "timeout", "timed out")
_AUTH_MARKS = ("auth check failure", "unauthenticated", "authenticate", "username and password", "invalid token",
               "incorrect username", "wrong password", "permission_denied", "permission deny", "permission denied",
               "code=1800")
SICK = ("engine.timeout", "engine.unavailable")  # failures that open the breaker
# pymilvus pings every 10 s even on an idle channel; a server with gRPC's default policy (milvus-lite)
# answers an idle client's pings with GOAWAY "too many pings" and refuses it. Ping only while a call
# is in flight: an idle process then keeps a usable channel, and a call still bounds its wait.
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 60_000, "grpc.keepalive_permit_without_calls": 0}


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


def _chain_text(exc: BaseException) -> str:
    """The failure and what caused it: pymilvus reports a refused login as "Fail connecting to
    server" and keeps the server's UNAUTHENTICATED in the exception's cause."""
    parts, seen = [], 0
    current: BaseException | None = exc
    while current is not None and seen < 4:
        parts.append(f"{type(current).__name__}: {current}")
        current, seen = current.__cause__ or current.__context__, seen + 1
    return " | ".join(parts)


class MilvusEngine:
    """Calls on one server, each bounded by `timeout_s`, failures translated to coded errors."""

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self._client: Any = None
        self._lock = threading.Lock()
        self.breaker = Breaker(settings.breaker_s)
        self._version: str | None = None

    @property
    def uri(self) -> str:
        return self.settings.uri

    def call(self, what: str, action: Callable[[Any], T], idempotent: bool = True) -> T:
        """`action(client)` with the client, its failures as coded errors naming `what`. A
        channel that served before and is now unusable (the server restarted, or closed it) is
        replaced and an idempotent call made once more; a server still unreachable then is
        `engine.unavailable`. While the breaker is open, `engine.circuit_open` at once."""
        pymilvus = import_pymilvus()
        if not self.breaker.admit():
            raise self._circuit_open(what)
        if self.breaker.probing:  # this call is the probe: a cheap one first, so no long call waits on a sick server
            self._probe(pymilvus, what)
        try:
            result = self._call(pymilvus, what, action, idempotent)
        except BookAgentError as error:
            if error.code in SICK:
                self.breaker.failed(error)
            else:
                self.breaker.released()
            raise
        except BaseException:
            self.breaker.released()
            raise
        self.breaker.succeeded()
        return result

    def _probe(self, pymilvus: Any, what: str) -> None:
        """List the collections (bounded by `timeout_s`): answered, the breaker closes; else it
        opens again (for twice as long) and `what` fails with `engine.circuit_open`."""
        try:
            self._call(pymilvus, "probe", lambda c: c.list_collections(timeout=self.settings.timeout_s), True)
        except BookAgentError as error:
            if error.code in SICK:
                self.breaker.failed(error)
                raise self._circuit_open(what) from error
            self.breaker.released()
            raise
        self.breaker.succeeded()

    def _call(self, pymilvus: Any, what: str, action: Callable[[Any], T], idempotent: bool) -> T:
        reused = self._client is not None
        for attempt in (1, 2):
            client = self._connected(pymilvus)
            try:
                return action(client)
            except BookAgentError:
                raise
            except Exception as exc:  # noqa: BLE001 - pymilvus and grpc raise many kinds; each becomes a code
                error = self.translate(what, exc)
                if error.code not in SICK:
                    raise error from exc
                self._forget(client)
                if attempt == 2 or not reused or not idempotent or error.code == "engine.timeout":
                    raise error from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _circuit_open(self, what: str) -> BookAgentError:
        state = self.breaker.state()
        because = self.breaker.last
        return BookAgentError(
            "engine.circuit_open", f"the Milvus server at {self.settings.uri} is not asked ({what}): it "
            f"{'timed out' if because and because.code == 'engine.timeout' else 'could not be reached'} "
            f"recently; it is probed again in {state.get('probe_in_s', 0)} s",
            details={"uri": self.settings.uri, "call": what, **state},
            remediation="nothing to do if it comes back (the backend probes it and resumes by itself); else "
                        "check the server: " + UNAVAILABLE_HINT)

    def _connected(self, pymilvus: Any) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    # a channel of its own: pymilvus shares one between clients of the same address and
                    # credentials, whatever their TLS files (an untrusted CA would ride a trusted one's)
                    self._client = pymilvus.MilvusClient(
                        uri=self.settings.uri, db_name=self.settings.db_name, timeout=self.settings.timeout_s,
                        grpc_options=dict(GRPC_OPTIONS), dedicated=True, **self.settings.client_options())
                except Exception as exc:  # noqa: BLE001
                    error = self.translate("connect", exc)
                    if error.code == "engine.failed":  # a refused handshake (TLS) is still "cannot use it"
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
        text = _chain_text(exc).lower()
        details = {"uri": self.settings.uri, "call": what}
        if any(mark in text for mark in _AUTH_MARKS):
            return BookAgentError(
                "engine.auth_failed", f"the Milvus server at {self.settings.uri} refused this client's credentials "
                f"({what}, as {self.settings.auth})", details={**details, "auth": self.settings.auth},
                remediation="check the token (the variable [library.milvus] token_env names, or "
                            "BOOK_AGENT_MILVUS_TOKEN) or the user and password (BOOK_AGENT_MILVUS_USER / "
                            "password_env) and the user's privileges")
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
        hint = UNAVAILABLE_HINT
        if self.settings.secure:
            hint += ("; over TLS, check [library.milvus] ca_pem_path (the CA that signed the server's "
                     "certificate), server_name (the name it bears) and the client certificate and key")
        return BookAgentError("engine.unavailable", f"the Milvus server at {self.settings.uri} cannot be reached "
                              f"({what}): {exc}", details={"uri": self.settings.uri, "call": what},
                              remediation=hint)

    def server_version(self) -> str:
        """The server's version ("v2.3.5-lite", ...), asked once; "" for a server without the call
        (milvus-lite answers it UNIMPLEMENTED)."""
        if self._version is None:
            try:
                self._version = str(self.call("server version", lambda c: c.get_server_version(
                    timeout=self.settings.timeout_s)))
            except BookAgentError as exc:
                if exc.code != "engine.failed":
                    raise
                self._version = ""
        return self._version

    def partitioned(self) -> bool:
        """Whether new rows collections get a partition key on the book (not on milvus-lite)."""
        return self.settings.partition_key and bool(self.server_version())

    def describe(self) -> dict[str, Any]:
        """What doctor shows: where the server is, how it is reached, its version and health
        (one call, bounded; never a secret)."""
        info: dict[str, Any] = {"uri": self.settings.uri, "db_name": self.settings.db_name or "default",
                                "tls": self.settings.secure, "auth": self.settings.auth,
                                "timeout_s": self.settings.timeout_s, "breaker": self.breaker.state()}
        try:
            self.call("health", lambda c: c.list_collections(timeout=self.settings.timeout_s))
            info["server_version"] = self.server_version() or "unknown (no version call: milvus-lite)"
            info["health"] = "ok"
        except BookAgentError as exc:
            info.update(server_version=None, health=exc.code, reason=exc.message, remediation=exc.remediation)
        return info

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
