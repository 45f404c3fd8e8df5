"""The reranker contract as a pytest suite. Plug-in authors subclass it:

    from book_agent.testing.reranker_contract import RerankerContract

    class TestMyReranker(RerankerContract):
        @pytest.fixture
        def make_reranker(self, tmp_path):
            return lambda: my_plugin.create({"provider": "mine"}, tmp_path)

`make_reranker` returns a zero-argument callable building a fresh reranker. The suite checks
the result shape, that every candidate field survives, that the caller's dicts are not
mutated, ranks and scores on success, the original order otherwise, and the edge cases
(no candidates, top_n beyond the list, odd texts, a bad top_n).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.ports import Reranker
from book_agent.testing.fakes import sample_candidates
from book_agent_adapters.rerankers.checks import result_problems

QUERY = "how do rivers shape the terrain"


class RerankerContract:
    @pytest.fixture
    def make_reranker(self) -> Callable[[], Any]:
        raise NotImplementedError("override the make_reranker fixture")

    @pytest.fixture
    def reranker(self, make_reranker: Callable[[], Any]) -> Any:
        return make_reranker()

    def test_implements_the_port(self, reranker: Any) -> None:
        assert isinstance(reranker, Reranker)

    @pytest.mark.parametrize(("count", "top_n"), [(6, 3), (6, 6), (3, 10), (1, 1)])
    def test_result_keeps_the_contract(self, reranker: Any, count: int, top_n: int) -> None:
        candidates = sample_candidates(count)
        out = reranker.rerank(QUERY, candidates, top_n)
        assert result_problems(out, candidates, top_n) == []
        json.dumps(out)  # results are data

    def test_does_not_mutate_the_callers_candidates(self, reranker: Any) -> None:
        candidates = sample_candidates(5)
        before = copy.deepcopy(candidates)
        out = reranker.rerank(QUERY, candidates, 5)
        assert candidates == before
        for hit in out["hits"]:
            assert all(hit is not c for c in candidates)
            assert all(hit.get("scores") is not c["scores"] for c in candidates)

    def test_applied_scores_are_ordered_and_ranked(self, reranker: Any) -> None:
        out = reranker.rerank(QUERY, sample_candidates(6), 6)
        if not out["rerank_applied"]:
            pytest.skip("this reranker did not apply (see its error)")
        scored = [h["scores"]["rerank"] for h in out["hits"] if h["rerank"].get("reranked", True)]
        assert scored == sorted(scored, reverse=True)
        assert [h["rank"] for h in out["hits"]] == list(range(1, 7))

    def test_not_applied_keeps_order_and_explains(self, reranker: Any) -> None:
        candidates = sample_candidates(4)
        out = reranker.rerank(QUERY, candidates, 4)
        if out["rerank_applied"]:
            return
        assert out["hits"] == candidates
        assert out["error"] is not None or out["rerank_requested"] is False

    def test_no_candidates(self, reranker: Any) -> None:
        out = reranker.rerank(QUERY, [], 5)
        assert out["hits"] == [] and out["rerank_applied"] is False

    def test_odd_texts_do_not_break_it(self, reranker: Any) -> None:
        candidates = sample_candidates(4)
        candidates[0]["text"] = ""
        candidates[1]["text"] = "知己知彼，百戰不殆 \u0000 \U0001f600"
        candidates[2]["text"] = "x" * 20000
        out = reranker.rerank("", candidates, 4)
        assert result_problems(out, candidates, 4) == []

    @pytest.mark.parametrize("top_n", [0, -1])
    def test_bad_top_n_is_refused(self, reranker: Any, top_n: int) -> None:
        with pytest.raises(BookAgentError):
            reranker.rerank(QUERY, sample_candidates(2), top_n)

    def test_healthcheck_and_provider_info_are_data(self, reranker: Any) -> None:
        health = reranker.healthcheck()
        info = reranker.provider_info()
        assert isinstance(health.get("ok"), bool)
        assert isinstance(info.get("provider"), str) and info["provider"]
        json.dumps(health)
        json.dumps(info)
