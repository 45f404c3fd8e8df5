from pathlib import Path

import pytest

from book_agent.testing.fakes import sample_candidates
from book_agent.testing.reranker_contract import RerankerContract
from book_agent_adapters.rerankers import create_reranker


class TestTermOverlapContract(RerankerContract):
    @pytest.fixture
    def make_reranker(self, tmp_path: Path):
        # Load it the way book-agent does: by its entry-point name.
        return lambda: create_reranker({"provider": "term-overlap"}, tmp_path)


def test_passages_sharing_more_query_terms_come_first(tmp_path: Path) -> None:
    candidates = sample_candidates(3)
    candidates[2]["text"] = "rivers shape the terrain"
    out = create_reranker({"provider": "custom", "factory": "term-overlap"}, tmp_path).rerank(
        "how rivers shape terrain", candidates, 3
    )
    assert out["rerank_applied"] is True
    assert out["hits"][0]["record_id"] == candidates[2]["record_id"]
    assert out["hits"][0]["scores"]["rerank"] == 3.0
