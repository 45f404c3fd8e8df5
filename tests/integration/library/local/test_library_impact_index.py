"""The library's impact index ranks as FTS5's bm25() ranks one book holding the same records.

Real package databases (tests/support/package_builder), a real FTS5 sidecar built the way a
book's own lexical index is built, and the library index built from the same records split
into books: every word query's hits and scores must agree (the impact index is FTS5's formula
with library-wide statistics, so a split corpus scores exactly as the whole).
"""

from __future__ import annotations

import random
import sqlite3
import threading
from pathlib import Path

import pytest

from book_agent.domain.library import LibraryMember
from book_agent_adapters.book.lexical.fts_lexical_index import FtsLexicalIndex, build_sidecar
from book_agent_adapters.library.local.lexical.library_lexical_index import (
    TERMS_DIR,
    SqliteLibraryIndex,
)
from tests.support.fts_scores import fts_scores
from tests.support.mixed_records import mixed_records
from tests.support.package_builder import RecordSpec, build_package


def records(n: int, seed: int) -> list[RecordSpec]:
    return mixed_records(n, seed)


def members_of(tmp_path: Path, recs: list[RecordSpec], books: int) -> list[LibraryMember]:
    out = []
    for b in range(books):
        part = recs[b::books]
        root = build_package(tmp_path / f"book-{b}", book_id=f"book-{b}", kind="epub", records=part, dims=8,
                             blank_page=False)
        out.append(LibraryMember(f"book-{b}", root / "index.sqlite", len(part), f"stamp-{b}"))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("impact")
    recs = records(400, seed=3)
    whole = members_of(tmp / "whole", recs, 1)[0]
    sidecar = tmp / "sidecar.sqlite"
    build_sidecar(whole.database_path, sidecar, {"k": "v"})
    split = members_of(tmp / "split", recs, 3)
    index = SqliteLibraryIndex(tmp / "library")
    index.build(split, {"books": "three"}, None)
    return sidecar, index, split, recs


def search(index: SqliteLibraryIndex, query: str, top_k: int, book_ids: list[str] | None = None) -> list:
    lexical = index.open()
    try:
        return lexical.search(query, top_k, book_ids)
    finally:
        lexical.close()


QUERIES = ["river water", "running battles", "the general of the army", "café naive", "2008", "兵法", "孫子兵法",
           "將軍 water", "天", "grain tribute tax province", "siege OR wall", '"quoted" -minus NEAR(x)', "x86 harvest",
           # repeats and words of one stem count once per fragment, as FTS5 counts them
           "river river river water", "running runs run battle", "water " * 20 + "river",
           # a long Chinese run: its in-word bigrams count twice (jieba's words), in both indexes
           "兵法將軍勝敗知己彼戰國家"]


@pytest.mark.parametrize("query", [q for q in QUERIES if q not in ("孫子兵法", "天")])
def test_word_queries_score_exactly_as_fts5_over_the_whole_corpus(corpus, query):
    sidecar, index, _, recs = corpus
    expected = fts_scores(sidecar, query)
    found = search(index, query, len(recs))
    got = {hit.record_id.split("#", 1)[1]: hit.score for hit in found}
    assert got.keys() == expected.keys()
    for rid, score in expected.items():
        assert got[rid] == pytest.approx(score, rel=1e-5), rid


@pytest.mark.parametrize("query", ["孫子兵法", "天"])
def test_phrase_and_prefix_queries_find_what_fts5_finds_and_rank_alike(corpus, query):
    """A CJK phrase adds its adjacency bonus in FTS5 only, and a one-character prefix sums
    its terms' counts: the same records are found, the top ranks mostly agree."""
    sidecar, index, _, _ = corpus
    expected = fts_scores(sidecar, query)
    got = [hit.record_id.split("#", 1)[1] for hit in search(index, query, 400)]
    assert set(got) == set(expected)
    best = sorted(expected, key=lambda rid: -expected[rid])[:10]
    assert len(set(got[:10]) & set(best)) >= 8


def test_hits_are_evidence_ids_and_the_sidecar_agrees_on_the_order(corpus):
    sidecar, index, _, _ = corpus
    hits = search(index, "river water", 5)
    ours = [h.record_id for h in hits]
    assert all(h.startswith("book-") and "#r" in h for h in ours)
    book = FtsLexicalIndex(sidecar)
    theirs = [h.record_id for h in book.search("river water", 5)]
    book.close()
    assert [h.split("#", 1)[1] for h in ours] == theirs


def test_a_book_filter_narrows_hits_not_statistics(corpus):
    _, index, _, _ = corpus
    everything = search(index, "grain tax", 400)
    narrowed = search(index, "grain tax", 400, ["book-1"])
    assert narrowed and all(h.record_id.startswith("book-1#") for h in narrowed)
    assert [(h.record_id, h.score) for h in narrowed] == [
        (h.record_id, h.score) for h in everything if h.record_id.startswith("book-1#")]
    assert search(index, "grain tax", 10, ["no-such-book"]) == []


