"""Query bigrams weighted by a word segmenter's boundaries (issue 28, item 5): the rule itself,
with a segmenter given as a plain function (the product's is jieba: test_cjk_words.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.search.lexical_text import (
    IN_WORD_BIGRAM_REPEATS,
    MAX_QUERY_TERMS,
    query_terms,
)

WORDS = {"高血压与哪些因素有关": ["高血压", "与", "哪些", "因素", "有关"]}


def by_table(run: str) -> list[str]:
    return WORDS.get(run, list(run))


def test_bigrams_inside_a_word_count_more_than_those_across_words():
    terms = query_terms("高血压与哪些因素有关", segment=by_table)
    inside = ['"高血"', '"血压"', '"哪些"', '"因素"', '"有关"']
    across = ['"压与"', '"与哪"', '"些因"', '"素有"']
    assert all(terms.count(t) == IN_WORD_BIGRAM_REPEATS for t in inside)
    assert all(terms.count(t) == 1 for t in across)
    # the same fragments as without a segmenter, in the same first-seen order: only weights move
    assert list(dict.fromkeys(terms)) == query_terms("高血压与哪些因素有关")


def test_without_a_segmenter_every_cjk_fragment_counts_once():
    terms = query_terms("高血压与哪些因素有关")
    assert len(terms) == len(set(terms))


def test_kana_runs_and_single_characters_are_left_to_the_bigrams():
    def everything_one_word(run: str) -> list[str]:
        return [run]

    assert query_terms("ひらがなです", segment=everything_one_word) == query_terms("ひらがなです")
    assert query_terms("天", segment=everything_one_word) == ['"天"*']


def test_a_segmenter_that_loses_characters_is_ignored():
    assert query_terms("高血压与哪些因素有关", segment=lambda run: ["高血压"]) == query_terms("高血压与哪些因素有关")


def test_latin_words_keep_their_own_repeat_rule():
    assert query_terms("ANSYS 有限元 ANSYS", segment=lambda run: [run]) == [
        '"有限"', '"有限"', '"限元"', '"限元"', '"有限 限元"', '"ansys"']  # repeats of a word: MAX_TERM_REPEATS


@given(st.text(alphabet="兵法孫子水火山川將軍勝敗知己彼戰國家道天地人 abc", max_size=80),
       st.integers(min_value=1, max_value=4))
def test_the_weights_never_change_which_fragments_are_sent(query: str, size: int):
    def chunks(run: str) -> list[str]:
        return [run[i : i + size] for i in range(0, len(run), size)]

    weighted = query_terms(query, segment=chunks)
    assert list(dict.fromkeys(weighted)) == list(dict.fromkeys(query_terms(query)))
    assert len(set(weighted)) <= MAX_QUERY_TERMS


def test_chinese_language_tags() -> None:
    from book_agent.domain.search.lexical_text import is_chinese_language

    assert all(is_chinese_language(t) for t in ("zh", "zh-Hant", "ZH_cn", "zh-Hans-CN", "yue", "zho", "lzh"))
    assert not any(is_chinese_language(t) for t in ("en", "ja", "ko", "", None, 3, "zhx", "x-zh"))
