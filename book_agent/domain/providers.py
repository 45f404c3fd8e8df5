"""The providers a book's vectors (and its reranker) may name, and their default endpoints.

One definition for the package validator (adapters/package/manifest_checks.py), the query
runtime spec (book_agent/domain/book/query_runtime_spec.py), the runtime config notes (app/config_store.py)
and the rerankers (adapters/rerankers/remote.py).
"""

from __future__ import annotations

# vectors.json `provider`: who encodes a book's queries
PROVIDERS: tuple[str, ...] = ("siliconflow", "openai-compatible", "local")
REMOTE_PROVIDERS: tuple[str, ...] = ("siliconflow", "openai-compatible")
# vectors.json `metric`
METRICS: tuple[str, ...] = ("cosine", "dot")

SILICONFLOW_EMBEDDINGS_ENDPOINT = "https://api.siliconflow.cn/v1/embeddings"
SILICONFLOW_RERANK_ENDPOINT = "https://api.siliconflow.cn/v1/rerank"
# provider -> endpoint a query is encoded at when vectors.json names none
DEFAULT_ENDPOINTS: dict[str, str] = {"siliconflow": SILICONFLOW_EMBEDDINGS_ENDPOINT}
