"""The vector self-check on a real book with the real all-MiniLM-L6-v2: trusted for English
queries, not for Chinese ones (the rules themselves: tests/unit/test_vector_check.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent import BookAgent
from tests.support.eval_books import MODEL, build_eval_book, minilm_available


@pytest.mark.realweights
@pytest.mark.slow
@pytest.mark.parametrize(("book", "script", "trusted"), [("chinese", "cjk", False), ("english", "latin", True)])
def test_minilm_is_trusted_for_english_queries_and_not_chinese_ones(tmp_path: Path, book: str, script: str, trusted: bool):
    from tests.support.parts import require_real_part

    require_real_part(minilm_available(), f"the {MODEL} weights")
    package = build_eval_book(book, tmp_path / "pkg", languages=None)
    with BookAgent(tmp_path / "data") as agent:
        book_id = agent.init(package)["book_id"]
        check = agent.status(book_id)["capabilities"]["vector_search"]["language_evidence"]
        assert check["status"] == "ok" and check["basis"] == "tokenizer", check
        assert check["reads"].get(script, True) is trusted
        query = "用间之法" if script == "cjk" else "what the general plans before the battle"
        weights = agent.search(book_id, query)["fusion"]["weights"]
        assert (weights["vector"] > 0) is trusted


@pytest.mark.realweights
@pytest.mark.slow
def test_a_chinese_query_with_a_latin_term_keeps_the_vector_channel_at_the_latin_share(tmp_path: Path):
    from tests.support.parts import require_real_part

    require_real_part(minilm_available(), f"the {MODEL} weights")
    package = build_eval_book("chinese", tmp_path / "pkg", languages=None)
    with BookAgent(tmp_path / "data") as agent:
        book_id = agent.init(package)["book_id"]
        pure = agent.search(book_id, "用间之法")["fusion"]["weights"]["vector"]
        mixed = agent.search(book_id, "用间之法 Sun Tzu")["fusion"]["weights"]["vector"]
        assert pure == 0.0
        assert 0.0 < mixed < agent.search(book_id, "Sun Tzu spies")["fusion"]["weights"]["vector"]
