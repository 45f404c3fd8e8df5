"""The `milvus` backend against a real Milvus 2.3.5 standalone server (the PyPI `milvus` wheel,
`make install-milvus-server`), run loopback-only in a network namespace this module creates
(tools/dev/milvus_netns_server.py). 2.3 has no sparse vectors, so the lexical channel's build is
refused there: that refusal path is what runs of it. The vector channel and the machinery
(catalog, lease, generations) run whole: the vector contract suite, a hung server and its
breaker, TLS and credentials. The default tier runs the same backend on milvus-lite."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from book_agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent.testing.library_vectors_contract import LibraryVectorIndexesContract
from tests.support import milvus
from tests.support.library_support import three_book_library, unit
from tests.support.milvus_library import use_milvus
from tests.support.parts import require_real_part

pytestmark = pytest.mark.slow
TOOLS = Path(__file__).resolve().parents[4] / "tools"
QUERY = "river water battle"
QV = [float(x) for x in unit(QUERY)]
SETTLE_S = 1.5  # a real server's Strong read is ~0.2 s: a claim's read-to-write must stay under half of this


def _server_module() -> Any:
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    import tools.dev.milvus_netns_server as milvus_netns_server
    return milvus_netns_server


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = _server_module()
    require_real_part(server.available(), "the Milvus 2.3.5 server (`make install-milvus-server`, root, unshare)")
    with server.milvus_server(tmp_path_factory.mktemp("milvus-real")) as running:
        yield running


def _collections(uri: str, prefix: str) -> list[str]:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, timeout=30, dedicated=True)
    try:
        return sorted(n for n in client.list_collections() if n.startswith(prefix + "_"))
    finally:
        client.close()


class TestRealServerVectors(LibraryVectorIndexesContract):
    """The vector channel's promises (generations, books added and removed, the lease) on 2.3.5."""

    @pytest.fixture
    def make_indexes(self, real_server: Any, tmp_path: Path) -> Any:
        return lambda: milvus.backend(real_server.uri, tmp_path / "data", lease_settle_s=SETTLE_S,
                                      timeout_s=30.0).vectors


def test_a_refused_lexical_build_degrades_the_channel_leaks_nothing_and_is_rate_limited(
        real_server: Any, tmp_path: Path) -> None:
    library = three_book_library(tmp_path)
    prefix = use_milvus(library, real_server.uri, timeout_s=30.0, lease_settle_s=SETTLE_S)
    with BookAgent(library) as agent:
        first = agent.search("@all", QUERY, top_k=5, query_vector=QV)
        assert first["library"]["backend"] == "milvus"
        lexical = first["channels"]["lexical"]
        assert not lexical["ran"] and lexical["code"] == "lexical.build_failed"
        assert first["channels"]["vector"]["ran"] and first["hits"]  # the vectors answer, through Milvus
        assert all(g["search"] == "approximate" for g in first["library"]["model_groups"])
        refused = first["library"]["lexical_index"]["unavailable"]
        assert refused["code"] == "lexical.build_failed" and refused["remediation"]
        for _ in range(5):  # each search asks for the build; the refusal is remembered, not retried
            again = agent.search("@all", QUERY, top_k=5, query_vector=QV)
            assert again["hits"] and "tried again in" in again["library"]["lexical_index"]["unavailable"]["reason"]
        with pytest.raises(BookAgentError) as strict:
            agent.search("@all", QUERY, top_k=5, strict=True, query_vector=QV)
        assert strict.value.code == "search.channel_degraded"
    left = _collections(real_server.uri, prefix)
    assert not [n for n in left if "_lex_" in n], left  # the refused epochs were dropped: zero leaked
    assert f"{prefix}_catalog" in left and any("_vec_" in n for n in left)


def _group_search(agent: BookAgent) -> dict[str, Any]:
    result = agent.search("@all", QUERY, top_k=5, query_vector=QV)
    assert result["hits"]  # answered, whatever the server does
    return dict(result["library"]["model_groups"][0])


