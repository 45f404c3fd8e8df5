"""The eval harness: lexical only, vector only and hybrid, side by side, on a question set.

A question set is JSON Lines, one object a line:
    {"query": "...", "relevant": ["record_id", ...] | {"record_id": grade}, "query_vector": [...]?}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import cast

from book_agent.domain.errors import BookAgentError
from book_agent.domain.search.eval_results import EvalReport, Metrics, Question
from book_agent.domain.search.metrics import grades, mrr_at_k, ndcg_at_k, recall_at_k
from book_agent.services.search.hybrid import HybridSearch

# the baselines a fusion method has to beat: plain RRF (k=60, equal weights) and RAGFlow's
# rule (0.7 keyword + 0.3 vector over min-max scores), both on the same channel runs
CHANNELS = ("lexical", "vector", "plain-rrf", "ragflow-rule", "hybrid")
RERANKED = "hybrid+rerank"  # a fourth column when the book has a reranker configured


def parse_questions(lines: Iterable[str]) -> list[Question]:
    questions: list[Question] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise BookAgentError("eval.bad_questions", f"line {number} is not JSON: {exc}",
                                 remediation="one JSON object a line: {\"query\": ..., \"relevant\": [...]}") from exc
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item.get("relevant"):
            raise BookAgentError("eval.bad_questions", f"line {number} needs a query and relevant record ids",
                                 remediation="one JSON object a line: {\"query\": ..., \"relevant\": [...]}")
        questions.append(cast(Question, item))  # checked above: a query and relevant ids
    if not questions:
        raise BookAgentError("eval.bad_questions", "the question set is empty", remediation="add questions")
    return questions


def evaluate(search: HybridSearch, questions: list[Question], k: int = 10) -> EvalReport:
    columns = CHANNELS + ((RERANKED,) if search.rerank_configured() else ())
    per_question: list[dict[str, object]] = []
    totals: dict[str, Metrics] = {c: {"recall@k": 0.0, "mrr@10": 0.0, "ndcg@10": 0.0} for c in columns}
    vector_ran = 0
    reranked = 0
    for item in questions:
        relevant = grades(item["relevant"])
        found = search.channel_rankings(item["query"], depth=max(50, k), query_vector=item.get("query_vector"))
        rankings = {channel: found[channel] for channel in CHANNELS}  # type: ignore[literal-required]
        if RERANKED in columns:
            result = search.search(item["query"], top_k=max(10, k), query_vector=item.get("query_vector"))
            rankings[RERANKED] = [hit.record_id for hit in result.hits]
            reranked += bool(result.rerank.get("rerank_applied"))
        vector_ran += bool(found["ran"]["vector"])
        row: dict[str, object] = {"query": item["query"]}
        for channel in columns:
            ranking = rankings[channel]
            scores = {"recall@k": recall_at_k(ranking, relevant, k), "mrr@10": mrr_at_k(ranking, relevant, 10),
                      "ndcg@10": ndcg_at_k(ranking, relevant, 10)}
            row[channel] = {m: round(v, 4) for m, v in scores.items()}
            for metric, value in scores.items():
                totals[channel][metric] += value
        per_question.append(row)
    wanted = {rid for item in questions for rid in grades(item["relevant"])}
    unknown = sorted(wanted - set(search.channels.records.fetch(sorted(wanted))))
    n = len(questions)
    summary = {c: {m: round(v / n, 4) for m, v in totals[c].items()} for c in columns}
    best_single = max(summary["lexical"]["ndcg@10"], summary["vector"]["ndcg@10"])
    return {
        "questions": n,
        "k": k,
        "summary": summary,
        "hybrid_at_least_best_single_ndcg": summary["hybrid"]["ndcg@10"] >= best_single - 1e-9,
        "hybrid_at_least_plain_rrf_ndcg": summary["hybrid"]["ndcg@10"] >= summary["plain-rrf"]["ndcg@10"] - 1e-9,
        "hybrid_at_least_ragflow_rule_ndcg":
            summary["hybrid"]["ndcg@10"] >= summary["ragflow-rule"]["ndcg@10"] - 1e-9,
        "vector_channel_ran": vector_ran,
        "rerank_applied": reranked if RERANKED in columns else None,
        "unknown_relevant_ids": unknown,
        "warnings": [f"{len(unknown)} relevant record id(s) are not in this book and can never be found: "
                     + ", ".join(unknown[:10])] if unknown else [],
        "per_question": per_question,
    }
