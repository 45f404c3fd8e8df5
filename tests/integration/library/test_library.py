"""Library search (`a,b`, `@all`): a corpus split into books ranks as the one book holding it.

Real packages (SQLite, EPUB) built by the tests; the query vector is supplied, so both
channels run without an encoder.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from book_agent import BookAgent
from book_agent.domain.errors import BookAgentError
from tests.support.cli_support import run_cli
from tests.support.library_support import corpus, make_book, unit
from tests.support.package_builder import RecordSpec


@pytest.fixture
def split_library(tmp_path: Path) -> Iterator[tuple[BookAgent, BookAgent]]:
    """(one book holding the corpus, a library of 3 books holding it between them)."""
    records = corpus()
    whole = BookAgent(tmp_path / "data-one")
    whole.init(make_book(tmp_path / "one", "whole", records))
    library = BookAgent(tmp_path / "data-library")
    for part in range(3):
        library.init(make_book(tmp_path / "parts", f"part-{part}", records[part::3]))
    yield whole, library
    whole.close()
    library.close()


def queries() -> list[tuple[str, list[float]]]:
    rng = random.Random(11)
    texts = [r.text for r in corpus()]
    out = []
    for i in range(12):
        target = texts[rng.randrange(len(texts))]
        words = " ".join(rng.sample(target.rstrip(".").split(), 3))
        noisy = unit(target) + 0.3 * unit(f"noise {i}")
        out.append((words, list(map(float, noisy / np.linalg.norm(noisy)))))
    return out


def test_a_split_corpus_ranks_as_the_one_book_holding_it(split_library):
    whole, library = split_library
    for words, vector in queries():
        one = whole.search("whole", words, top_k=10, query_vector=vector)
        many = library.search("@all", words, top_k=10, query_vector=vector)
        assert [h["record_id"] for h in many["hits"]] == [h["record_id"] for h in one["hits"]], words
        assert all(h["evidence_id"] == f"{h['book_id']}#{h['record_id']}" for h in many["hits"])
        assert many["channels"]["lexical"]["ran"] and many["channels"]["vector"]["ran"]
    assert {h["book_id"] for h in many["hits"]} <= {"part-0", "part-1", "part-2"}


def test_a_list_narrows_the_books_and_keeps_one_shape(split_library):
    _, library = split_library
    words, vector = queries()[0]
    result = library.search("part-0, part-2", words, top_k=20, query_vector=vector)
    assert {h["book_id"] for h in result["hits"]} <= {"part-0", "part-2"}
    assert [b["book_id"] for b in result["books"]] == ["part-0", "part-2"]
    assert result["book_id"] == "part-0, part-2" and result["library"]["books_searched"] == 2
    twice = library.search("part-1,part-1", words, query_vector=vector)
    assert any("more than once" in w for w in twice["warnings"])


def test_an_unknown_id_in_a_list_is_an_error_naming_it(split_library):
    _, library = split_library
    with pytest.raises(BookAgentError) as info:
        library.search("part-0,nope", "river")
    assert info.value.code == "book.not_registered" and "nope" in info.value.message
    for bad in ("part-0,,part-1", ",part-0", "@all,part-0"):
        with pytest.raises(BookAgentError) as info:
            library.search(bad, "river")
        assert info.value.code == "book.bad_ref"


def test_all_with_no_books_is_an_empty_result_that_says_so(tmp_path):
    with BookAgent(tmp_path / "empty") as agent:
        result = agent.search("@all", "river")
    assert result["hits"] == [] and result["books"] == []
    assert any("no books are registered" in w for w in result["warnings"])


def test_a_book_registered_later_is_searched_by_the_same_agent(split_library, tmp_path):
    _, library = split_library
    assert library.search("@all", "zebra")["hits"] == []
    library.init(make_book(tmp_path / "late", "late", [RecordSpec("z1", "The zebra crossed the river.", [], 0)]))
    hits = library.search("@all", "zebra")["hits"]
    assert [(h["book_id"], h["record_id"]) for h in hits] == [("late", "z1")]
    library.remove("late")
    assert library.search("@all", "zebra")["hits"] == []


def test_a_changed_package_is_skipped_with_a_warning_and_fails_strict(split_library, tmp_path):
    _, library = split_library
    skill = Path(library.resolve("part-1")["package"]["skill_path"])
    skill.chmod(0o644)
    skill.write_text(skill.read_text() + "\nedited\n")
    result = library.search("@all", "river water")
    assert all(h["book_id"] != "part-1" for h in result["hits"]) and result["hits"]
    assert any("part-1" in w for w in result["warnings"])
    assert [b for b in result["books"] if b["book_id"] == "part-1"][0]["code"] == "package.changed"
    with pytest.raises(BookAgentError) as info:
        library.search("@all", "river water", strict=True)
    assert info.value.code == "package.changed"


def test_a_query_vector_serves_only_books_of_its_dimensions(split_library, tmp_path):
    _, library = split_library
    library.init(make_book(tmp_path / "small", "small", corpus(6), dims=8))
    words, vector = queries()[0]
    result = library.search("@all", words, top_k=10, query_vector=vector)
    note = [b for b in result["books"] if b["book_id"] == "small"][0]["vector"]
    assert "8" in note and "16" in note
    assert result["channels"]["vector"]["ran"]
    assert len(result["library"]["model_groups"]) == 2


def test_the_cli_searches_a_library(split_library):
    _, library = split_library
    out = run_cli("--data-dir", str(library.data_dir), "search", "@all", "river water", "--json")
    assert out.code == 0, out.stderr
    assert out.json["hits"] and all("book_id" in h for h in out.json["hits"])
    shown = run_cli("--data-dir", str(library.data_dir), "search", "part-0,part-1", "river water")
    assert shown.code == 0 and (b"part-0#" in shown.stdout or b"part-1#" in shown.stdout)


def test_prepare_builds_the_library_index_ahead_of_the_first_search(split_library):
    _, library = split_library
    seen: list[tuple[int, int]] = []
    first = library.prepare("@all", progress=lambda done, total: seen.append((done, total)))
    generation = first["lexical_index"]["generation"]
    assert first["lexical_index"] == {"records": 60, "rebuilt": True, "generation": generation, "drift": 0.0}
    assert generation
    assert seen[-1] == (60, 60)
    assert [b["book_id"] for b in first["books"]] == ["part-0", "part-1", "part-2"]
    assert library.prepare("@all")["lexical_index"]["rebuilt"] is False
    result = library.search("@all", "river water")
    assert result["library"]["lexical_index"] == {"records": 60, "rebuilt": False, "generation": generation}
    assert result["library"]["generation"] == generation


def test_one_book_commands_refuse_a_library_reference(split_library):
    _, library = split_library
    for call in (lambda: library.read_entry("@all", "d000"), lambda: library.status("part-0,part-1"),
                 lambda: library.render_page("@all", 0), lambda: library.configure("@all", reranker="none"),
                 lambda: library.remove("part-0,part-1")):
        with pytest.raises(BookAgentError) as info:
            call()
        assert info.value.code == "book.bad_ref" and "one book" in info.value.message


def test_warm_up_of_a_library_builds_its_index_and_loads_every_book(split_library):
    _, library = split_library
    warmed = library.warm_up("@all")
    assert warmed == {"lexical": True, "vectors": True, "encoder": False, "library": True}
    index = library.data_dir / "library" / "lexical.sqlite"
    assert index.is_file()
    reader = library._search._library()._lexical._open.reader  # the generation served, opened by the warm-up
    assert reader.checking is not None  # checking its postings' blocks in the background
    reader.checking.join(30)
    assert all(segment.postings.verified.all() for segment in reader._scorer.segments)
    assert library.search("@all", "river")["library"]["lexical_index"]["rebuilt"] is False


def test_a_library_warm_up_loads_what_a_library_search_uses_not_each_books_own_index(split_library):
    """Issue 29: warmed book by book, a 1M-record library held 2.6 GB (each book's impact file, and
    a one-book dry search that read its whole matrix) where its searches use 0.5 GB."""
    _, library = split_library
    library.warm_up("@all")
    books = [library.books.open(b) for b in library.library_book_ids("@all")]
    unread = [book._lexical._impact.state == "unread" for book in books]  # the library's own index serves
    assert books and all(unread)
    assert all(not book._dry_searches for book in books)  # no one-book dry search
    assert all(book.vector_parts[0]._matrix is not None for book in books)  # searched exactly: loaded by its dry search
    learnt = books[0].passage_terms._terms._word_id  # the books' words, taught from their impact files
    assert "river" in learnt and len(learnt) > 20
    result = library.search("@all", "river")
    assert result["hits"] and all(book._lexical._impact.state == "unread" for book in books)


def test_init_of_a_second_book_says_how_to_bring_the_library_index_up_to_date(tmp_path):
    records = corpus(12)
    data = str(tmp_path / "data")
    first = run_cli("--data-dir", data, "init", str(make_book(tmp_path / "p", "one", records[:6])))
    second = run_cli("--data-dir", data, "init", str(make_book(tmp_path / "p", "two", records[6:])))
    assert first.code == 0 and second.code == 0, second.stderr
    assert b"prepare @all" not in first.stdout  # one book: no library yet
    assert b"book-agent prepare @all" in second.stdout
