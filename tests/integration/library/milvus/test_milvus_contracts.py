"""The backend contract suites against the `milvus` backend on a real Milvus-compatible server
(milvus-lite started for the session, or $BOOK_AGENT_TEST_MILVUS_URI): the same promises the
local backend keeps (tests/integration/library/test_backend_contracts.py)."""

from __future__ import annotations

import pytest

from book_agent.testing.library_index_contract import LibraryIndexContract
from book_agent.testing.library_vectors_contract import LibraryVectorIndexesContract
from tests.support import milvus


class TestMilvusLibraryIndex(LibraryIndexContract):
    @pytest.fixture
    def make_index(self, milvus_uri, tmp_path):
        return lambda: milvus.backend(milvus_uri, tmp_path / "data").lexical


class TestMilvusLibraryVectors(LibraryVectorIndexesContract):
    @pytest.fixture
    def make_indexes(self, milvus_uri, tmp_path):
        return lambda: milvus.backend(milvus_uri, tmp_path / "data").vectors


class TestMilvusIvfVectors(LibraryVectorIndexesContract):
    """An IVF index (its build and search parameters sent; milvus-lite offers FLAT, IVF_FLAT and
    AUTOINDEX): the same promises at the contract's sizes."""

    @pytest.fixture
    def make_indexes(self, milvus_uri, tmp_path):
        return lambda: milvus.backend(milvus_uri, tmp_path / "data", index_type="IVF_FLAT", nlist=16).vectors
