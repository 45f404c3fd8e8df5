"""The eval harness on real books: the English and Chinese test books and the example book.

Floors, not exact figures: each set is built so that a channel that stops working (or a
fusion that throws away what one channel found) drops below them. The measured figures are
in contracts/example-book.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from book_agent.agent import BookAgent
from tests.support import REPO_ROOT
from tests.support.eval_books import (
    BOOKS,
    eval_packages,
    load_book,
    minilm_available,
    questions_path,
    records_of,
)

__all__ = ["eval_packages"]  # the session fixture, imported so pytest sees it here

ROOT = REPO_ROOT
EXAMPLE = ROOT / "examples" / "art-of-war-package"
EXAMPLE_QUESTIONS = ROOT / "examples" / "art-of-war.questions.jsonl"


def _questions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", BOOKS)
def test_eval_book_data_is_well_formed(name: str) -> None:
    records = records_of(load_book(name))
    ids = {r.record_id for r in records}
    assert 50 <= len(records) <= 80 and len(ids) == len(records)
    assert all(len(r.text) >= 40 for r in records)
    questions = _questions(questions_path(name))
    assert len(questions) >= 20
    kinds = {q["kind"] for q in questions}
    assert kinds == {"exact", "paraphrase"}
    for q in questions:
        assert set(q["relevant"]) <= ids, q


def test_chinese_book_mixes_simplified_and_traditional() -> None:
    text = "".join(r.text for r in records_of(load_book("chinese")))
    assert "书" in text and "書" in text and "国" in text and "國" in text


def test_example_questions_name_records_of_the_example() -> None:
    import sqlite3

    con = sqlite3.connect(f"file:{EXAMPLE / 'index.sqlite'}?mode=ro", uri=True)
    ids = {row[0] for row in con.execute("SELECT record_id FROM records")}
    con.close()
    questions = _questions(EXAMPLE_QUESTIONS)
    assert len(questions) >= 20
    assert {q["kind"] for q in questions} == {"exact", "paraphrase", "chinese"}
    assert sum(q["lang"].startswith("zh") for q in questions) >= 5
    for q in questions:
        assert set(q["relevant"]) <= ids, q


def _evaluate(data_dir: Path, package: Path, questions: Path) -> dict[str, Any]:
    with BookAgent(data_dir) as agent:
        book_id = agent.init(package)["book_id"]
        return agent.evaluate(book_id, questions, k=10)


def _subset(result: dict[str, Any], questions: Path, kind: str, channel: str) -> float:
    kinds = {q["query"]: q["kind"] for q in _questions(questions)}
    rows = [row[channel]["ndcg@10"] for row in result["per_question"] if kinds[row["query"]] == kind]
    return sum(rows) / len(rows)


def _need_weights() -> None:
    from tests.support.parts import require_real_part

    require_real_part(minilm_available(), "the all-MiniLM-L6-v2 weights")


@pytest.mark.realweights
@pytest.mark.slow
def test_english_book_both_channels_pull_their_weight(tmp_path: Path, eval_packages: dict[str, Path]) -> None:
    result = _evaluate(tmp_path / "data", eval_packages["english"], questions_path("english"))
    s = result["summary"]
    assert result["vector_channel_ran"] == result["questions"]
    assert _subset(result, questions_path("english"), "exact", "lexical") >= 0.8
    assert _subset(result, questions_path("english"), "paraphrase", "vector") >= 0.7
    # the paraphrases are where the vector channel earns its keep
    assert _subset(result, questions_path("english"), "paraphrase", "vector") > \
        _subset(result, questions_path("english"), "paraphrase", "lexical") + 0.15
    assert s["hybrid"]["ndcg@10"] >= 0.75 and s["hybrid"]["recall@k"] >= 0.85


@pytest.mark.realweights
@pytest.mark.slow
def test_chinese_book_is_carried_by_the_lexical_channel(tmp_path: Path, eval_packages: dict[str, Path]) -> None:
    result = _evaluate(tmp_path / "data", eval_packages["chinese"], questions_path("chinese"))
    s = result["summary"]
    assert result["vector_channel_ran"] == result["questions"]
    # MiniLM is an English model: CJK bigrams in the lexical channel do the work
    assert _subset(result, questions_path("chinese"), "exact", "lexical") >= 0.8
    assert s["lexical"]["ndcg@10"] > s["vector"]["ndcg@10"]
    assert s["hybrid"]["ndcg@10"] >= 0.6 and s["hybrid"]["recall@k"] >= 0.75


@pytest.mark.realweights
@pytest.mark.slow
def test_example_book_hybrid_beats_each_channel(tmp_path: Path) -> None:
    _need_weights()
    result = _evaluate(tmp_path / "data", EXAMPLE, EXAMPLE_QUESTIONS)
    s = result["summary"]
    assert result["vector_channel_ran"] == result["questions"]
    assert _subset(result, EXAMPLE_QUESTIONS, "chinese", "lexical") >= 0.8
    assert _subset(result, EXAMPLE_QUESTIONS, "paraphrase", "vector") > \
        _subset(result, EXAMPLE_QUESTIONS, "paraphrase", "lexical")
    assert s["hybrid"]["ndcg@10"] >= max(s["lexical"]["ndcg@10"], s["vector"]["ndcg@10"])
    assert s["hybrid"]["ndcg@10"] >= 0.7 and s["hybrid"]["recall@k"] >= 0.8
