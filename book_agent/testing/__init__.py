"""Test helpers for book-agent and its plug-ins: fakes, and contract suites to subclass.

    from book_agent.testing.fakes import FakeReranker, sample_candidates
    from book_agent.testing.reranker_contract import RerankerContract

Importing this package imports nothing heavy; the contract module needs pytest.
"""