def test_queries_without_terms_or_unknown_terms_find_nothing(corpus):
    _, index, _, _ = corpus
    for query, top_k in [("", 10), ("!!! ???", 10), ("zyxwvut", 10), ("river", 0)]:
        assert search(index, query, top_k) == []


def test_concurrent_searches_from_threads_agree(corpus):
    _, index, _, _ = corpus
    lexical = index.open()
    expected = {q: lexical.search(q, 10) for q in QUERIES}
    problems: list[str] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(30):
            q = rng.choice(QUERIES)
            if lexical.search(q, 10) != expected[q]:
                problems.append(q)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lexical.close()
    assert problems == []


def test_counts_are_cached_per_book_and_a_new_book_counts_only_itself(tmp_path):
    recs = records(120, seed=5)
    members = members_of(tmp_path, recs, 3)
    index = SqliteLibraryIndex(tmp_path / "library")
    index.build(members[:2], {"books": "two"}, None)
    cached = sorted((tmp_path / "library" / TERMS_DIR).glob("*.npz"))
    assert len(cached) == 2
    before = {p: p.stat().st_mtime_ns for p in cached}
    seen: list[tuple[int, int]] = []
    index.build(members, {"books": "three"}, lambda done, total: seen.append((done, total)))
    after = sorted((tmp_path / "library" / TERMS_DIR).glob("*.npz"))
    assert len(after) == 3 and all(p.stat().st_mtime_ns == before[p] for p in cached)
    assert seen[-1] == (40, 40)  # the added book alone is counted and written (its own postings)
    assert len(list((tmp_path / "library").glob("lexical-delta-*.sqlite"))) == 1
    index.build(members[1:], {"books": "later two"}, None)  # a removed book's counts are dropped
    assert len(list((tmp_path / "library" / TERMS_DIR).glob("*.npz"))) == 2


def test_a_corrupt_count_cache_is_counted_again(tmp_path):
    members = members_of(tmp_path, records(60, seed=9), 2)
    index = SqliteLibraryIndex(tmp_path / "library")
    index.build(members, {"books": "a"}, None)
    expected = search(index, "river water", 10)
    for path in (tmp_path / "library" / TERMS_DIR).glob("*.npz"):
        path.write_bytes(b"not a zip")
    index.build(members, {"books": "b"}, None)
    assert search(index, "river water", 10) == expected


def test_an_index_of_the_older_fts_format_is_stale(tmp_path):
    members = members_of(tmp_path, records(30, seed=2), 1)
    index = SqliteLibraryIndex(tmp_path / "library")
    index.build(members, {"books": "x"}, None)
    con = sqlite3.connect(index.path)
    con.execute("DELETE FROM meta WHERE key = 'format'")
    con.commit()
    con.close()
    assert index.state({"books": "x"}).fresh is False
    index.build(members, {"books": "x"}, None)
    assert index.state({"books": "x"}).fresh is True


def test_an_empty_library_builds_an_index_that_finds_nothing(tmp_path):
    index = SqliteLibraryIndex(tmp_path / "library")
    assert index.build([], {"books": ""}, None) == 0
    assert search(index, "river", 10) == []


def test_a_reader_keeps_its_index_through_a_rebuild_and_old_postings_are_dropped(tmp_path):
    members = members_of(tmp_path, records(90, seed=4), 3)
    index = SqliteLibraryIndex(tmp_path / "library")
    index.build(members, {"books": "three"}, None)
    reader = index.open()
    before = reader.search("river water", 10)
    first_postings = sorted(p.name for p in (tmp_path / "library").glob("postings-*.npy"))
    index.build(members[:1], {"books": "one"}, None)  # two removed while the reader holds the generation
    assert reader.search("river water", 10) == before
    assert all(h.record_id.startswith("book-0#") for h in search(index, "river water", 10))  # at once
    index.compact(members[:1], {"books": "one"}, None)  # the base replaced while the reader holds it
    assert reader.search("river water", 10) == before
    reader.close()
    after = sorted(p.name for p in (tmp_path / "library").glob("postings-*.npy"))
    assert len(after) == 2 and not set(after) & set(first_postings)
    assert all(h.record_id.startswith("book-0#") for h in search(index, "river water", 10))


def test_a_data_dir_where_the_index_cannot_be_rebuilt_is_a_coded_error(tmp_path):
    from book_agent.domain.errors import BookAgentError
    from book_agent_adapters.book.runtime_files import LOCK_NAME

    members = members_of(tmp_path, records(20, seed=6), 1)
    folder = tmp_path / "library"
    (folder / LOCK_NAME).mkdir(parents=True)  # the lock file cannot be opened, as on a read-only mount
    with pytest.raises(BookAgentError) as caught:
        SqliteLibraryIndex(folder).build(members, {"books": "x"}, None)
    assert caught.value.code == "lexical.build_failed" and "prepare @all" in (caught.value.remediation or "")
    (tmp_path / "file").write_text("")
    with pytest.raises(BookAgentError):
        SqliteLibraryIndex(tmp_path / "file" / "library").build(members, {"books": "x"}, None)


