"""Test helpers for book-agent and its plug-ins: fakes, and contract suites to subclass.

    from book_agent.testing.fakes import FakeReranker, sample_candidates
    from book_agent.testing.reranker_contract import RerankerContract
    from book_agent.testing.library_index_contract import LibraryIndexContract          # a library backend's
    from book_agent.testing.library_vectors_contract import LibraryVectorIndexesContract  # two roles
    from book_agent.testing.storage_contract import LexicalIndexContract, VectorStoreContract
    from book_agent.testing.registry_contract import RegistryContract
    from book_agent.testing.memory import memory_adapters                   # every port in memory
    from book_agent.testing.memory_library import MemoryLibraryIndex, MemoryLibraryVectors

Importing this package imports nothing heavy; the contract modules need pytest (and numpy).
"""
