"""Issue 29: one book's lexical channel answered from its sidecar's impact file ranks and scores
exactly as FTS5's bm25() does, and FTS5 answers whatever the file cannot answer exactly.

Real package databases (tests/support/package_builder), the real sidecar build, and FTS5 itself
(the `ORDER BY rank LIMIT k` query the channel ran before) as the reference: the same record ids,
in the same order, with the very same doubles."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from book_agent_adapters.book.lexical.book_impact import FILE_NAME, build_impact, impact_path
from book_agent_adapters.book.lexical.book_impact_search import PhraseTerms
from book_agent_adapters.book.lexical.fts_lexical_index import (
    HEADINGS_WEIGHT,
    RANK_SQL,
    FtsLexicalIndex,
    build_sidecar,
    match_expression,
)
from tests.support.mixed_records import ENGLISH, HEADINGS, mixed_records
from tests.support.package_builder import RecordSpec, build_package

WORDS = [*ENGLISH, "don't", "Ærø", "straße"]
QUERIES = ["river water", "running battles", "the general of the army", "café naive", "2008", "兵法", "孫子兵法",
           "將軍 water", "天", "grain tribute tax province", "siege OR wall", '"quoted" -minus NEAR(x)', "x86 harvest",
           "river river river water", "running runs run battle", "water " * 20 + "river", "don't stop",
           "Straße ærø", "兵法將軍勝敗知己彼戰國家", "zyxwvut", "the", "rain rain"]


def records(n: int, seed: int) -> list[RecordSpec]:
    return mixed_records(n, seed, WORDS, min_words=1, chinese_share=0.3, headings=(*HEADINGS, "Rain rain rain"))


def book_sidecar(folder: Path, book_id: str, n: int, seed: int, stamp_value: str = "1") -> Path:
    """A package of `n` generated records and its lexical sidecar (with its impact file) built
    under folder/runtime."""
    root = build_package(folder / "book", book_id=book_id, kind="epub", records=records(n, seed=seed), dims=8,
                         blank_page=False)
    path = folder / "runtime" / "lexical.sqlite"
    build_sidecar(root / "index.sqlite", path, {"k": stamp_value})
    return path


@pytest.fixture(scope="module")
def sidecar(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("book-impact")
    return book_sidecar(tmp, "impact-book", 300, seed=4, stamp_value="v")


def fts5(path: Path, query: str, top_k: int) -> list[tuple[str, float]]:
    match = match_expression(query)
    if match is None:
        return []
    con = sqlite3.connect(path)
    try:
        rows = con.execute(f"SELECT ids.record_id, {RANK_SQL} AS s FROM fts JOIN ids ON ids.rowid = fts.rowid "
                           "WHERE fts MATCH ? ORDER BY s LIMIT ?", (match, top_k)).fetchall()
    finally:
        con.close()
    return [(rid, -score) for rid, score in rows]


def warm(index: FtsLexicalIndex) -> None:
    """Searches until the impact file is loaded (the first search is FTS5's, and a missing file is
    built in the background)."""
    deadline = time.monotonic() + 60
    while index._impact.state != "loaded":
        index.search("river", 5)
        assert time.monotonic() < deadline and index._impact.state != "none"
        time.sleep(0.01)


def test_building_the_sidecar_writes_its_impact_file_beside_it(sidecar: Path) -> None:
    assert (sidecar.parent / FILE_NAME).is_file()


def test_a_query_of_the_books_own_words_is_not_tokenised_again(sidecar: Path) -> None:
    """The book's words come with their FTS5 terms (running -> run, café -> cafe): FTS5's
    tokenizer is not even opened for them, and the hits are still FTS5's."""
    index = FtsLexicalIndex(sidecar)
    warm(index)
    for query in ("running battles", "café naïve", "river river water", "Straße"):
        assert [(h.record_id, h.score) for h in index.search(query, 20)] == fts5(sidecar, query, 20)
    assert index._impact.phrases._con is None
    assert [(h.record_id, h.score) for h in index.search("rivering", 20)] == fts5(sidecar, "rivering", 20)
    assert index._impact.phrases._con is not None  # a word the book never spells: FTS5 tokenises it
    index.close()


@pytest.mark.parametrize("top_k", [1, 3, 10, 50, 400])
def test_every_query_gets_fts5s_hits_in_fts5s_order_with_fts5s_scores(sidecar: Path, top_k: int) -> None:
    index = FtsLexicalIndex(sidecar)
    warm(index)
    answered = 0
    for query in QUERIES:
        got = [(h.record_id, h.score) for h in index.search(query, top_k)]
        assert got == fts5(sidecar, query, top_k), query  # bit for bit, ties by rowid included
        terms = match_expression(query)
        answered += bool(terms) and None not in index._impact.phrases.terms(terms.split(" OR "))
    assert answered >= len(QUERIES) // 2  # most are the impact file's, not FTS5's
    index.close()


def test_ties_at_the_cut_go_to_the_first_rows_as_in_fts5(sidecar: Path) -> None:
    index = FtsLexicalIndex(sidecar)
    warm(index)
    for query in ("rain", "the", "2008", "x86"):
        full = fts5(sidecar, query, 1000)
        scores = [s for _, s in full]
        tied = [k for k in range(1, len(full)) if scores[k - 1] == scores[k]]
        assert tied, query  # the corpus has ties: the cut falls inside one
        for k in tied[:5]:
            assert [(h.record_id, h.score) for h in index.search(query, k)] == full[:k]
    index.close()


