"""The `milvus` backend when its server fails: down at start, gone mid-search, too slow, a
collection missing or of an older format, a build dying half-way. Every failure is coded, a
library search degrades (a strict one fails) and the process stays up; nothing is half-swapped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from book_agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.library.milvus.engine import GRPC_OPTIONS
from tests.support import milvus
from tests.support.library_support import three_book_library, unit
from tests.support.milvus_library import black_hole, closed_port_uri, use_milvus
from tests.support.parts import require_real_part

QUERY = "river water battle"
QV = [float(x) for x in unit(QUERY)]  # the books' vectors have no encoder here: the caller gives one


def hit_ids(result) -> list[str]:
    return [h["evidence_id"] for h in result["hits"]]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return three_book_library(tmp_path)


@pytest.fixture
def local_hits(library: Path) -> list[str]:
    with BookAgent(library) as agent:
        return hit_ids(agent.search("@all", QUERY, top_k=8, query_vector=QV))


@pytest.mark.parametrize("where", ["down", "slow"])
def test_an_unreachable_server_degrades_the_search_and_fails_prepare_coded(library: Path, where: str) -> None:
    with black_hole() as slow:
        use_milvus(library, closed_port_uri() if where == "down" else slow, timeout_s=1.0)
        with BookAgent(library) as agent:
            result = agent.search("@all", QUERY, top_k=5, query_vector=QV)
            lexical = result["channels"]["lexical"]
            assert not lexical["ran"] and lexical["code"] in ("engine.unavailable", "engine.timeout")
            assert result["channels"]["vector"]["ran"] and result["hits"]  # each group searched exactly
            assert all(g["search"] == "exact" for g in result["library"]["model_groups"])
            assert any("lexical channel did not run" in w for w in result["warnings"])
            with pytest.raises(BookAgentError) as strict:
                agent.search("@all", QUERY, top_k=5, strict=True, query_vector=QV)
            assert strict.value.code == "search.channel_degraded"
            with pytest.raises(BookAgentError) as prepared:
                agent.prepare("@all")
            code = prepared.value.details.get("engine_code", prepared.value.code)  # a build's failure names it
            # the breaker opened at the first search's failure: nobody waits on the server now
            assert code == "engine.circuit_open" and prepared.value.remediation
            again = agent.search("@all", QUERY, top_k=5, query_vector=QV)["channels"]["lexical"]
            assert not again["ran"] and again["code"] == "engine.circuit_open"
            assert agent.search("part-0", QUERY, top_k=3)["hits"]  # one book never touches the engine


def test_no_uri_and_a_bad_option_are_coded(library: Path) -> None:
    (library / "config.toml").write_text('[library]\nbackend = "milvus"\n')
    with BookAgent(library) as agent, pytest.raises(BookAgentError) as caught:
        agent.search("@all", QUERY)
    assert caught.value.code == "engine.not_configured" and "BOOK_AGENT_MILVUS_URI" in caught.value.remediation
    (library / "config.toml").write_text('[library]\nbackend = "milvus"\n[library.milvus]\nuri = "x"\ntoken = "s3"\n')
    with BookAgent(library) as agent, pytest.raises(BookAgentError) as bad:
        agent.search("@all", QUERY)
    assert bad.value.code == "config.invalid" and "token" in bad.value.message
    (library / "config.toml").write_text('[library]\nbackend = "milvus"\n[library.milvus]\nuri = "x"\n'
                                         'lease_s = 3\nlease_settle_s = 1.5\n')  # its claims would lapse
    with BookAgent(library) as agent, pytest.raises(BookAgentError) as short:
        agent.search("@all", QUERY)
    assert short.value.code == "config.invalid" and "lease_settle_s must be below a third of lease_s" in short.value.message


def test_a_collection_gone_missing_is_rebuilt_by_the_next_search(library: Path, milvus_uri: str,
                                                                 local_hits: list[str]) -> None:
    from pymilvus import MilvusClient

    prefix = use_milvus(library, milvus_uri)
    with BookAgent(library) as agent:
        assert hit_ids(agent.search("@all", QUERY, top_k=8, query_vector=QV)) == local_hits
        client = MilvusClient(uri=milvus_uri, timeout=20, dedicated=True, grpc_options=dict(GRPC_OPTIONS))
        try:
            def rows_collections() -> set[str]:
                return {n for n in client.list_collections() if n.startswith(prefix + "_lex_")
                        and not n.endswith("_terms")}
            gone = rows_collections()
            for name in gone:
                client.drop_collection(name)
            again = agent.search("@all", QUERY, top_k=8, query_vector=QV)  # the open reader meets the loss
            assert again["channels"]["lexical"]["ran"] and hit_ids(again) == local_hits
            assert rows_collections() and not rows_collections() & gone  # loaded anew, as a new epoch
        finally:
            client.close()


def test_a_pointer_of_an_older_format_is_replaced_by_a_full_load(library: Path, milvus_uri: str,
                                                                  local_hits: list[str]) -> None:
    from pymilvus import MilvusClient

    prefix = use_milvus(library, milvus_uri)
    with BookAgent(library) as agent:
        agent.prepare("@all")
    client = MilvusClient(uri=milvus_uri, timeout=20, dedicated=True, grpc_options=dict(GRPC_OPTIONS))
    try:
        rows = client.query(f"{prefix}_catalog", filter='kind == "pointer"', output_fields=["key", "channel", "kind",
                                                                                             "body", "v"])
        old = [{**row, "body": json.dumps({**json.loads(row["body"]), "format": "book-agent-milvus-0"})}
               for row in rows]
        client.upsert(f"{prefix}_catalog", old)
    finally:
        client.close()
    with BookAgent(library) as agent:
        result = agent.search("@all", QUERY, top_k=8, query_vector=QV)
        assert result["library"]["lexical_index"]["rebuilt"] and hit_ids(result) == local_hits
        assert all(g["search"] == "approximate" and g["vector_index"]["rebuilt"]
                   for g in result["library"]["model_groups"])


def test_a_build_dying_half_way_leaves_the_generation_serving_and_is_rolled_back(
        milvus_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from book_agent.testing.library_books import (
        DIMENSIONS,
        MODEL,
        sample_library,
        vector_manifest,
        write_package_database,
    )
    from book_agent.testing.library_vectors_contract import stamp
    from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter
    from book_agent_adapters.library.milvus.engine import MilvusEngine

    books = sample_library(40)
    stores = {b.book_id: PrebuiltVectorStoreAdapter(
        write_package_database(tmp_path / "packages" / b.book_id, b.book_id, b.records, b.vectors),
        vector_manifest(b.vectors), sidecar_dir=tmp_path / "runtime" / b.book_id, book_id=b.book_id)
        for b in books.values()}
    vectors = milvus.backend(milvus_uri, tmp_path / "data").vectors
    first = {b: stores[b] for b in ("b0", "b1")}
    assert vectors.build(MODEL, DIMENSIONS, stamp(list(first)), first, None) == 80
    reader = vectors.open(MODEL, DIMENSIONS, stamp(list(first)), first)
    before = reader.search(books["b0"].vectors[3], 10)

    real_call = MilvusEngine.call
    inserts: list[str] = []

    def dying(self, what, action, idempotent=True):  # the server goes away after the build's first book went in
        if what == "insert rows":
            inserts.append(what)
            if len(inserts) > 1:
                raise BookAgentError("engine.unavailable", "gone mid-build")
        return real_call(self, what, action, idempotent)
    monkeypatch.setattr(MilvusEngine, "call", dying)
    with pytest.raises(BookAgentError) as caught:  # every book's stamp changed: all three are written
        vectors.build(MODEL, DIMENSIONS, stamp(list(stores), "v2"), stores, None)
    assert caught.value.code == "vector.index_build_failed"
    assert caught.value.details["engine_code"] == "engine.unavailable" and len(inserts) == 2
    monkeypatch.setattr(MilvusEngine, "call", real_call)
    assert vectors.state(MODEL, DIMENSIONS, stamp(list(first))).fresh  # nothing half-swapped
    assert reader.search(books["b0"].vectors[3], 10) == before
    wider = {b: stores[b] for b in ("b0", "b2")}
    assert vectors.build(MODEL, DIMENSIONS, stamp(list(wider)), wider, None) == 80
    fresh = vectors.open(MODEL, DIMENSIONS, stamp(list(wider)), wider)
    found = fresh.search(books["b2"].vectors[7], 200)
    assert len(found) == len(set(found)) == 80  # the dead build's rows were rolled back
    assert {k.partition("#")[0] for k, _ in found} == {"b0", "b2"}
    for each in (reader, fresh, *stores.values()):
        each.close()


def test_a_server_gone_mid_search_is_coded_and_the_process_recovers(library: Path, tmp_path: Path,
                                                                     local_hits: list[str]) -> None:
    server = milvus._server_module()
    require_real_part(server.python() is not None, "milvus-lite (.venv-milvus, `make install-milvus`)")
    with server.milvus_lite(tmp_path / "own-server") as uri:
        use_milvus(library, uri, timeout_s=3.0)
        agent = BookAgent(library)
        assert hit_ids(agent.search("@all", QUERY, top_k=8, query_vector=QV)) == local_hits
    result = agent.search("@all", QUERY, top_k=8, query_vector=QV)  # the server is gone; the open reader meets it
    assert not result["channels"]["lexical"]["ran"]
    assert result["channels"]["lexical"]["code"] in ("engine.unavailable", "engine.timeout")
    assert result["hits"]  # the vector channel answered, exactly, from the packages
    with server.milvus_lite(tmp_path / "own-server") as uri:  # back (same data file), on another port
        use_milvus(library, uri, prefix=None, timeout_s=10.0)
        with BookAgent(library) as fresh:
            assert hit_ids(fresh.search("@all", QUERY, top_k=8, query_vector=QV)) == local_hits
    agent.close()


def test_results_and_doctor_say_which_backend_serves_the_library(library: Path, milvus_uri: str) -> None:
    from book_agent.bootstrap import install_report

    with BookAgent(library) as agent:
        assert agent.search("@all", QUERY, top_k=3, query_vector=QV)["library"]["backend"] == "local"
    assert install_report(library)["library_backend"] == {"backend": "local", "source": "default"}
    use_milvus(library, milvus_uri)
    with BookAgent(library) as agent:
        assert agent.search("@all", QUERY, top_k=3, query_vector=QV)["library"]["backend"] == "milvus"
    report = install_report(library)
    backend = report["library_backend"]
    assert backend["backend"] == "milvus" and backend["source"] == "config" and backend["health"] == "ok"
    assert backend["uri"] == milvus_uri and backend["server_version"] and backend["breaker"] == {"state": "closed"}
    assert backend["consistency"]["lease_and_pointer"] == "Strong" and "Bounded" in backend["consistency"][
        "searches_and_terms"]
    assert backend["index"]["dense"] == "FLAT" and "library_backend" not in report["missing"]
    assert backend["index"]["partition_key"] is None  # milvus-lite: its filters refuse partition keys
    use_milvus(library, closed_port_uri(), timeout_s=1.0)
    down = install_report(library)
    assert down["library_backend"]["health"] == "engine.unavailable" and "library_backend" in down["missing"]


def test_a_refused_build_leaks_no_collection_is_rate_limited_and_the_search_degrades(
        library: Path, milvus_uri: str, local_hits: list[str]) -> None:
    """milvus-lite has no HNSW: the vector build is refused as a server lacking sparse vectors
    refuses the lexical one (the real server's slow test runs that one)."""
    from pymilvus import MilvusClient

    prefix = use_milvus(library, milvus_uri, index_type="HNSW")
    with BookAgent(library) as agent:
        first = agent.search("@all", QUERY, top_k=8, query_vector=QV)
        assert first["channels"]["lexical"]["ran"] and first["hits"]
        group = first["library"]["model_groups"][0]
        assert group["search"] == "exact" and "refused" in group["note"]
        for _ in range(3):  # the next searches do not ask the server again
            again = agent.search("@all", QUERY, top_k=8, query_vector=QV)
            assert hit_ids(again) == hit_ids(first)
    # a channel of its own, pinging only in calls: milvus-lite answers an idle shared one's pings with GOAWAY
    client = MilvusClient(uri=milvus_uri, timeout=20, dedicated=True, grpc_options=dict(GRPC_OPTIONS))
    try:
        left = [n for n in client.list_collections() if n.startswith(prefix + "_")]
    finally:
        client.close()
    assert not [n for n in left if "_vec_" in n], left  # the refused epoch was dropped
    markers = list((library / "library").glob("milvus-refused-*.json"))
    assert len(markers) == 1 and json.loads(markers[0].read_text())["attempts"] == 1
