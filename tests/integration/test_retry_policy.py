"""One retry policy for query encoding and rerank (issue 13, findings 13 and 14), checked
against a real HTTP server on 127.0.0.1: both adapters retry the same statuses the same
number of times, honour Retry-After without shortening it, and read a SiliconFlow 403 as
"this model needs real-name verification", not as a bad key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import NetworkPolicy
from book_agent.testing.fakes import sample_candidates
from book_agent_adapters.encoders.http_encoder import RETRY_STATUSES as ENCODER_STATUSES
from book_agent_adapters.encoders.http_encoder import HttpQueryEncoder
from book_agent_adapters.http.retry_policy import RETRY_STATUSES
from book_agent_adapters.rerankers import create_reranker
from book_agent_adapters.rerankers.http import RETRY_STATUSES as RERANK_STATUSES
from tests.support.loopback import LoopbackServer, Reply

KEY = "sk-retry-policy-secret"
DIMS = 4


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as shared:
        yield shared


@pytest.fixture(autouse=True)
def fresh(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SF_KEY", KEY)
    server.requests.clear()
    yield
    assert not server._queue


def encode(server: LoopbackServer, provider: str = "siliconflow") -> Any:
    url = server.url("/v1/embeddings")
    encoder = HttpQueryEncoder(url, "BAAI/bge-m3", DIMS, NetworkPolicy(True, (url,), "SF_KEY"), provider=provider,
                               client=httpx.Client(trust_env=False), environ={"SF_KEY": KEY}, max_retries=2,
                               backoff=0.0, max_retry_after=1.0)
    try:
        return encoder.encode("rivers")
    except BookAgentError as exc:
        return exc.to_dict()


def rerank(server: LoopbackServer, tmp_path: Path, provider: str = "siliconflow") -> Any:
    url = server.url("/v1/rerank")
    config = {"provider": provider, "endpoint": url, "options": {"timeout": 2.0, "max_retries": 2,
                                                                 "retry_backoff": 0.0, "max_retry_wait": 1.0},
              "network": {"allow_remote_requests": True, "allowed_endpoints": [url], "auth_env": "SF_KEY"}}
    out = create_reranker(config, tmp_path).rerank("rivers", sample_candidates(3), 2)
    return out["error"] if out["error"] else out


def test_both_adapters_share_one_retry_set() -> None:
    assert ENCODER_STATUSES is RERANK_STATUSES is RETRY_STATUSES
    assert {429, 500, 502, 503, 504} == RETRY_STATUSES


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 400, 401, 403, 404, 422])
def test_same_status_same_number_of_requests(server: LoopbackServer, tmp_path: Path, status: int) -> None:
    server.handler = lambda request: Reply(status, {"message": "no"})
    encode(server)
    encoder_requests = len(server.requests)
    server.requests.clear()
    rerank(server, tmp_path)
    assert len(server.requests) == encoder_requests == (3 if status in RETRY_STATUSES else 1)


@pytest.mark.parametrize("status", [429, 503])
def test_retry_then_success_for_both(server: LoopbackServer, tmp_path: Path, status: int) -> None:
    server.queue(Reply(status, {}, headers={"Retry-After": "0"}),
                 Reply(200, {"data": [{"embedding": [0.5] * DIMS}]}))
    assert not isinstance(encode(server), dict)
    server.queue(Reply(status, {}, headers={"Retry-After": "0.01"}),
                 Reply(200, {"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}))
    assert rerank(server, tmp_path)["rerank_applied"] is True
    assert len(server.requests) == 4


def test_a_long_retry_after_stops_both_and_says_how_long(server: LoopbackServer, tmp_path: Path) -> None:
    server.handler = lambda request: Reply(429, {}, headers={"Retry-After": "120"})
    encoded = encode(server)
    reranked = rerank(server, tmp_path)
    assert len(server.requests) == 2  # one each: asking again before 120 s would not honour it
    assert encoded["code"] == "query.rate_limited" and encoded["details"]["retry_after_seconds"] == 120.0
    assert reranked["code"] == "rerank.rate_limited" and reranked["details"]["retry_after_seconds"] == 120.0


def test_a_siliconflow_403_points_at_real_name_verification(server: LoopbackServer, tmp_path: Path) -> None:
    server.handler = lambda request: Reply(403, {"code": 30003, "message": "Model disabled."})
    for error in (encode(server), rerank(server, tmp_path)):
        assert error["code"] in ("query.auth_failed", "rerank.auth_failed")
        assert "real-name verification" in error["remediation"] and "401" in error["remediation"]
        assert KEY not in str(error)


@pytest.mark.parametrize("status", [401, 403])
def test_other_refusals_keep_the_key_remediation(server: LoopbackServer, tmp_path: Path, status: int) -> None:
    server.handler = lambda request: Reply(status, {"message": "no"})
    encoded = encode(server, provider="openai-compatible")
    assert encoded["code"] == "query.auth_failed" and "real-name" not in encoded["remediation"]
    if status == 401:  # a 401 is a key problem, even at SiliconFlow
        assert "real-name" not in encode(server)["remediation"]
        assert "real-name" not in rerank(server, tmp_path)["remediation"]
