"""The Milvus backend's pure parts: failures translated to codes, the options it accepts, the
group stamp read per book, filter literals (no server: tests/integration/test_milvus_*.py)."""

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
