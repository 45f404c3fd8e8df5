"""What each derived sidecar in a runtime dir was built from (its stamp).

A sidecar whose stamp differs from the expected one is stale: `status` reports it and
`prepare` rebuilds it. Pure values: the files themselves are the RuntimeStore's.
"""

from __future__ import annotations

from book_agent.domain.search.lexical_text import TOKENIZER_VERSION

VECTOR_CHECK_VERSION = "1"


def lexical_stamp(manifest_sha: str, database_sha: str | None) -> dict[str, str]:
    return {
        "package_manifest_sha256": manifest_sha,
        "database_sha256": database_sha or "",
        "tokenizer_version": TOKENIZER_VERSION,
    }


def vector_check_stamp(database_sha: str | None, model: str | None, route: str | None) -> dict[str, str]:
    """What a self-check result depends on: the records, the model, and how queries are encoded."""
    return {"database_sha256": database_sha or "", "model": model or "", "route": route or "",
            "version": VECTOR_CHECK_VERSION}