def test_phrases_fts5_reads_as_several_tokens_or_a_prefix_are_left_to_fts5() -> None:
    phrases = PhraseTerms()
    assert phrases.terms(['"running"', '"don\'t"', '"兵法"', '"天"*', '"孫子 子兵"', '"x86"', '"Café"']) == [
        "run", None, "兵法", None, None, "x86", "cafe"]
    assert phrases.terms(['"!!"']) == [None]  # no token at all
    phrases.close()


def test_an_impact_file_of_another_sidecar_is_not_used_and_is_built_again(tmp_path: Path) -> None:
    path = book_sidecar(tmp_path, "stale-book", 60, seed=2)
    kept = impact_path(path).read_bytes()
    other = build_package(tmp_path / "other", book_id="other-book", kind="epub", records=records(80, seed=3),
                          dims=8, blank_page=False)
    build_sidecar(other / "index.sqlite", path, {"k": "2"})
    impact_path(path).write_bytes(kept)  # the first sidecar's file beside the second sidecar
    index = FtsLexicalIndex(path)
    index.search("river", 5)
    index.search("river", 5)
    assert index._impact.state in ("building", "unread")  # not loaded: rebuilt in the background
    warm(index)
    for query in QUERIES:
        assert [(h.record_id, h.score) for h in index.search(query, 20)] == fts5(path, query, 20)
    index.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "terms"])
def test_a_damaged_impact_file_leaves_the_search_to_fts5(tmp_path: Path, damage: str) -> None:
    path = book_sidecar(tmp_path, "damaged-book", 60, seed=5)
    target = impact_path(path)
    if damage == "garbage":
        target.write_bytes(b"not a zip at all")
    elif damage == "truncated":
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    else:  # a sound archive of another shape: the terms of another file
        import numpy as np

        with np.load(target) as data:
            arrays = dict(data)
        arrays["terms"] = np.frombuffer(b'["only"]', dtype=np.uint8)
        np.savez(target.with_suffix(".tmp.npz"), **arrays)
        os.replace(target.with_suffix(".tmp.npz"), target)
    index = FtsLexicalIndex(path)
    for _ in range(3):
        for query in QUERIES:
            assert [(h.record_id, h.score) for h in index.search(query, 20)] == fts5(path, query, 20)
    index.close()


def test_a_sidecar_whose_impact_file_cannot_be_written_stays_with_fts5(tmp_path: Path) -> None:
    """A folder where the file belongs: the background build fails (as in a read-only data dir,
    which root's tests cannot make), and every search is FTS5's."""
    path = book_sidecar(tmp_path, "ro-book", 40, seed=6)
    impact_path(path).unlink()
    impact_path(path).mkdir()
    index = FtsLexicalIndex(path)
    deadline = time.monotonic() + 30
    while index._impact.state != "none":
        assert [(h.record_id, h.score) for h in index.search("river water", 10)] == fts5(path, "river water", 10)
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for query in QUERIES:
        assert [(h.record_id, h.score) for h in index.search(query, 10)] == fts5(path, query, 10)
    assert impact_path(path).is_dir()
    index.close()


def test_the_impact_file_is_built_for_a_sidecar_built_before_it_existed(tmp_path: Path) -> None:
    path = book_sidecar(tmp_path, "old-book", 50, seed=7)
    impact_path(path).unlink()
    index = FtsLexicalIndex(path)
    warm(index)  # the second search started the background build; a later one loads it
    assert impact_path(path).is_file()
    built = impact_path(path).read_bytes()
    index.close()
    build_impact(path, impact_path(path), HEADINGS_WEIGHT)
    assert impact_path(path).read_bytes() == built  # the same file as a build writes


def test_a_left_over_temp_of_the_impact_file_is_swept_once_old(tmp_path: Path) -> None:
    """The background build writes outside the build lock: its temp is swept by age, as a
    config's is (a build in progress is young)."""
    from book_agent_adapters.book.runtime_files import STALE_SECONDS, sweep_stale_temps

    leftover = tmp_path / f".{FILE_NAME}.abc123.tmp"
    leftover.write_bytes(b"half")
    assert sweep_stale_temps(tmp_path) == []
    assert sweep_stale_temps(tmp_path, now=time.time() + STALE_SECONDS + 1) == [str(leftover)]


def test_a_warm_up_loads_the_impact_file_before_any_search(tmp_path: Path) -> None:
    """A long-lived process's warm-up (an MCP server's) does what a second search would: its
    first real search is answered from the file, at what later ones cost. Without a file, the
    warm-up starts its build."""
    path = book_sidecar(tmp_path, "warm-book", 60, seed=8)
    index = FtsLexicalIndex(path)
    index.warm_up()
    assert index._impact.state == "loaded"
    assert [(h.record_id, h.score) for h in index.search("river water", 10)] == fts5(path, "river water", 10)
    index.close()
    impact_path(path).unlink()
    index = FtsLexicalIndex(path)
    index.warm_up()
    assert index._impact.state in ("building", "unread")  # started: a later search loads it
    warm(index)
    assert impact_path(path).is_file()
    index.close()
