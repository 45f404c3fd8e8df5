"""Rerankers without the network: config shapes, the none provider, the result rules,
the scoring base (failure, strict, partial results) and the contract suite on the fakes."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.domain.errors import BookAgentError
from book_agent.testing.fakes import FakeReranker, sample_candidates
from book_agent.testing.reranker_contract import RerankerContract
from book_agent_adapters.rerankers import ScoringReranker, create_reranker, parse_config, results
from book_agent_adapters.rerankers.checks import result_problems


class TestNoneContract(RerankerContract):
    @pytest.fixture
    def make_reranker(self, tmp_path: Path):
        return lambda: create_reranker({"provider": "none"}, tmp_path)


class TestFakeContract(RerankerContract):
    @pytest.fixture
    def make_reranker(self):
        return lambda: FakeReranker()


class TestFailingFakeContract(RerankerContract):
    @pytest.fixture
    def make_reranker(self):
        return lambda: FakeReranker(fail_with=BookAgentError("rerank.timeout", "too slow"))


# -- config ---------------------------------------------------------------------------

def test_config_shapes_agree() -> None:
    network = {"allow_remote_requests": True, "allowed_endpoints": ["http://127.0.0.1:1/v1/rerank"],
               "auth_env": "KEY"}
    flat = parse_config({"provider": "SiliconFlow", "model": "m", "network": network, "strict": True})
    top_level = parse_config({"provider": "siliconflow", "model": "m", "strict": True, **network})
    runtime = parse_config({"version": 1, "network": network, "strict": True,
                            "reranker": {"provider": "siliconflow", "model": "m"}})
    model = parse_config(RuntimeConfig.from_dict({"network": network, "reranker": {"provider": "siliconflow", "model": "m"}}))
    assert flat == top_level == runtime
    assert model.provider == "siliconflow" and model.network == flat.network and model.strict is False
    assert flat.network.allowed_endpoints == ("http://127.0.0.1:1/v1/rerank",)
    assert parse_config(None).provider == "none"


@pytest.mark.parametrize("config", [
    {"provider": "none", "modle": "typo"},
    {"provider": 3},
    {"provider": "local", "options": []},
    {"reranker": {"provider": "none"}, "extra": 1},
    {"provider": "siliconflow", "allowed_endpoints": "http://one"},
    "none",
])
def test_bad_config_is_refused(config: object) -> None:
    with pytest.raises(BookAgentError) as info:
        parse_config(config)
    assert info.value.code == "rerank.config_invalid"


def test_wrong_option_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BookAgentError) as info:
        create_reranker({"provider": "local", "endpoint": "http://127.0.0.1:9/rerank",
                         "options": {"timeout": "fast"}}, tmp_path)
    assert info.value.code == "rerank.config_invalid"


def test_custom_without_factory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BookAgentError) as info:
        create_reranker({"provider": "custom"}, tmp_path)
    assert info.value.code == "rerank.config_invalid"


# -- none -----------------------------------------------------------------------------

def test_none_keeps_order_and_copies(tmp_path: Path) -> None:
    candidates = sample_candidates(5)
    out = create_reranker(None, tmp_path).rerank("q", candidates, 3)
    assert out == {"hits": candidates[:3], "rerank_requested": False, "rerank_applied": False,
                   "warnings": [], "error": None}
    out["hits"][0]["scores"]["fused"] = 99
    assert candidates[0]["scores"]["fused"] != 99


# -- applied results ------------------------------------------------------------------

def test_applied_hits_gain_rank_score_and_metadata() -> None:
    candidates = sample_candidates(4)
    before = copy.deepcopy(candidates)
    scores = {"r0001": 0.1, "r0002": 2.5, "r0003": -1.0, "r0004": 0.7}
    out = FakeReranker(scores=scores).rerank("q", candidates, 3)
    assert candidates == before
    assert out["rerank_applied"] and out["rerank_requested"] and out["error"] is None
    assert [h["record_id"] for h in out["hits"]] == ["r0002", "r0004", "r0001"]
    first = out["hits"][0]
    assert first["rank"] == 1 and first["scores"]["rerank"] == 2.5
    assert first["scores"]["fused"] == before[1]["scores"]["fused"]
    assert first["rerank"]["provider"] == "fake" and first["rerank"]["original_rank"] == 2
    assert first["rerank"]["model"] == "fake-model" and first["rerank"]["latency_ms"] >= 0
    for key in ("evidence_id", "text", "headings", "source_locator", "markdown_span", "channels"):
        assert first[key] == before[1][key]
    assert result_problems(out, candidates, 3) == []


def test_ties_keep_the_original_order() -> None:
    out = FakeReranker(scores={f"r000{i}": 1.0 for i in range(1, 5)}).rerank("q", sample_candidates(4), 4)
    assert [h["record_id"] for h in out["hits"]] == ["r0001", "r0002", "r0003", "r0004"]


def test_fewer_scores_than_asked_fill_in_original_order() -> None:
    candidates = sample_candidates(5)
    out = results.applied(candidates, [(3, 0.9), (1, 0.2)], 4, {"provider": "p", "model": None, "latency_ms": 1.0})
    assert [h["record_id"] for h in out["hits"]] == ["r0004", "r0002", "r0001", "r0003"]
    assert out["rerank_applied"] is True
    assert out["warnings"] and out["warnings"][0].startswith("rerank.partial_results")
    filled = out["hits"][2]
    assert filled["rerank"]["reranked"] is False and "rerank" not in filled["scores"]
    assert result_problems(out, candidates, 4) == []


@pytest.mark.parametrize(("scored", "problem"), [
    ([(0, 1.0), (0, 0.5)], "twice"),
    ([(7, 1.0)], "out of range"),
    ([(-1, 1.0)], "out of range"),
    ([(None, 1.0)], "integer index"),
    ([(True, 1.0)], "integer index"),
    ([(0, "high")], "finite"),
    ([(0, math.nan)], "finite"),
    ([(0, math.inf)], "finite"),
    ([(0, None)], "finite"),
])
def test_bad_scores_are_refused(scored: list, problem: str) -> None:
    with pytest.raises(BookAgentError) as info:
        results.validate_scored(scored, 3)
    assert info.value.code == "rerank.bad_response" and problem in info.value.message


# -- failures -------------------------------------------------------------------------

class Exploding(ScoringReranker):
    provider = "exploding"

    def score(self, query, texts, top_n):
        raise RuntimeError("boom")


def test_failure_keeps_original_order_with_error_and_warning() -> None:
    candidates = sample_candidates(4)
    out = FakeReranker(fail_with=BookAgentError("rerank.timeout", "too slow", remediation="wait")).rerank("q", candidates, 3)
    assert out["hits"] == candidates[:3]
    assert out["rerank_requested"] is True and out["rerank_applied"] is False
    assert out["error"]["code"] == "rerank.timeout" and out["error"]["remediation"] == "wait"
    assert len(out["warnings"]) == 1 and "rerank.timeout" in out["warnings"][0]
    json.dumps(out)


def test_a_scorer_bug_is_a_failure_not_a_crash() -> None:
    out = Exploding().rerank("q", sample_candidates(2), 2)
    assert out["rerank_applied"] is False and out["error"]["code"] == "rerank.plugin_failed"
    assert "boom" in out["error"]["message"]


def test_strict_mode_raises() -> None:
    with pytest.raises(BookAgentError) as info:
        FakeReranker(fail_with=BookAgentError("rerank.timeout", "too slow"), strict=True).rerank("q", sample_candidates(2), 2)
    assert info.value.code == "rerank.timeout"
    strict = Exploding()
    strict.strict = True
    with pytest.raises(BookAgentError, match="boom"):
        strict.rerank("q", sample_candidates(2), 2)


@pytest.mark.parametrize("bad", [("q", "not a list", 2), ("q", [1, 2], 2), ("q", [], True), ("q", [], 1.5)])
def test_caller_mistakes_raise_in_every_mode(bad: tuple) -> None:
    with pytest.raises(BookAgentError) as info:
        FakeReranker().rerank(*bad)
    assert info.value.code == "rerank.invalid_request"


