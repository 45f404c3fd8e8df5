"""VisualFallbackPolicy: deterministic rules for recommending the page image."""

from __future__ import annotations

import pytest

from book_agent.domain.visual_fallback import VisualFallbackPolicy

GOOD_HIT = {"text": "The general who wins a battle makes many calculations in his temple before the battle is fought."}


def codes(result: dict[str, object]) -> list[str]:
    return [r["code"] for r in result["reasons"]]  # type: ignore[attr-defined, index]


@pytest.mark.parametrize("query", ["What does Figure 3 show?", "see fig. 2", "the tax table", "a bar chart of grain",
                                   "Which equation gives the rate?", "page layout of chapter 2", "draw the diagram"])
def test_visual_english_queries(query: str) -> None:
    result = VisualFallbackPolicy().evaluate(query, [GOOD_HIT])
    assert result["recommended"] and "query.visual_terms" in codes(result)


@pytest.mark.parametrize("query", ["vegetable soup", "a stable government", "configure the paragraph",
                                   "who wins the battle?", "tablespoon of salt"])
def test_word_boundaries_keep_ordinary_words_out(query: str) -> None:
    result = VisualFallbackPolicy().evaluate(query, [GOOD_HIT])
    assert not result["recommended"], result


@pytest.mark.parametrize("query", ["图3展示了什么", "税率表", "这个公式是什么意思", "供应链示意图", "方程的解", "图表中的数据"])
def test_visual_chinese_queries(query: str) -> None:
    result = VisualFallbackPolicy().evaluate(query, [GOOD_HIT])
    assert result["recommended"] and "query.visual_terms_zh" in codes(result)


@pytest.mark.parametrize("query", ["这表示什么意思", "他试图说服国王", "代表团的意图"])
def test_chinese_false_friends_do_not_trigger(query: str) -> None:
    assert not VisualFallbackPolicy().evaluate(query, [GOOD_HIT])["recommended"]


def test_poorly_extracted_hits() -> None:
    policy = VisualFallbackPolicy()
    assert "hit.text_too_short" in codes(policy.evaluate("rates", [{"text": "x = 3"}]))
    assert "hit.replacement_chars" in codes(policy.evaluate("rates", [{"text": GOOD_HIT["text"] + "\ufffd\ufffd"}]))
    assert "hit.private_use_chars" in codes(policy.evaluate("rates", [{"text": GOOD_HIT["text"] + "\ue000"}]))
    math_soup = "a long line of extracted text where =+ and -= and ^_ and */ are scattered about the page"
    assert "hit.broken_math" in codes(policy.evaluate("rates", [{"text": math_soup}]))
    # a normal Chinese sentence is not "too short": a CJK character carries about a word
    assert not policy.evaluate("用兵", [{"text": "知己知彼，百戰不殆；不知彼而知己，一勝一負。"}])["recommended"]


def test_pages_with_little_text_and_hints() -> None:
    policy = VisualFallbackPolicy()
    assert "page.little_text" in codes(policy.evaluate("rates", [{**GOOD_HIT, "page_text_chars": 12}]))
    assert "page.little_text" in codes(policy.evaluate("rates", [GOOD_HIT], hints={"page_text_chars": 0}))
    assert not policy.evaluate("rates", [{**GOOD_HIT, "page_text_chars": 3000}])["recommended"]
    assert codes(policy.evaluate("rates", [GOOD_HIT], hints={"visual": True})) == ["hint.visual"]
    off = policy.evaluate("Figure 3", [{"text": "\ufffd"}], hints={"visual": False})
    assert not off["recommended"]


def test_deterministic_and_tolerant_of_odd_hits() -> None:
    policy = VisualFallbackPolicy()
    hits = [GOOD_HIT, {"record": {"text": "tiny"}}, "not a dict", {"text": None}]
    first = policy.evaluate("table of rates", hits)  # type: ignore[arg-type]
    assert first == policy.evaluate("table of rates", hits)  # type: ignore[arg-type]
    assert codes(first) == ["query.visual_terms", "hit.text_too_short"]
    assert policy.evaluate("", None) == {"recommended": False, "reasons": []}
