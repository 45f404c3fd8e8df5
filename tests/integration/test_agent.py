"""BookAgent: init, resolve, status, prepare (sidecars deleted, corrupted, stale), configure, search."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from book_agent import BookAgent, BookAgentError
from book_agent_adapters.book.runtime_store import RuntimeDirStore
from tests.support.package_builder import build_package

lexical_path = RuntimeDirStore().lexical_path


@pytest.fixture
def agent(tmp_path: Path) -> BookAgent:
    with BookAgent(data_dir=tmp_path / "data") as agent:
        yield agent


def test_init_registers_in_place_and_resolve_returns_the_same(agent, pdf_package):
    result = agent.init(pdf_package)
    assert result["book_id"] == "test-book"
    assert result["package_root"] == str(pdf_package.resolve())
    assert result == agent.resolve("test-book")
    assert Path(result["runtime_dir"]).is_dir()
    assert lexical_path(Path(result["runtime_dir"])).is_file()
    assert [b["book_id"] for b in agent.list_books()] == ["test-book"]


def test_init_is_idempotent_and_replace_is_required_for_another_package(agent, tmp_path, pdf_package):
    agent.init(pdf_package)
    agent.init(pdf_package)  # same package again: fine
    other = build_package(tmp_path / "other", kind="epub")  # same book_id, another folder
    with pytest.raises(BookAgentError) as info:
        agent.init(other)
    assert info.value.code == "book.already_registered" and "--replace" in info.value.remediation
    assert agent.init(other, replace=True)["package_root"] == str(other.resolve())


def test_unknown_book_says_how_to_register(agent):
    with pytest.raises(BookAgentError) as info:
        agent.resolve("nope")
    assert info.value.code == "book.not_registered"
    assert "book-agent init" in info.value.remediation


def test_init_refuses_a_broken_package(agent, pdf_package):
    (pdf_package / "book.md").write_text("changed", encoding="utf-8")
    with pytest.raises(BookAgentError):
        agent.init(pdf_package)
    assert agent.list_books() == []


@pytest.mark.parametrize("damage", ["delete", "corrupt", "stale"])
def test_status_notices_and_prepare_mends_the_lexical_sidecar(agent, pdf_package, damage):
    runtime = Path(agent.init(pdf_package)["runtime_dir"])
    sidecar = lexical_path(runtime)
    if damage == "delete":
        sidecar.unlink()
    elif damage == "corrupt":
        sidecar.write_bytes(b"not sqlite at all" * 50)
    else:
        con = sqlite3.connect(sidecar)
        con.execute("UPDATE meta SET value = 'old-tokenizer' WHERE key = 'tokenizer_version'")
        con.commit()
        con.close()
    state = agent.status("test-book")["sidecars"]["lexical"]
    assert state["fresh"] is False
    result = agent.search("test-book", "rivers")
    assert result["channels"]["lexical"]["ran"] is False and result["warnings"]
    with pytest.raises(BookAgentError) as info:
        agent.search("test-book", "rivers", strict=True)
    assert info.value.code == "search.channel_degraded"
    assert agent.prepare("test-book")["lexical"]["built"] is True
    assert agent.status("test-book")["sidecars"]["lexical"]["fresh"] is True
    assert agent.prepare("test-book")["lexical"]["built"] is False  # idempotent
    assert agent.search("test-book", "rivers")["hits"][0]["record_id"] == "r0003"


def test_a_changed_package_is_noticed_cheaply(agent, pdf_package):
    agent.init(pdf_package)
    path = pdf_package / "book.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nextra", encoding="utf-8")
    with pytest.raises(BookAgentError) as info:
        agent.search("test-book", "rivers")
    assert info.value.code == "package.changed" and "book.md" in info.value.message
    status = agent.status("test-book", verify=True)
    assert status["package"]["healthy"] is False and "book.md" in status["package"]["changed_files"]


def test_search_hit_shape(agent, pdf_package):
    agent.init(pdf_package)
    result = agent.search("test-book", "flooding of valleys", top_k=3)
    assert set(result) >= {"book_id", "query", "hits", "channels", "warnings", "query_representation"}
    hit = result["hits"][0]
    assert hit["rank"] == 1 and hit["record_id"] == "r0003"
    assert hit["evidence_id"] == "test-book#r0003"
    assert hit["source_locator"]["page_index"] == 1
    assert hit["markdown_span"]["end"] > hit["markdown_span"]["start"]
    assert hit["scores"]["lexical"] > 0 and "lexical" in hit["channels"]
    assert result["channels"]["lexical"]["ran"] is True
    json.dumps(result)  # JSON-serialisable


def test_search_rejects_bad_top_k(agent, pdf_package):
    agent.init(pdf_package)
    for bad in (0, -1, 1000):
        with pytest.raises(BookAgentError) as info:
            agent.search("test-book", "x", top_k=bad)
        assert info.value.code == "search.bad_top_k"


def test_configure_writes_a_versioned_config_and_never_a_key(agent, pdf_package, monkeypatch):
    agent.init(pdf_package)
    monkeypatch.setenv("MY_KEY", "sk-secret-value-123")
    result = agent.configure("test-book", allow_remote_requests=True,
                             allowed_endpoints=["https://api.example.com/v1/embeddings"], auth_env="MY_KEY")
    assert result["config"]["version"] == 1
    assert result["config"]["network"]["auth_env"] == "MY_KEY"
    runtime = Path(agent.resolve("test-book")["runtime_dir"])
    assert "sk-secret-value-123" not in (runtime / "config.json").read_text(encoding="utf-8")
    status = agent.status("test-book")
    assert status["config"]["auth_env_set"] is True
    assert "sk-secret-value-123" not in json.dumps(status)
    with pytest.raises(BookAgentError) as info:
        agent.configure("test-book", auth_env="sk-secret-value-123")
    assert info.value.code == "config.bad_auth_env"
    with pytest.raises(BookAgentError):
        agent.configure("test-book", allowed_endpoints=["api.example.com"])
    with pytest.raises(BookAgentError) as info:
        agent.configure("test-book", colour="blue")
    assert info.value.code == "config.unknown_setting"


def test_data_dir_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BOOK_AGENT_HOME", str(tmp_path / "from-env"))
    assert BookAgent().data_dir == (tmp_path / "from-env").resolve()
    assert BookAgent(tmp_path / "explicit").data_dir == (tmp_path / "explicit").resolve()


def test_no_operation_changes_a_byte_of_the_package(agent, pdf_package):
    from tests.support.package_builder import tree_fingerprint

    os.chmod(pdf_package, 0o755)
    before = tree_fingerprint(pdf_package)
    agent.inspect(pdf_package)
    agent.init(pdf_package)
    agent.status("test-book", verify=True)
    agent.prepare("test-book")
    agent.search("test-book", "兵者 國之大事")
    agent.search("test-book", "rivers", top_k=10)
    agent.read_entry("test-book", "r0001")
    assert tree_fingerprint(pdf_package) == before


def test_status_says_whether_queries_can_be_encoded_and_how_to_fix_it(agent, tmp_path, monkeypatch):
    remote = build_package(tmp_path / "remote", book_id="remote-book", kind="epub", provider="siliconflow",
                           model="BAAI/bge-m3", dims=8)
    agent.init(remote)
    capability = agent.status("remote-book")["capabilities"]["vector_search"]
    assert capability["available"] is False  # remote off by default, and the model is not here
    assert "allow-remote" in capability["query_encoding"]["remediation"]
    endpoint = "https://api.siliconflow.cn/v1/embeddings"
    agent.configure("remote-book", allow_remote_requests=True, allowed_endpoints=[endpoint], auth_env="QA_KEY")
    monkeypatch.delenv("QA_KEY", raising=False)
    capability = agent.status("remote-book")["capabilities"]["vector_search"]
    assert capability["available"] is False and "QA_KEY" in capability["query_encoding"]["remediation"]
    monkeypatch.setenv("QA_KEY", "secret-value")
    capability = agent.status("remote-book")["capabilities"]["vector_search"]
    assert capability["available"] is True and capability["query_encoding"]["routes"][0].startswith("remote:")
    assert "secret-value" not in json.dumps(agent.status("remote-book"))


def test_empty_and_wordless_queries(agent, pdf_package):
    agent.init(pdf_package)
    with pytest.raises(BookAgentError) as info:
        agent.search("test-book", "   ")
    assert info.value.code == "search.empty_query"
    result = agent.search("test-book", "?!.,;: 🔥⚔️", strict=True)
    assert result["hits"] == [] and result["warnings"]
    assert result["channels"]["vector"]["status"] == "skipped"


def test_configure_refuses_what_cannot_work_and_notes_what_will_not_apply(agent, pdf_package):
    agent.init(pdf_package)
    with pytest.raises(BookAgentError) as info:
        agent.configure("test-book", reranker="no-such-reranker")
    assert info.value.code == "rerank.unknown_provider"
    assert agent.resolve("test-book")["config"]["reranker"]["provider"] == "none"  # nothing saved
    with pytest.raises(BookAgentError) as info:
        agent.configure("test-book", allow_remote_requests=True, allowed_endpoints=["http://api.example.com/v1/x"])
    assert info.value.code == "config.insecure_endpoint"
    local_ok = agent.configure("test-book", allowed_endpoints=["http://127.0.0.1:9999/rerank"])
    assert local_ok["config"]["network"]["allowed_endpoints"] == ["http://127.0.0.1:9999/rerank"]
    noted = agent.configure("test-book", allow_remote_requests=True)
    assert any("encoded locally" in note for note in noted["notes"])  # this book's vectors are local
    reset = agent.configure("test-book", reset=True)
    assert reset["config"]["network"] == {"allow_remote_requests": False, "allowed_endpoints": [], "auth_env": None}


def test_replacing_an_imported_package_removes_the_old_copy(agent, tmp_path, epub_package):
    import zipfile

    def zip_of(root, name):
        archive = tmp_path / name
        with zipfile.ZipFile(archive, "w") as z:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    z.write(path, str(path.relative_to(root)))
        return archive

    first = Path(agent.init(zip_of(epub_package, "one.zip"))["package_root"])
    other = build_package(tmp_path / "other", kind="epub", title="Another Edition")
    with pytest.raises(BookAgentError):
        agent.init(zip_of(other, "two.zip"))  # same book_id, no --replace
    assert len(list((agent.data_dir / "packages").iterdir())) == 1  # the refused copy is gone
    second = Path(agent.init(zip_of(other, "two.zip"), replace=True)["package_root"])
    assert second != first and not first.exists() and second.exists()
    assert agent.remove("test-book")["imported_copy_removed"] is True
    assert not second.exists()
