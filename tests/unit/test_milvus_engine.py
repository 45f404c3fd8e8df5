"""The Milvus backend's pure parts: failures translated to codes, the options it accepts, the
group stamp read per book, filter literals (no server: tests/integration/library/milvus/test_milvus_*.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryBackendSetting, LibraryMember, vector_group_stamp
from book_agent_adapters.library.milvus import create_milvus
from book_agent_adapters.library.milvus.engine import EngineSettings, MilvusEngine
from book_agent_adapters.library.milvus.schema import expression
from book_agent_adapters.library.milvus.vectors import book_stamps

ENGINE = MilvusEngine(EngineSettings("http://127.0.0.1:1", timeout_s=2.0))


@pytest.mark.parametrize(("message", "code"), [
    ("<MilvusException: (code=2, message=Fail connecting to server on 127.0.0.1:1, illegal connection params or "
     "server unavailable)>", "engine.unavailable"),
    ("StatusCode.UNAVAILABLE: Connection refused", "engine.unavailable"),
    ("<MilvusException: (code=1, message=[search] Retry timeout: 2s)>", "engine.timeout"),
    ("StatusCode.DEADLINE_EXCEEDED", "engine.timeout"),
    ("<MilvusException: (code=100, message=collection not found[collection=x])>", "engine.collection_missing"),
    ("<MilvusException: (code=1100, message=invalid parameter)>", "engine.failed"),
])
def test_failures_are_coded(message: str, code: str) -> None:
    error = ENGINE.translate("search", RuntimeError(message))
    assert error.code == code and error.remediation and error.details["uri"] == "http://127.0.0.1:1"


def test_a_channel_that_served_is_replaced_once_and_a_dead_server_is_unavailable() -> None:
    engine = MilvusEngine(EngineSettings("http://127.0.0.1:1", timeout_s=1.0))

    class Stale:
        closed = False

        def close(self) -> None:
            self.closed = True
    stale = Stale()
    engine._client = stale
    calls: list[object] = []

    def action(client: object) -> None:
        calls.append(client)
        raise RuntimeError("StatusCode.UNAVAILABLE: GOAWAY too many pings")
    with pytest.raises(BookAgentError) as caught:
        engine.call("search", action)
    assert caught.value.code == "engine.unavailable" and stale.closed and calls == [stale]  # reconnecting failed
    engine = MilvusEngine(EngineSettings("http://127.0.0.1:1", timeout_s=1.0))  # its breaker is closed
    engine._client = stale
    calls.clear()
    with pytest.raises(BookAgentError):
        engine.call("insert rows", action, idempotent=False)
    assert calls == [stale]  # never retried: the rows may have gone in


@pytest.mark.parametrize("options", [{"uri": "x", "token": "secret"}, {"uri": "x", "prefix": "1bad"},
                                     {"uri": "x", "token_env": "not a name"}, {"uri": "x", "nprobe": 0},
                                     {"uri": "x", "timeout_s": -1}, {"uri": "x", "min_vectors": True}])
def test_bad_options_are_config_invalid(options: dict[str, object], tmp_path: Path) -> None:
    with pytest.raises(BookAgentError) as caught:
        create_milvus(tmp_path, LibraryBackendSetting("milvus", "config", options))
    assert caught.value.code == "config.invalid"


def test_no_server_is_not_configured_and_the_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BookAgentError) as caught:
        create_milvus(tmp_path, LibraryBackendSetting("milvus", "config", {}))
    assert caught.value.code == "engine.not_configured"
    monkeypatch.setenv("BOOK_AGENT_MILVUS_URI", "http://milvus.example:19530")
    monkeypatch.setenv("MY_TOKEN", "user:pass")
    backend = create_milvus(tmp_path, LibraryBackendSetting("milvus", "config", {"uri": "http://other:1",
                                                                               "token_env": "MY_TOKEN"}))
    engine = backend.vectors.engine  # type: ignore[attr-defined]
    assert engine.uri == "http://milvus.example:19530" and engine.settings.token == "user:pass"
    assert "user:pass" not in repr(backend.vectors.__dict__.get("prefix"))


@given(st.lists(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}", fullmatch=True), min_size=1, max_size=5, unique=True),
       st.text(min_size=1, max_size=10).filter(lambda s: ";" not in s))
def test_each_books_stamp_is_read_from_the_group_stamp(book_ids: list[str], version: str) -> None:
    members = [LibraryMember(b, Path("x"), 1, f"{version}:{b}") for b in book_ids]
    stamps = book_stamps(vector_group_stamp("m", 8, "cosine", members))
    assert set(stamps) == set(book_ids)
    assert all(stamps[b].startswith(f"{version}:{b}|m|8|cosine") for b in book_ids)


@given(st.text(max_size=30))
def test_filter_literals_are_json_strings(value: str) -> None:
    literal = expression("book_id == {v}", v=value).removeprefix("book_id == ")
    assert json.loads(literal) == value


class Answering:
    """A client that answers (or, while `sick`, times out like a hung server), counting calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.probes = 0
        self.sick = True

    def close(self) -> None:
        pass

    def list_collections(self, timeout: float) -> list[str]:  # the breaker's probe
        self.probes += 1
        if self.sick:
            raise RuntimeError("StatusCode.DEADLINE_EXCEEDED: Deadline Exceeded")
        return []


