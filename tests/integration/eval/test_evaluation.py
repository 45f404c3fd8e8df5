"""The eval harness: metrics by hand, bad question files, and the report through BookAgent."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from book_agent import BookAgent, BookAgentError
from book_agent.domain.search.metrics import grades, mrr_at_k, ndcg_at_k, recall_at_k
from tests.support.cli_support import run_cli
from tests.support.loopback import Reply


def test_metrics_match_hand_computed_values():
    relevant = grades({"a": 2, "b": 1})
    ranking = ["x", "a", "y", "b"]
    assert recall_at_k(ranking, relevant, 2) == 0.5
    assert mrr_at_k(ranking, relevant) == 0.5
    dcg = 3 / math.log2(3) + 1 / math.log2(5)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(ranking, relevant) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "b"], relevant) == pytest.approx(1.0)
    assert ndcg_at_k(["x"], relevant) == 0.0
    assert grades(["a", "b"]) == {"a": 1.0, "b": 1.0}


@pytest.fixture
def agent(tmp_path: Path, pdf_package: Path):
    with BookAgent(data_dir=tmp_path / "data") as agent:
        agent.init(pdf_package)
        yield agent


def write_questions(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def test_report_has_each_channel_side_by_side(agent, tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", [
        {"query": "flooding of valleys", "relevant": ["r0003"]},
        {"query": "知己知彼", "relevant": {"r0008": 2}},
        {"query": "tax rates for each province", "relevant": ["r0006"], "query_vector": [0.1] * 16},
    ])
    report = agent.evaluate("test-book", questions, k=5)
    assert report["questions"] == 3 and set(report["summary"]) == {"lexical", "vector", "plain-rrf", "ragflow-rule", "hybrid"}
    assert report["summary"]["lexical"]["mrr@10"] == 1.0
    assert report["vector_channel_ran"] == 1  # only the question with a supplied vector
    assert len(report["per_question"]) == 3


def test_a_configured_reranker_adds_a_column(agent, tmp_path, loopback_server):
    loopback_server.handler = lambda request: Reply(200, [{"index": i, "score": -i} for i, _ in enumerate(request.json["texts"])])
    agent.configure("test-book", reranker="local", reranker_endpoint=loopback_server.url("/rerank"))
    questions = write_questions(tmp_path / "q.jsonl", [{"query": "rivers", "relevant": ["r0003"]}])
    report = agent.evaluate("test-book", questions)
    assert "hybrid+rerank" in report["summary"] and report["rerank_applied"] == 1


@pytest.mark.parametrize("content", ["", "not json\n", '{"query": "q"}\n', '["a list"]\n'])
def test_bad_question_files_are_refused_with_a_fix(agent, tmp_path, content):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BookAgentError) as info:
        agent.evaluate("test-book", path)
    assert info.value.code == "eval.bad_questions" and info.value.remediation


def test_cli_eval_json(agent, tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", [{"query": "rivers", "relevant": ["r0003"]}])
    out = run_cli("--data-dir", str(agent.data_dir), "eval", "test-book", str(questions), "--json")
    assert out.code == 0, out.stderr
    assert out.json["summary"]["hybrid"]["ndcg@10"] == 1.0


def test_relevant_ids_missing_from_the_book_are_reported(agent, tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", [{"query": "rivers", "relevant": ["r0003", "nope"]}])
    report = agent.evaluate("test-book", questions)
    assert report["unknown_relevant_ids"] == ["nope"] and report["warnings"]
