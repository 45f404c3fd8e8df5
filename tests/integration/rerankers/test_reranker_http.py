"""The HTTP rerankers against a real loopback server speaking the SiliconFlow rerank API
(and TEI / Jina-style for `local`): request shape, policy, auth, and every bad answer."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.testing.fakes import sample_candidates
from book_agent.testing.reranker_contract import RerankerContract
from book_agent_adapters.rerankers import create_reranker
from book_agent_adapters.rerankers.builtin import create_siliconflow
from tests.support.loopback import Reply
from tests.support.package_builder import tree_fingerprint

KEY = "sk-test-secret-0123456789"
FAST = {"timeout": 0.5, "max_retries": 2, "retry_backoff": 0.0}


def sf_config(url: str, **extra: object) -> dict:
    return {"provider": "siliconflow", "endpoint": url, "options": dict(FAST),
            "network": {"allow_remote_requests": True, "allowed_endpoints": [url], "auth_env": "SF_KEY"},
            **extra}


@pytest.fixture(scope="module")
def shared_server():
    # One server for the module: shutting a LoopbackServer down costs ~0.5 s (poll interval).
    from tests.support.loopback import LoopbackServer

    with LoopbackServer() as server:
        yield server


@pytest.fixture
def server(shared_server, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SF_KEY", KEY)
    shared_server.requests.clear()
    shared_server.handler = lambda request: Reply(404, {"error": "no handler"})
    yield shared_server
    assert not shared_server._queue, "a test left queued replies behind"


def sf_reply(*pairs: tuple[object, object]) -> Reply:
    return Reply(200, {"id": "x", "results": [{"index": i, "relevance_score": s} for i, s in pairs],
                       "tokens": {"input_tokens": 10}})


def rerank(server, tmp_path: Path, reply: Reply | None = None, count: int = 4, top_n: int = 3, **extra):
    if reply is not None:
        server.handler = lambda req: reply
    reranker = create_reranker(sf_config(server.url("/v1/rerank"), **extra), tmp_path)
    return reranker.rerank("rivers and terrain", sample_candidates(count), top_n)


class TestSiliconFlowContract(RerankerContract):
    @pytest.fixture
    def make_reranker(self, server, tmp_path: Path):
        def answer(req):
            docs = req.json["documents"]
            scored = sorted(((len(d), i) for i, d in enumerate(docs)), reverse=True)[: req.json["top_n"]]
            return Reply(200, {"results": [{"index": i, "relevance_score": s / 100} for s, i in scored]})
        server.handler = answer
        return lambda: create_reranker(sf_config(server.url("/v1/rerank")), tmp_path)


def test_success_sends_the_siliconflow_request(server, tmp_path: Path) -> None:
    out = rerank(server, tmp_path, sf_reply((2, 0.91), (0, 0.40), (3, 0.12)))
    assert out["rerank_applied"] is True and out["warnings"] == [] and out["error"] is None
    assert [h["record_id"] for h in out["hits"]] == ["r0003", "r0001", "r0004"]
    assert out["hits"][0]["scores"]["rerank"] == 0.91
    assert out["hits"][0]["rerank"]["model"] == "BAAI/bge-reranker-v2-m3"
    (request,) = server.requests
    assert request.method == "POST" and request.path == "/v1/rerank"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    body = request.json
    assert body == {"model": "BAAI/bge-reranker-v2-m3", "query": "rivers and terrain",
                    "documents": [c["text"] for c in sample_candidates(4)], "top_n": 3,
                    "return_documents": False}


def test_remote_off_makes_no_request(server, tmp_path: Path) -> None:
    config = sf_config(server.url("/v1/rerank"))
    config["network"]["allow_remote_requests"] = False
    out = create_reranker(config, tmp_path).rerank("q", sample_candidates(3), 3)
    assert out["error"]["code"] == "network.remote_not_allowed" and out["rerank_applied"] is False
    assert server.requests == []


@pytest.mark.parametrize("allowed", ["{base}/v1/rerank/", "{base}/v1", "{base}/V1/rerank", ""])
def test_endpoint_must_match_exactly(server, tmp_path: Path, allowed: str) -> None:
    config = sf_config(server.url("/v1/rerank"))
    config["network"]["allowed_endpoints"] = [allowed.format(base=server.base_url)] if allowed else []
    out = create_reranker(config, tmp_path).rerank("q", sample_candidates(3), 3)
    assert out["error"]["code"] == "network.endpoint_not_allowed"
    assert server.requests == []


def test_missing_key_is_reported_without_request(server, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SF_KEY")
    reranker = create_reranker(sf_config(server.url("/v1/rerank")), tmp_path)
    assert reranker.healthcheck()["ok"] is False
    out = reranker.rerank("q", sample_candidates(2), 2)
    assert out["error"]["code"] == "rerank.auth_missing" and server.requests == []


def test_401_is_auth_failed_and_the_key_is_redacted(server, tmp_path: Path) -> None:
    out = rerank(server, tmp_path, Reply(401, {"message": f"Invalid token {KEY}"}))
    assert out["error"]["code"] == "rerank.auth_failed"
    assert KEY not in json.dumps(out) and "***" in json.dumps(out)
    assert len(server.requests) == 1  # no retry on 401
    info = create_reranker(sf_config(server.url("/v1/rerank")), tmp_path).provider_info()
    assert KEY not in json.dumps(info) and info["auth_env"] == "SF_KEY"


def test_429_retries_a_bounded_number_of_times(server, tmp_path: Path) -> None:
    out = rerank(server, tmp_path, Reply(429, {"message": "slow down"}, headers={"Retry-After": "0"}))
    assert out["error"]["code"] == "rerank.rate_limited" and out["rerank_applied"] is False
    assert len(server.requests) == 3  # 1 + max_retries


def test_429_then_success(server, tmp_path: Path) -> None:
    server.queue(Reply(429, {}, headers={"Retry-After": "0"}))
    out = rerank(server, tmp_path, sf_reply((1, 0.5), (0, 0.4), (2, 0.3)))
    assert out["rerank_applied"] is True and len(server.requests) == 2


@pytest.mark.parametrize(("reply", "code"), [
    (Reply(500, {"message": "internal"}), "rerank.provider_error"),
    (Reply(400, {"message": "bad model"}), "rerank.provider_error"),
    (Reply(302, b"", headers={"Location": "http://example.com/"}), "rerank.provider_error"),
    (Reply(200, "{not json"), "rerank.bad_response"),
    (Reply(200, {"data": []}), "rerank.bad_response"),
    (Reply(200, {"results": ["a"]}), "rerank.bad_response"),
    (Reply(200, {"results": [{"relevance_score": 0.5}]}), "rerank.bad_response"),
    (sf_reply((0, 0.5), (9, 0.4)), "rerank.bad_response"),
    (sf_reply((0, 0.5), (-1, 0.4)), "rerank.bad_response"),
    (sf_reply((1, 0.5), (1, 0.4)), "rerank.bad_response"),
    (sf_reply((0, "0.5")), "rerank.bad_response"),
    (sf_reply((0, None)), "rerank.bad_response"),
    (Reply(200, '{"results": [{"index": 0, "relevance_score": NaN}]}'), "rerank.bad_response"),
    (Reply(200, '{"results": [{"index": 0, "relevance_score": Infinity}]}'), "rerank.bad_response"),
    (Reply(200, {"results": [{"index": 0.0, "relevance_score": 0.5}]}), "rerank.bad_response"),
])
def test_bad_answers_keep_the_original_order(server, tmp_path: Path, reply: Reply, code: str) -> None:
    out = rerank(server, tmp_path, reply)
    assert out["error"]["code"] == code
    assert out["rerank_applied"] is False and out["rerank_requested"] is True
    assert out["hits"] == sample_candidates(4)[:3]
    assert out["warnings"] and code in out["warnings"][0]
    with pytest.raises(BookAgentError) as info:
        rerank(server, tmp_path, reply, strict=True)
    assert info.value.code == code


def test_timeout(server, tmp_path: Path) -> None:
    out = rerank(server, tmp_path, Reply(200, {"results": []}, delay=1.5), options={"timeout": 0.2})
    assert out["error"]["code"] == "rerank.timeout" and out["hits"] == sample_candidates(4)[:3]


def test_unreachable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SF_KEY", KEY)
    with __import__("socket").socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1/rerank"
    out = create_reranker(sf_config(url), tmp_path).rerank("q", sample_candidates(2), 2)
    assert out["error"]["code"] == "rerank.unreachable"


def test_fewer_results_than_asked_are_applied_with_a_warning(server, tmp_path: Path) -> None:
    out = rerank(server, tmp_path, sf_reply((3, 0.8)), count=5, top_n=3)
    assert out["rerank_applied"] is True
    assert [h["record_id"] for h in out["hits"]] == ["r0004", "r0001", "r0002"]
    assert out["warnings"][0].startswith("rerank.partial_results")


def test_more_results_than_asked_are_cut(server, tmp_path: Path) -> None:
    out = rerank(server, tmp_path, sf_reply((0, 0.1), (1, 0.2), (2, 0.3), (3, 0.4)), top_n=2)
    assert [h["record_id"] for h in out["hits"]] == ["r0004", "r0003"]


def test_injected_client_with_mock_transport(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SF_KEY", KEY)
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": [{"index": 1, "relevance_score": 3.0}]})

    url = "https://api.siliconflow.cn/v1/rerank"
    with httpx.Client(transport=httpx.MockTransport(handle)) as client:
        reranker = create_siliconflow(sf_config(url), tmp_path, client=client)
        out = reranker.rerank("q", sample_candidates(2), 1)
    assert out["hits"][0]["record_id"] == "r0002" and str(seen[0].url) == url


# -- local ------------------------------------------------------------------------------

def test_local_tei_needs_no_remote_permission(server, tmp_path: Path) -> None:
    server.handler = lambda req: Reply(200, [{"index": 1, "score": 4.2}, {"index": 0, "score": -3.0}])
    reranker = create_reranker({"provider": "local", "endpoint": server.url("/rerank")}, tmp_path)
    out = reranker.rerank("q", sample_candidates(2), 2)
    assert [h["record_id"] for h in out["hits"]] == ["r0002", "r0001"]
    assert out["hits"][1]["scores"]["rerank"] == -3.0  # raw score, not a probability
    assert server.requests[0].json == {"query": "q", "texts": [c["text"] for c in sample_candidates(2)],
                                                "return_text": False}
    assert "Authorization" not in server.requests[0].headers
    assert reranker.provider_info()["api"] == "tei" and reranker.healthcheck()["ok"] is True


def test_local_jina_style(server, tmp_path: Path) -> None:
    server.handler = lambda req: Reply(200, {"results": [{"index": 0, "relevance_score": 0.3}]})
    config = {"provider": "local", "model": "bge", "endpoint": server.url("/v1/rerank")}
    out = create_reranker(config, tmp_path).rerank("q", sample_candidates(3), 1)
    assert out["rerank_applied"] and out["hits"][0]["record_id"] == "r0001"
    assert server.requests[0].json["documents"] and server.requests[0].json["model"] == "bge"


@pytest.mark.parametrize("endpoint", ["http://10.0.0.5:8080/rerank", "http://example.com/rerank",
                                      "http://127.0.0.1.nip.io/rerank", "ftp://127.0.0.1/rerank"])
def test_local_must_be_loopback(tmp_path: Path, endpoint: str) -> None:
    with pytest.raises(BookAgentError) as info:
        create_reranker({"provider": "local", "endpoint": endpoint}, tmp_path)
    assert info.value.code in ("rerank.endpoint_not_loopback", "rerank.config_invalid")


@pytest.mark.parametrize("endpoint", ["http://localhost:1/rerank", "http://127.5.6.7:1/rerank", "http://[::1]:1/rerank"])
def test_loopback_forms_are_accepted(tmp_path: Path, endpoint: str) -> None:
    assert create_reranker({"provider": "local", "endpoint": endpoint}, tmp_path).provider_info()["endpoint"] == endpoint


# -- nothing is written (moved from tests/unit/test_rerankers.py) ---------------------------

def test_reranking_writes_nothing(tmp_path: Path, loopback_server) -> None:
    package = tmp_path / "package"
    runtime = tmp_path / "runtime"
    package.mkdir()
    runtime.mkdir()
    (package / "book.md").write_text("# Book\n")
    loopback_server.handler = lambda req: Reply(200, [{"index": 1, "score": 0.5}, {"index": 0, "score": 0.1}])
    before = tree_fingerprint(tmp_path)
    for config in ({"provider": "none"}, {"provider": "local", "endpoint": loopback_server.url("/rerank")}):
        out = create_reranker(config, runtime).rerank("q", sample_candidates(2), 2)
        assert out["error"] is None
    assert tree_fingerprint(tmp_path) == before