def _ask(client: Answering) -> str:
    client.calls += 1
    if client.sick:
        raise RuntimeError("StatusCode.DEADLINE_EXCEEDED: Deadline Exceeded")
    return "answer"


def test_the_breaker_stops_waiting_on_a_hung_server_probes_it_and_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("book_agent_adapters.library.milvus.breaker.time.monotonic", lambda: clock[0])
    engine = MilvusEngine(EngineSettings("http://127.0.0.1:1", timeout_s=5.0, breaker_s=30.0))
    client = Answering()
    engine._client = client
    with pytest.raises(BookAgentError) as first:
        engine.call("search", _ask)
    assert first.value.code == "engine.timeout" and client.calls == 1
    for _ in range(10):  # the next ten: at once, coded, the server never asked
        with pytest.raises(BookAgentError) as fast:
            engine.call("search", _ask)
        assert fast.value.code == "engine.circuit_open" and fast.value.details["because"] == "engine.timeout"
    assert client.calls == 1 and engine.breaker.state()["state"] == "open"
    clock[0] += 30.0  # the probe (a cheap call, not the search): still hung, so open again, for twice as long
    engine._client = client
    with pytest.raises(BookAgentError) as probed:
        engine.call("search", _ask)
    assert probed.value.code == "engine.circuit_open" and (client.calls, client.probes) == (1, 1)
    assert engine.breaker.state()["open_s"] == 60.0
    clock[0] += 59.0
    with pytest.raises(BookAgentError) as still:
        engine.call("search", _ask)
    assert still.value.code == "engine.circuit_open" and (client.calls, client.probes) == (1, 1)
    clock[0] += 1.0
    client.sick = False  # it recovered: the probe answers and every call goes through again
    engine._client = client
    assert engine.call("search", _ask) == "answer" and engine.call("search", _ask) == "answer"
    assert engine.breaker.state() == {"state": "closed"} and (client.calls, client.probes) == (3, 2)


def test_a_refusal_does_not_open_the_breaker_and_auth_is_its_own_code() -> None:
    engine = MilvusEngine(EngineSettings("http://127.0.0.1:1", timeout_s=5.0, user="reader", password="s3cret"))
    engine._client = Answering()

    def refused(client: object) -> None:
        raise RuntimeError("<MilvusException: (code=1100, message=data type not supported: invalid parameter)>")
    for _ in range(3):
        with pytest.raises(BookAgentError) as caught:
            engine.call("create collection", refused)
        assert caught.value.code == "engine.failed"
    assert engine.breaker.state() == {"state": "closed"}
    for message in ("<MilvusException: (code=1800, message=auth check failure, please check username and password "
                    "are correct)>", "StatusCode.UNAUTHENTICATED: auth check failure"):
        error = engine.translate("connect", RuntimeError(message))
        assert error.code == "engine.auth_failed" and error.details["auth"] == "user"
        assert "s3cret" not in error.message + str(error.details) + (error.remediation or "")
    assert "s3cret" not in repr(engine.settings)


