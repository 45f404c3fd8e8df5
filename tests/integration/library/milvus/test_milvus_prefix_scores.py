"""On a real Chinese corpus (the committed drcd eval set's passages and questions), the `milvus`
backend's lexical channel scores every record as the local impact index does, one-character CJK
prefixes included (`"年"*`: one pooled count under one idf, prefix_terms.py), and a prefix query
alone as FTS5's bm25() itself does. Split into two books, then one removed: the pooled document
frequencies are the library's, summed over books and lowered when a book leaves."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from book_agent.domain.library import LibraryMember
from book_agent_adapters.book.lexical.fts_lexical_index import build_sidecar
from book_agent_adapters.library.local.lexical.library_lexical_index import SqliteLibraryIndex
from book_agent_adapters.text.fts_terms import FtsTerms
from tests.support import REPO_ROOT, milvus
from tests.support.fts_scores import fts_scores
from tests.support.library_support import index_scores
from tests.support.package_builder import RecordSpec, build_package

DRCD = REPO_ROOT / "eval" / "sets" / "drcd"
PASSAGES = 240
PREFIX_QUESTIONS = 30
SINGLE = ["年", "台", "日", "的", "國", "水"]  # one-character queries: a prefix alone


def jsonl(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def prefix_questions() -> list[str]:
    terms = FtsTerms()
    try:
        return [q["text"] for q in jsonl(DRCD / "queries.jsonl.gz") if terms.query_terms(q["text"])[1]]
    finally:
        terms.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("drcd")
    passages = jsonl(DRCD / "corpus.jsonl.gz")[:PASSAGES]
    recs = [RecordSpec(p["_id"], p["text"], [p["title"]], i // 20) for i, p in enumerate(passages)]
    members = []
    for b, part in enumerate((recs[0::2], recs[1::2])):
        root = build_package(tmp / f"book-{b}", book_id=f"book-{b}", kind="epub", records=part, dims=8,
                             blank_page=False, language="zh")
        members.append(LibraryMember(f"book-{b}", root / "index.sqlite", len(part), f"stamp-{b}"))
    whole = build_package(tmp / "whole", book_id="whole", kind="epub", records=recs, dims=8, blank_page=False,
                          language="zh")
    sidecar = tmp / "sidecar.sqlite"
    build_sidecar(whole / "index.sqlite", sidecar, {"k": "v"})
    return members, sidecar


def scores(index, query: str) -> dict[str, float]:
    return index_scores(index, query, 5000)


def assert_same_scores(got: dict[str, float], want: dict[str, float], query: str) -> None:
    assert want, query
    assert got.keys() == want.keys(), query
    for rid, score in want.items():
        assert got[rid] == pytest.approx(score, rel=2e-6), (query, rid)


def test_prefix_queries_score_on_milvus_as_the_local_index_and_fts5(corpus, milvus_uri, tmp_path) -> None:
    members, sidecar = corpus
    questions = prefix_questions()[:PREFIX_QUESTIONS]
    assert len(questions) == PREFIX_QUESTIONS
    remote = milvus.backend(milvus_uri, tmp_path / "data").lexical
    local = SqliteLibraryIndex(tmp_path / "local")
    # two books, then the second removed: both backends living (the average length frozen at the
    # first build), the pooled document frequencies lowered by the book that left
    for books in (members, members[:1]):
        expected = {"books": ",".join(m.book_id for m in books)}
        local.build(books, expected, None)
        remote.build(books, expected, None)
        assert remote.state(expected).fresh
        for query in [*SINGLE, *questions]:
            want = scores(local, query)
            assert_same_scores(scores(remote, query), want, query)
            if books is members and query in SINGLE:  # the whole corpus as one FTS5 book: the reference
                assert_same_scores({rid.split("#", 1)[1]: s for rid, s in want.items()}, fts_scores(sidecar, query),
                                   query)
