"""What a book's runtime parts report about themselves: the lexical sidecar's freshness, the
measured language evidence, whether a query can be encoded now, the vector store.

TypedDicts: `status` and `prepare` print them as they are (contracts/core.md).
"""

# No `from __future__ import annotations`: a TypedDict reads Required/NotRequired at class
# creation, and a string annotation would hide them from __required_keys__.
from typing import NotRequired, Required, TypedDict

from book_agent.domain.records import MarkdownSpan

# A sidecar's stamp: the hashes and versions it was built from.
Stamp = dict[str, str]
# A package's fingerprint: file -> [size, mtime_ns] (PackageStore.fingerprint).
Fingerprint = dict[str, list[int]]


class LexicalState(TypedDict, total=False):
    """A book's lexical sidecar against the expected stamp."""

    present: Required[bool]
    fresh: Required[bool]
    reason: str | None  # missing | corrupt | stale: KEYS; None when fresh
    path: str
    record_count: int  # when fresh


class LanguageCheck(TypedDict, total=False):
    """Does the model read the book's scripts (services/vector_check.py): the tokenizer's
    evidence, or the self-check's, or why none was measured."""

    status: Required[str]  # ok | no-sample | not-run
    basis: str  # tokenizer | self-check
    vocabulary_size: int
    cjk_pieces: int
    route: str | None
    scripts: dict[str, dict[str, float]]  # script -> {queries, mrr@10}
    reads: dict[str, bool]  # script -> the model reads it
    code: str | None
    reason: str
    stamp: Stamp  # the cached check's stamp


def unstamped(check: LanguageCheck) -> LanguageCheck:
    """The check as `prepare` and `status` show it: without the cache's stamp."""
    shown = check.copy()
    shown.pop("stamp", None)
    return shown


class QueryAvailability(TypedDict, total=False):
    """Whether a query can be encoded now and by which routes; decided without a request."""

    available: Required[bool]
    routes: Required[list[str]]
    reason: str | None
    code: str
    remediation: str | None


class StoreInspection(TypedDict, total=False):
    """VectorStore.inspect(): counts and the manifest's model, as the store sees them."""

    database_path: str
    meta: dict[str, str]
    record_count: int
    vector_count: int
    provider: str | None
    model: str | None
    dimensions: int | None
    metric: str
    normalized: bool | None
    matrix_loaded: bool
    sidecar_dir: str | None
    searchable_vectors: int
    matrix_source: dict[str, object]


class RecordPlace(TypedDict):
    """VectorStore.get_source_metadata(): where a record sits in the book (no text)."""

    record_id: str
    seq: int | None
    headings: list[str]
    source: dict[str, object]
    markdown_span: MarkdownSpan | None
    vector: NotRequired[list[float]]