def test_credentials_and_tls_come_from_config_and_environment_never_kept_in_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setenv("BOOK_AGENT_MILVUS_USER", "reader")
    monkeypatch.setenv("MY_PASSWORD", "pa55")
    backend = create_milvus(tmp_path, LibraryBackendSetting("milvus", "config", {
        "uri": "https://milvus.internal:19530", "password_env": "MY_PASSWORD", "ca_pem_path": str(ca),
        "server_name": "milvus.internal"}))
    settings = backend.vectors.engine.settings  # type: ignore[attr-defined]
    options = settings.client_options()
    assert options == {"user": "reader", "password": "pa55", "secure": True, "server_pem_path": str(ca),
                       "server_name": "milvus.internal"}
    monkeypatch.setenv("BOOK_AGENT_MILVUS_TOKEN", "tok")  # a token wins over user and password
    backend = create_milvus(tmp_path, LibraryBackendSetting("milvus", "config", {"uri": "http://127.0.0.1:1"}))
    assert backend.vectors.engine.settings.client_options() == {"token": "tok"}  # type: ignore[attr-defined]
    described = backend.describe() if backend.describe else {}
    assert "tok" not in json.dumps(described, default=str).replace("token", "")
    for bad in ({"ca_pem_path": str(tmp_path / "missing.pem")}, {"client_pem_path": str(ca)},
                {"client_pem_path": str(ca), "client_key_path": str(ca)}, {"read_consistency": "eventually"},
                {"password_env": "not a name"}):
        with pytest.raises(BookAgentError) as caught:
            create_milvus(tmp_path, LibraryBackendSetting("milvus", "config", {"uri": "http://m:1", **bad}))
        assert caught.value.code == "config.invalid"


def test_reads_of_a_settled_generation_are_bounded_and_of_a_young_one_strong() -> None:
    import time

    auto = EngineSettings("http://m:1", bounded_after_s=15.0)
    assert auto.read_level(0.0) == "Strong"  # a pointer that does not say when it was committed
    assert auto.read_level(time.time() - 2.0) == "Strong"
    assert auto.read_level(time.time() - 20.0) == "Bounded"
    assert EngineSettings("http://m:1", read_consistency="strong").read_level(time.time() - 999) == "Strong"


@pytest.mark.parametrize(("code", "engine_code", "degrades"), [
    ("engine.unavailable", None, True), ("engine.timeout", None, True), ("engine.circuit_open", None, True),
    ("lexical.build_failed", "engine.timeout", True), ("lexical.build_failed", "engine.failed", True),  # refused
    ("lexical.build_failed", "engine.circuit_open", True), ("lexical.build_failed", "engine.auth_failed", False),
    ("lexical.build_failed", None, False),  # a local build's failure (a full disk): raised as before
    ("engine.auth_failed", None, False), ("config.invalid", None, False), ("engine.failed", None, False),
])
def test_which_backend_failures_degrade_a_library_channel(code: str, engine_code: str | None, degrades: bool) -> None:
    from book_agent.services.library.channels import engine_down

    details = {"engine_code": engine_code} if engine_code else {}
    assert engine_down(BookAgentError(code, "x", details=details)) is degrades


def test_a_refused_login_is_read_from_the_failures_cause() -> None:
    """pymilvus reports a wrong password as "Fail connecting to server" (code 2); the server's
    UNAUTHENTICATED is the exception's cause (seen on a real 2.3.5 server)."""
    try:
        try:
            raise RuntimeError("StatusCode.UNAUTHENTICATED: auth check failure, please check username and password")
        except RuntimeError as cause:
            raise RuntimeError("<MilvusException: (code=2, message=Fail connecting to server on 127.0.0.1:1, "
                               "illegal connection params or server unavailable)>") from cause
    except RuntimeError as exc:
        assert ENGINE.translate("connect", exc).code == "engine.auth_failed"
    plain = RuntimeError("<MilvusException: (code=2, message=Fail connecting to server on 127.0.0.1:1)>")
    assert ENGINE.translate("connect", plain).code == "engine.unavailable"
