"""The eval harness's question and report shapes (book_agent/services/search/evaluation.py, `book-agent eval --json`)."""

# No `from __future__ import annotations`: a TypedDict reads Required/NotRequired at class
# creation, and a string annotation would hide them from __required_keys__.
from typing import NotRequired, TypedDict


class Question(TypedDict):
    """One line of a question set: the query and its relevant record ids (or id -> grade)."""

    query: str
    relevant: list[str] | dict[str, float]
    query_vector: NotRequired[list[float]]


# metric name (recall@k, mrr@10, ndcg@10) -> value, for one ranking
Metrics = dict[str, float]


class EvalReport(TypedDict):
    questions: int
    k: int
    summary: dict[str, Metrics]  # ranking (lexical, vector, plain-rrf, ragflow-rule, hybrid[, hybrid+rerank]) -> metrics
    hybrid_at_least_best_single_ndcg: bool
    hybrid_at_least_plain_rrf_ndcg: bool
    hybrid_at_least_ragflow_rule_ndcg: bool
    vector_channel_ran: int
    rerank_applied: int | None
    unknown_relevant_ids: list[str]
    warnings: list[str]
    per_question: list[dict[str, object]]  # {query, <ranking>: metrics, ...}
    book_id: NotRequired[str]
