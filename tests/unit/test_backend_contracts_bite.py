"""The backend contract suites catch broken backends: each fake below breaks one promise, and
the suite's test for that promise must fail (run in a child pytest, parsed from its JUnit XML)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.support import REPO_ROOT

BROKEN = '''
import pytest
from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import LexicalHit
from book_agent.testing.library_index_contract import InMemoryMembers, LibraryIndexContract
from book_agent.testing.library_vectors_contract import LibraryVectorIndexesContract
from book_agent.testing.memory import MemoryRegistry
from book_agent.testing.memory_library import (
    MemoryGroupIndex, MemoryLibraryBooks, MemoryLibraryIndex, MemoryLibraryLexical, MemoryLibraryVectors,
    MemoryVectorStore, _Postings)
from book_agent.testing.registry_contract import RegistryContract
from book_agent.testing.storage_contract import VectorStoreContract


class Memory(InMemoryMembers, LibraryIndexContract):
    pass


class IgnoresBookIds(MemoryLibraryLexical):
    def search(self, query, top_k, book_ids=None):
        return super().search(query, top_k, None)


class NarrowsStatistics(MemoryLibraryLexical):
    def search(self, query, top_k, book_ids=None):
        if book_ids is None:
            return super().search(query, top_k)
        p = self.postings
        kept = {k: v for k, v in p.words.items() if k.partition("#")[0] in book_ids}
        narrowed = _Postings(p.stamp, p.generation, kept, {k: p.lengths[k] for k in kept})
        return MemoryLibraryLexical(narrowed).search(query, top_k)


class Ascending(MemoryLibraryLexical):
    def search(self, query, top_k, book_ids=None):
        return sorted(super().search(query, 10_000, book_ids), key=lambda h: h.score)[:top_k]


def index_with(reader):
    class Index(MemoryLibraryIndex):
        def open(self):
            return reader(self.current or _Postings({}, "0", {}, {}))
    return Index


class AlwaysFresh(MemoryLibraryIndex):
    def state(self, expected):
        from dataclasses import replace
        return replace(super().state(expected), fresh=self.current is not None)


class RebuildsWhenFresh(MemoryLibraryIndex):
    def build(self, members, expected, progress):
        self.current = None
        return super().build(members, expected, progress)


class HalfWritten(MemoryLibraryIndex):
    def build(self, members, expected, progress):
        readable = [m for m in members if m.database_path in self.books.records]
        count = super().build(readable, expected, progress)
        if len(readable) != len(members):
            raise BookAgentError("lexical.build_failed", "a member could not be read", remediation="fix it")
        return count


class TestIgnoresBookIds(Memory):
    @pytest.fixture
    def make_index(self, memory_books):
        return lambda: index_with(IgnoresBookIds)(memory_books)


class TestNarrowsStatistics(Memory):
    @pytest.fixture
    def make_index(self, memory_books):
        return lambda: index_with(NarrowsStatistics)(memory_books)


class TestAscending(Memory):
    @pytest.fixture
    def make_index(self, memory_books):
        return lambda: index_with(Ascending)(memory_books)


class TestAlwaysFresh(Memory):
    @pytest.fixture
    def make_index(self, memory_books):
        return lambda: AlwaysFresh(memory_books)


class TestRebuildsWhenFresh(Memory):
    @pytest.fixture
    def make_index(self, memory_books):
        return lambda: RebuildsWhenFresh(memory_books)


class TestHalfWritten(Memory):
    @pytest.fixture
    def make_index(self, memory_books):
        return lambda: HalfWritten(memory_books)


class RoundedScores(MemoryGroupIndex):
    def search(self, query_vector, depth, book_ids=None):
        return [(k, round(s, 1)) for k, s in super().search(query_vector, depth, book_ids)]


class VectorsIgnoringBookIds(MemoryGroupIndex):
    def search(self, query_vector, depth, book_ids=None):
        return super().search(query_vector, depth, None)


def vectors_with(group_index):
    class Vectors(MemoryLibraryVectors):
        def open(self, model, dimensions, expected, stores):
            opened = super().open(model, dimensions, expected, stores)
            return group_index(opened.stores, opened.dimensions)
    return Vectors


class MemoryVectors(LibraryVectorIndexesContract):
    @pytest.fixture
    def make_stores(self):
        return lambda books: {b.book_id: MemoryVectorStore(b.records, b.vectors) for b in books.values()}


class TestRoundedScores(MemoryVectors):
    @pytest.fixture
    def make_indexes(self):
        return vectors_with(RoundedScores)


class TestVectorsIgnoringBookIds(MemoryVectors):
    @pytest.fixture
    def make_indexes(self):
        return vectors_with(VectorsIgnoringBookIds)


class UncodedStore(MemoryVectorStore):
    def search_ids(self, query_vector, top_k):
        if len(query_vector) != self.matrix.shape[1]:
            raise ValueError("wrong size")
        return super().search_ids(query_vector, top_k)


class TestUncodedStore(VectorStoreContract):
    @pytest.fixture
    def make_store(self):
        return UncodedStore


class SharedEntries(MemoryRegistry):
    def get(self, book_id):
        super().get(book_id)
        return self.entries[book_id]


class TestSharedEntries(RegistryContract):
    @pytest.fixture
    def make_registry(self):
        registry = SharedEntries()
        return lambda: registry
'''

MUST_FAIL = {
    "TestIgnoresBookIds": "test_book_ids_narrow_the_hits_not_the_statistics",
    "TestNarrowsStatistics": "test_book_ids_narrow_the_hits_not_the_statistics",
    "TestAscending": "test_hits_are_best_first_and_name_their_books",
    "TestAlwaysFresh": "test_a_build_is_fresh_for_its_stamp_only",
    "TestRebuildsWhenFresh": "test_a_fresh_index_is_not_rebuilt",
    "TestHalfWritten": "test_a_failed_build_is_coded_and_the_previous_generation_serves",
    "TestRoundedScores": "test_scores_are_exact_best_first_and_recall_holds",
    "TestVectorsIgnoringBookIds": "test_book_ids_keep_only_those_books",
    "TestUncodedStore": "test_a_query_of_other_dimensions_is_refused",
    "TestSharedEntries": "test_callers_get_copies",
}


def test_each_broken_backend_fails_the_test_of_the_promise_it_breaks(tmp_path: Path) -> None:
    module = tmp_path / "test_broken_backends.py"
    module.write_text(textwrap.dedent(BROKEN), encoding="utf-8")
    report = tmp_path / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                    f"--junitxml={report}", "-k", " or ".join(["test_implements", *sorted(set(MUST_FAIL.values()))]),
                    str(module)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    failed: dict[str, set[str]] = {}
    passed: dict[str, int] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        name = case.get("name", "").split("[", 1)[0]
        if case.find("failure") is not None or case.find("error") is not None:
            failed.setdefault(cls, set()).add(name)
        else:
            passed[cls] = passed.get(cls, 0) + 1
    for cls, test in MUST_FAIL.items():
        assert test in failed.get(cls, set()), f"{cls} broke a promise and {test} did not notice: {failed.get(cls)}"
        assert passed.get(cls, 0) > 0, f"{cls}: nothing passed, so the failure proves little"