def test_books_counted_in_worker_processes_index_as_counted_in_process(tmp_path, monkeypatch):
    from book_agent_adapters.library.local.lexical import term_counts

    members = members_of(tmp_path, records(150, seed=8), 3)
    serial = SqliteLibraryIndex(tmp_path / "serial")
    serial.build(members, {"books": "s"}, None)
    monkeypatch.setattr(term_counts, "PARALLEL_MIN_RECORDS", 0)
    monkeypatch.setattr(term_counts.os, "cpu_count", lambda: 2)
    parallel = SqliteLibraryIndex(tmp_path / "parallel")
    seen: list[tuple[int, int]] = []
    parallel.build(members, {"books": "p"}, lambda done, total: seen.append((done, total)))
    assert seen[-1] == (150, 150) and len(seen) == 3  # one step per book, as each worker finishes
    for query in QUERIES:
        assert search(parallel, query, 20) == search(serial, query, 20)


def test_when_worker_processes_cannot_start_the_books_are_counted_in_process(tmp_path, monkeypatch):
    from book_agent_adapters.library.local.lexical import term_counts

    class NoPool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise OSError("cannot start processes here")

    members = members_of(tmp_path, records(90, seed=12), 3)
    serial = SqliteLibraryIndex(tmp_path / "serial")
    serial.build(members, {"books": "s"}, None)
    monkeypatch.setattr(term_counts, "PARALLEL_MIN_RECORDS", 0)
    monkeypatch.setattr(term_counts.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(term_counts, "ProcessPoolExecutor", NoPool)
    fallback = SqliteLibraryIndex(tmp_path / "fallback")
    seen: list[tuple[int, int]] = []
    fallback.build(members, {"books": "f"}, lambda done, total: seen.append((done, total)))
    assert seen[-1] == (90, 90)
    for query in QUERIES:
        assert search(fallback, query, 20) == search(serial, query, 20)


def _resident_kib_of(name_part: str) -> int:
    """This process's resident KiB of the mappings of files whose path holds `name_part`."""
    total, mine = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            mine = len(head) > 5 and name_part in head[5]
        elif mine and head[0] == "Rss:":
            total += int(head[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="reads /proc/self/smaps (Linux)")
def test_what_a_query_read_through_the_postings_maps_leaves_the_resident_set(corpus):
    # A map's pages stay resident once touched: a server's RSS grew towards every posting (issue 29).
    # The same answers are still read from the maps, and the next query maps them again.
    _, index, _, _ = corpus
    lexical = index.open()
    try:
        first = {q: lexical.search(q, 10) for q in QUERIES}
        assert any(first.values())
        assert _resident_kib_of(".impacts.npy") == 0
        assert _resident_kib_of(".docs.npy") == 0
        assert {q: lexical.search(q, 10) for q in QUERIES} == first
    finally:
        lexical.close()


@pytest.mark.parametrize("top_k", [1, 3, 5, 10, 20, 50])
def test_a_top_k_is_the_first_k_of_the_whole_ranking_ties_at_the_cut_included(corpus, top_k):
    # Records of one length holding a word once score alike, by the dozen: the ones a top k
    # keeps at its cut are the first by row, as ties inside it are ordered (the book's impact
    # file and FTS5 keep the first rowids too), never whichever a partition happened to leave.
    _, index, _, recs = corpus
    lexical = index.open()
    try:
        for query in [*QUERIES, "river", "the", "water battle", "tax"]:
            whole = lexical.search(query, len(recs))
            assert lexical.search(query, top_k) == whole[:top_k], query
    finally:
        lexical.close()


def test_query_words_stemmed_once_are_the_terms_fts5_gives_them_afresh(monkeypatch):
    # A query's words are stemmed by FTS5 once per process, then remembered (a bounded memory,
    # forgotten at once when full): the terms are those a fresh stemmer gives, whatever it remembered.
    from book_agent_adapters.text import fts_terms

    monkeypatch.setattr(fts_terms, "QUERY_STEMS_KEPT", 5)
    warm = fts_terms.FtsTerms()
    asked = [*QUERIES, *QUERIES[::-1], "running runs ran", "Running RUNS", "café naïve cafe naive"]
    try:
        for query in asked:
            fresh = fts_terms.FtsTerms()
            try:
                assert warm.query_terms(query) == fresh.query_terms(query), query
            finally:
                fresh.close()
        assert len(warm._query_stems) <= 5 + 25  # forgotten when full (a query's words may pass it once)
    finally:
        warm.close()
