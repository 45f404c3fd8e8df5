"""The backend contract suites of book_agent.testing, run against the in-memory fakes and the
real adapters (real SQLite files, real faiss), and through the configured backend seam.

A broken backend must fail them: tests/unit/test_backend_contracts_bite.py runs the suites
against deliberately broken fakes.
"""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Sequence
from pathlib import Path

import pytest

from book_agent.domain.library import LibraryBackendSetting
from book_agent.domain.records import Record
from book_agent.testing.library_books import vector_manifest, write_package_database
from book_agent.testing.library_index_contract import InMemoryMembers, LibraryIndexContract
from book_agent.testing.library_vectors_contract import LibraryVectorIndexesContract
from book_agent.testing.memory import MemoryRegistry
from book_agent.testing.memory_library import (
    MemoryLibraryIndex,
    MemoryLibraryVectors,
    MemoryVectorStore,
)
from book_agent.testing.memory_parts import WordOverlapIndex
from book_agent.testing.registry_contract import RegistryContract
from book_agent.testing.storage_contract import LexicalIndexContract, VectorStoreContract
from tests.support.parts import require_real_part

_folders = itertools.count()


class TestMemoryLibraryIndex(InMemoryMembers, LibraryIndexContract):
    @pytest.fixture
    def make_index(self, memory_books):
        return lambda: MemoryLibraryIndex(memory_books)


class TestSqliteLibraryIndex(LibraryIndexContract):
    @pytest.fixture
    def make_index(self, tmp_path):
        from book_agent_adapters.library.local.lexical.library_lexical_index import (
            SqliteLibraryIndex,
        )

        return lambda: SqliteLibraryIndex(tmp_path / f"library-{next(_folders)}")


class TestLocalBackendThroughTheSeam(LibraryIndexContract):
    """The lexical role as build_ports hands it to the services: the `local` backend, chosen."""

    @pytest.fixture
    def make_index(self, tmp_path):
        from book_agent.bootstrap import build_ports

        return lambda: build_ports(tmp_path / f"data-{next(_folders)}", library_backend="local").library


class TestMemoryLibraryVectors(LibraryVectorIndexesContract):
    @pytest.fixture
    def make_stores(self):
        return lambda books: {b.book_id: MemoryVectorStore(b.records, b.vectors) for b in books.values()}

    @pytest.fixture
    def make_indexes(self):
        return MemoryLibraryVectors


class TestFaissLibraryVectors(LibraryVectorIndexesContract):
    @pytest.fixture
    def make_indexes(self, tmp_path):
        require_real_part(importlib.util.find_spec("faiss") is not None, "faiss-cpu")
        from book_agent_adapters.library.local import create_local

        setting = LibraryBackendSetting("local", "argument", {"min_vectors": 1})
        return lambda: create_local(tmp_path / f"data-{next(_folders)}", setting).vectors


class TestMemoryVectorStore(VectorStoreContract):
    @pytest.fixture
    def make_store(self):
        return MemoryVectorStore


class TestPrebuiltVectorStore(VectorStoreContract):
    @pytest.fixture
    def make_store(self, tmp_path):
        from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter

        def store(records: list[Record], matrix):
            path = write_package_database(tmp_path / f"book-{next(_folders)}", "b0", records, matrix)
            return PrebuiltVectorStoreAdapter(path, vector_manifest(matrix), sidecar_dir=tmp_path / "runtime",
                                              book_id="b0")
        return store


class TestWordOverlapIndex(LexicalIndexContract):
    @pytest.fixture
    def make_lexical(self):
        return WordOverlapIndex


class TestFtsLexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def make_lexical(self, tmp_path):
        from book_agent_adapters.book.lexical.fts_lexical_index import (
            FtsLexicalIndex,
            build_sidecar,
        )

        def lexical(records: Sequence[Record]):
            database = write_package_database(tmp_path / "book", "b0", list(records))
            sidecar = tmp_path / "runtime" / "lexical.sqlite"
            build_sidecar(database, sidecar, {"contract": "1"})
            return FtsLexicalIndex(sidecar)
        return lexical


class TestMemoryRegistry(RegistryContract):
    @pytest.fixture
    def make_registry(self):
        registry = MemoryRegistry()
        return lambda: registry


class TestJsonRegistry(RegistryContract):
    @pytest.fixture
    def make_registry(self, tmp_path: Path):
        from book_agent_adapters.registry.json_registry import JsonRegistry

        return lambda: JsonRegistry(tmp_path / "data")
