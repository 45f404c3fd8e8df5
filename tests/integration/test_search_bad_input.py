"""Hostile and odd queries: a result or a coded error, never a traceback, and the same hits
for the same query every time (through the real search service on a registered package)."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent import BookAgent
from book_agent.domain.errors import BookAgentError

QUERIES = {
    "punctuation": "?!... ,,; -- !!!",
    "stopwords": "the of and to in what is it",
    "mixed scripts": "2008年北京奥运会 iPhone手机 GDP增长了多少 Deep learning深度学习",
    "4,000 characters": ("water flows downhill and shapes its course " * 100)[:4000],
    "4,000 CJK characters": ("知己知彼百戰不殆" * 500)[:4000],
    "emoji": "🔥💧 water 🌊 战争 🙂",
    "one word repeated": "water " * 600,
    "4,000 characters of repeats and stopwords": ("the water of the ground and the water " * 120)[:4000],
    "scripts in every order": "深度learning学习 deep学习learning 学习 deep 深度 learning深度 ground水ground",
    "fts syntax": 'water NEAR(general) AND "plans* OR -terrain) col:text ^x {a b}',
    "quotes and nulls": 'a"b\'c\x00d',
}


@pytest.fixture
def agent_and_book(tmp_path: Path, epub_package: Path):
    with BookAgent(tmp_path / "data") as agent:
        yield agent, agent.init(epub_package)["book_id"]


@pytest.mark.parametrize("label", sorted(QUERIES))
def test_odd_queries_answer_the_same_way_every_time(agent_and_book, label: str):
    agent, book_id = agent_and_book
    query = QUERIES[label]
    try:
        first = agent.search(book_id, query, top_k=10)
    except BookAgentError as exc:  # a coded error is a valid answer; the same one every time
        with pytest.raises(BookAgentError) as again:
            agent.search(book_id, query, top_k=10)
        assert exc.code and again.value.code == exc.code
        return
    second = agent.search(book_id, query, top_k=10)
    assert [h["evidence_id"] for h in first["hits"]] == [h["evidence_id"] for h in second["hits"]]
    assert [h["scores"] for h in first["hits"]] == [h["scores"] for h in second["hits"]]
    if label == "punctuation":
        assert first["hits"] == [] and first["warnings"]
    if label in ("mixed scripts", "emoji", "fts syntax", "4,000 characters"):
        assert first["channels"]["lexical"]["ran"], first["channels"]["lexical"]
    assert first["fusion"]["passage_reading"] == second["fusion"]["passage_reading"]
    if label in ("one word repeated", "punctuation"):  # fewer than two distinct terms: nothing re-scored
        assert not first["fusion"]["passage_reading"]["applied"]
