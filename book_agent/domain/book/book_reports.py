"""What the book commands return (contracts/core.md): list, remove, prepare, configure,
resolve and status. TypedDicts: the CLI's `--json` and the MCP tools print them as they are.

A package's own inspection (`PackageInfo.to_dict()`, contracts/package-inspection.md) and a
runtime config's dict (`RuntimeConfig.to_dict()`) are the domain's; they appear here as
`PackageReport` and `ConfigDict`.
"""

# No `from __future__ import annotations`: a TypedDict reads Required/NotRequired at class
# creation, and a string annotation would hide them from __required_keys__.
from typing import Any, NotRequired, Required, TypedDict

from book_agent.domain.book.runtime_states import LanguageCheck, LexicalState, QueryAvailability
from book_agent.domain.sources.locators import LocatorBuild, LocatorStatus

PackageReport = dict[str, Any]  # PackageInfo.to_dict(): contracts/package-inspection.md
ConfigDict = dict[str, Any]  # RuntimeConfig.to_dict(): contracts/core.md


class BookRow(TypedDict):
    """One registered book as `list` shows it."""

    book_id: str | None
    title: str | None
    package_root: str | None
    source: str | None
    imported: bool | None
    registered_at: str | None


class Removal(TypedDict):
    book_id: str
    removed: bool
    runtime_dir_removed: str
    imported_copy_removed: bool
    package_root: str | None


class LexicalBuild(TypedDict, total=False):
    built: Required[bool]
    record_count: int
    was: Required[LexicalState]


class Prepared(TypedDict):
    """`prepare` for one book: the lexical sidecar (built or not) and the language evidence."""

    book_id: str
    lexical: LexicalBuild
    language_evidence: NotRequired[LanguageCheck | None]
    locators: NotRequired[LocatorBuild]


class LibraryBook(TypedDict, total=False):
    """One book a library reference names (`library_books`): what it is, or why not usable."""

    book_id: Required[str]
    available: Required[bool]
    code: str
    reason: str
    title: str | None
    language: str | None
    records: int | None
    model: str | None
    dimensions: int | None
    kind: str | None


class LibraryPrepared(TypedDict):
    """`prepare` for a library reference: each book's, then the library's indexes."""

    library: str
    lexical_index: dict[str, Any]  # the library index's build report (ports/library.py)
    vector_indexes: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    books: list[Prepared]


class Configured(TypedDict):
    book_id: str
    config: ConfigDict
    notes: list[str]


class Resolved(TypedDict):
    """A registered book as the facade opens it (`init`'s answer)."""

    book_id: str
    title: str | None
    package_root: str
    runtime_dir: str
    package: PackageReport
    config: ConfigDict


class PackageHealth(TypedDict):
    healthy: bool
    hashes_verified: bool
    changed_files: list[str]
    diagnostics: list[dict[str, Any]]


class Capability(TypedDict, total=False):
    """Whether a capability is available now, and what it needs."""

    available: Required[bool]
    needs: str
    kind: str | None
    model: str | None
    reason: str
    languages: list[str] | None
    languages_source: str
    language_evidence: LanguageCheck
    query_encoding: QueryAvailability


class StatusConfig(TypedDict):
    network: dict[str, Any]
    query: dict[str, Any]
    reranker: dict[str, Any]
    auth_env_set: bool  # whether the named variable is set: never its value


class Sidecars(TypedDict):
    lexical: LexicalState
    locators: LocatorStatus


class BookStatus(TypedDict):
    book_id: str
    title: str | None
    package_root: str
    runtime_dir: str
    package: PackageHealth
    sidecars: Sidecars
    capabilities: dict[str, Capability]
    config: StatusConfig