def _until_approximate(agent: BookAgent, within_s: float = 120.0) -> None:
    deadline = time.monotonic() + within_s
    while (group := _group_search(agent))["search"] != "approximate":
        assert time.monotonic() < deadline, group
        time.sleep(1.0)


def test_a_hung_server_opens_the_breaker_and_the_backend_recovers_by_itself(real_server: Any, tmp_path: Path) -> None:
    library = three_book_library(tmp_path)
    use_milvus(library, real_server.uri, timeout_s=5.0, lease_settle_s=SETTLE_S, breaker_s=2.0)
    with BookAgent(library) as agent:
        _until_approximate(agent)  # loaded, and the breaker closed
        real_server.freeze()  # SIGSTOP: its sockets stay open, nothing answers
        try:
            first = _group_search(agent)  # pays one timeout, then the breaker opens
            assert first["search"] == "exact"
            after = [_group_search(agent) for _ in range(10)]  # the server is not asked: coded, at once
        finally:
            real_server.thaw()
        assert all(g["search"] == "exact" and g.get("code") == "engine.circuit_open" for g in after), after
        _until_approximate(agent, 60.0)  # the probe after breaker_s finds it answering: back by itself


@pytest.fixture(scope="module")
def secured_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = _server_module()
    require_real_part(server.available(), "the Milvus 2.3.5 server (`make install-milvus-server`, root, unshare)")
    folder = tmp_path_factory.mktemp("milvus-tls")
    server.tls_files(folder, "milvus.test")
    with server.milvus_server(folder, tls=True, auth=True) as running:
        yield running


def test_tls_with_a_private_ca_and_credentials_from_the_environment(
        secured_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tls = secured_server.folder / "tls"
    options = {"lease_settle_s": SETTLE_S, "timeout_s": 20.0}
    monkeypatch.setenv("BOOK_AGENT_MILVUS_USER", "root")
    monkeypatch.setenv("TEST_MILVUS_PASSWORD", "Milvus")  # the server's first user
    good = milvus.backend(secured_server.uri, tmp_path / "a", ca_pem_path=str(tls / "ca.pem"),
                          server_name="milvus.test", password_env="TEST_MILVUS_PASSWORD", **options)
    described = good.describe() if good.describe else {}
    assert described["health"] == "ok" and str(described["server_version"]).startswith("v2.3")
    assert described["tls"] and described["auth"] == "user" and "Milvus" not in str(described)
    assert described["index"]["partition_key"] == "book_id" and described["breaker"] == {"state": "closed"}
    no_ca = milvus.backend(secured_server.uri, tmp_path / "b", **options, password_env="TEST_MILVUS_PASSWORD")
    with pytest.raises(BookAgentError) as untrusted:
        no_ca.vectors.engine.call("list", lambda c: c.list_collections())  # type: ignore[attr-defined]
    assert untrusted.value.code == "engine.unavailable" and "ca_pem_path" in (untrusted.value.remediation or "")
    monkeypatch.setenv("TEST_MILVUS_PASSWORD", "wrong")
    wrong = milvus.backend(secured_server.uri, tmp_path / "c", ca_pem_path=str(tls / "ca.pem"),
                           server_name="milvus.test", password_env="TEST_MILVUS_PASSWORD", **options)
    with pytest.raises(BookAgentError) as refused:
        wrong.vectors.engine.call("list", lambda c: c.list_collections())  # type: ignore[attr-defined]
    assert refused.value.code == "engine.auth_failed"
    assert "wrong" not in f"{refused.value.message} {refused.value.details} {refused.value.remediation}"
    monkeypatch.setenv("BOOK_AGENT_MILVUS_PASSWORD", "Milvus")
    mutual = milvus.backend(secured_server.uri, tmp_path / "d", ca_pem_path=str(tls / "ca.pem"),
                            client_pem_path=str(tls / "client.pem"), client_key_path=str(tls / "client.key"),
                            server_name="milvus.test", user="root", **options)
    assert mutual.vectors.engine.call("list", lambda c: c.list_collections()) is not None  # type: ignore[attr-defined]
