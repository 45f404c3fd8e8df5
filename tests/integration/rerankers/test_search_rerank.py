"""Search integration of rerankers: over-fetch, rerank, cut to top_k; failures are visible, never faked."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent import BookAgent, BookAgentError
from tests.support.loopback import Reply


@pytest.fixture
def agent(tmp_path: Path, pdf_package: Path):
    with BookAgent(data_dir=tmp_path / "data") as agent:
        agent.init(pdf_package)
        yield agent


def test_without_a_reranker_nothing_is_requested(agent):
    result = agent.search("test-book", "rivers flooding")
    assert result["rerank"] == {"rerank_requested": False, "rerank_applied": False}
    assert all("rerank" not in hit["scores"] for hit in result["hits"])


def test_a_loopback_reranker_reorders_the_fused_candidates(agent, loopback_server):
    def score(request):
        texts = request.json["texts"]
        # the reranker prefers the Chinese record about knowing oneself, wherever fusion put it
        return Reply(200, [{"index": i, "score": (10.0 if "知己知彼" in t else float(i) / 100)} for i, t in enumerate(texts)])

    loopback_server.handler = score
    agent.configure("test-book", reranker="local", reranker_endpoint=loopback_server.url("/rerank"))
    result = agent.search("test-book", "the general battle calculations 知己", top_k=3, query_vector=[0.25] * 16)
    assert result["rerank"]["rerank_requested"] is True and result["rerank"]["rerank_applied"] is True
    assert result["hits"][0]["record_id"] == "r0008"
    assert len(result["hits"]) == 3 and [h["rank"] for h in result["hits"]] == [1, 2, 3]
    assert result["hits"][0]["scores"]["rerank"] == 10.0
    assert "fused" in result["hits"][0]["scores"]  # earlier scores survive
    sent = loopback_server.requests[-1].json["texts"]
    assert len(sent) > 3  # over-fetched before the cut to top_k


def test_a_failing_reranker_keeps_the_fused_order_and_says_so(agent, loopback_server):
    loopback_server.handler = lambda request: Reply(500, {"error": "boom"})
    agent.configure("test-book", reranker="local", reranker_endpoint=loopback_server.url("/rerank"))
    plain = agent.search("test-book", "rivers flooding valleys", top_k=3)
    assert plain["rerank"]["rerank_requested"] is True and plain["rerank"]["rerank_applied"] is False
    assert plain["warnings"]
    assert plain["hits"][0]["record_id"] == "r0003"
    with pytest.raises(BookAgentError) as info:
        agent.search("test-book", "rivers flooding valleys", top_k=3, strict=True, query_vector=[0.25] * 16)
    assert info.value.code == "search.rerank_failed"
