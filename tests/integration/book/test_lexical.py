"""The lexical channel: CJK segmentation, stemming, stopwords, and queries that are never syntax."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from book_agent.domain.search.lexical_text import (
    MAX_QUERY_TERMS,
    MAX_TERM_REPEATS,
    cjk_tokens,
    index_text,
    query_terms,
)
from book_agent_adapters.book.lexical.fts_lexical_index import (
    FtsLexicalIndex,
    build_sidecar,
    read_stamp,
)
from tests.support.package_builder import RecordSpec, build_package

RECORDS = [
    RecordSpec("zh1", "在古代的戰爭中，將軍們經常研究兵法以求勝利，並且重視後勤與地形。", ["中文"], 0),
    RecordSpec("zh2", "今天的天氣很好，我們去公園散步，看見很多人在跑步。", ["中文"], 0),
    RecordSpec("ja1", "東京の図書館で日本語の本を読みました。とても面白かったです。", ["日本語"], 0),
    RecordSpec("en1", "The generals were running through the valleys while the armies marched.", ["English"], 1),
    RecordSpec("en2", "A quiet garden where the flowers bloom in spring and the bees hum.", ["English"], 1),
    RecordSpec("en3", "The the the of of and and to to in in the a a an.", ["English"], 1),
    RecordSpec("mix", "Deep learning（深度学习）需要大量数据 and careful regularisation.", ["Mixed"], 2),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> FtsLexicalIndex:
    root = build_package(tmp_path_factory.mktemp("lex") / "pkg", kind="epub", records=RECORDS)
    sidecar = tmp_path_factory.mktemp("runtime") / "lexical.sqlite"
    build_sidecar(root / "index.sqlite", sidecar, {"tokenizer_version": "test"})
    idx = FtsLexicalIndex(sidecar)
    yield idx
    idx.close()


def ids(index: FtsLexicalIndex, query: str, k: int = 5) -> list[str]:
    return [h.record_id for h in index.search(query, k)]


def test_cjk_run_becomes_bigrams_and_a_trailing_unigram():
    assert cjk_tokens("兵法書") == ["兵法", "法書", "書"]
    assert "兵法" in index_text("研究兵法以求").split()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("兵法", "zh1"),  # a two-character word inside a long sentence
        ("後勤", "zh1"),
        ("散步", "zh2"),
        ("兵", "zh1"),  # one character: the prefix fallback
        ("利", "zh1"),  # one character that ends a run (found through the trailing unigram)
        ("図書館", "ja1"),
        ("深度学习", "mix"),
        ("将军们研究兵法吗", "zh1"),  # a question without spaces: bigrams OR-ed (simplified vs traditional aside)
    ],
)
def test_chinese_and_japanese_are_found(index, query, expected):
    assert ids(index, query)[:1] == [expected]


def test_english_matches_word_forms(index):
    assert ids(index, "run")[:1] == ["en1"]  # running -> run (porter)
    assert ids(index, "march")[:1] == ["en1"]  # marched


def test_common_words_do_not_swamp_the_ranking(index):
    assert ids(index, "the flowers of the garden")[:1] == ["en2"]
    assert "en3" not in ids(index, "the flowers of the garden", 2)
    assert query_terms("the flowers of the garden") == ['"flowers"', '"garden"']
    assert query_terms("the of") == ['"the"', '"of"']  # all stopwords: keep them rather than nothing


def test_a_repeated_content_word_counts_up_to_the_repeat_limit_and_stopwords_never(monkeypatch):
    from book_agent.domain.search import lexical_text

    query = "the garden, the Garden and the GARDEN of flowers"
    assert query_terms(query) == ['"garden"'] * min(3, MAX_TERM_REPEATS) + ['"flowers"']
    monkeypatch.setattr(lexical_text, "MAX_TERM_REPEATS", 8)
    assert query_terms(query) == ['"garden"'] * 3 + ['"flowers"']
    assert query_terms("flower " * 100) == ['"flower"'] * 8  # capped, not dropped
    assert query_terms("兵法 兵法") == ['"兵法"']  # CJK fragments stay distinct (chosen on dev, contracts/search.md)


@pytest.mark.parametrize(
    "query",
    ['"', '""', "*", "NEAR(a b)", "a AND b", "a OR", "-x", "col:val", "((", ")", "^start", "😀🎉",
     "NOT", "a NEAR/2 b", "'; DROP TABLE records; --", "x" * 10_000, "兵" * 5000, "\x00\x01", "   ", ""],
)
def test_query_text_is_never_fts_syntax(index, query):
    hits = index.search(query, 5)
    assert isinstance(hits, list)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_any_text_is_a_safe_query(index, query):
    index.search(query, 3)  # raises on an SQL/FTS syntax error


def test_long_query_is_capped_and_fast(index):
    import time

    long_query = " ".join(f"word{i}" for i in range(3000))
    started = time.perf_counter()
    index.search(long_query, 5)
    assert len(query_terms(long_query)) == MAX_QUERY_TERMS
    assert time.perf_counter() - started < 2.0  # generous: guards against a runaway, not a benchmark


def test_stamp_is_written_and_a_corrupt_sidecar_reads_as_none(index, tmp_path: Path):
    stamp = read_stamp(index.path)
    assert stamp is not None and stamp["tokenizer_version"] == "test" and stamp["record_count"] == str(len(RECORDS))
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 100)
    assert read_stamp(bad) is None


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> FtsLexicalIndex:
    from tests.support.package_builder import synthetic_records

    root = build_package(tmp_path_factory.mktemp("big") / "pkg", kind="epub", vectors="none",
                         records=synthetic_records(2500, cjk_share=0.1))
    sidecar = tmp_path_factory.mktemp("big-runtime") / "lexical.sqlite"
    build_sidecar(root / "index.sqlite", sidecar, {"tokenizer_version": "test"})
    idx = FtsLexicalIndex(sidecar)
    yield idx
    idx.close()


def test_a_long_question_finds_its_passage(big_index):
    from tests.support.package_builder import synthetic_records

    source = synthetic_records(2500, cjk_share=0.1)[1234]
    words = [w for w in source.text.rstrip(".").split() if w][:30]
    assert [h.record_id for h in big_index.search(" ".join(words), 5)][:1] == [source.record_id]


@pytest.mark.parametrize(("query", "expected"), [("战争", "zh1"), ("后勤", "zh1"), ("公园", "zh2"), ("天气", "zh2")])
def test_simplified_queries_find_traditional_text(index, query, expected):
    # the records hold 戰爭, 後勤, 公園 and 天氣 (traditional forms)
    assert ids(index, query)[:1] == [expected]


def test_folding_leaves_latin_text_alone():
    from book_agent_adapters.text.cjk_fold import fold_chinese

    assert fold_chinese("Running rivers") == "Running rivers"
    assert fold_chinese("用間") == "用间"
