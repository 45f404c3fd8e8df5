"""The ports: one small Protocol per role the core calls. Each docstring is the contract.

First-party adapters subclass their port (`class JsonRegistry(Registry)`); plug-ins only need
the shape. bootstrap.py picks the adapters; values crossing a port are domain types."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from book_agent.domain.package import PackageInfo
from book_agent.domain.query_encoding import QueryEncoding
from book_agent.domain.records import LexicalHit, Record, Vector, VectorHit
from book_agent.domain.registry_entry import RegistryEntry
from book_agent.domain.runtime_config import RuntimeConfig

__all__ = [
    "BookParts", "HostPort", "LexicalHit", "LexicalIndex", "MarkdownReader", "PackageStore",
    "PageRenderer", "Progress", "QueryEncoder", "QueryEncoding", "QueryVectorizer", "RecordSource",
    "Registry", "RegistryEntry", "Reranker", "RuntimeStore", "SourceReader", "VectorStore",
]

Progress = Callable[[int, int], None]



@runtime_checkable
class RecordSource(Protocol):
    """The package's text records (index.sqlite, read-only)."""

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Record]:
        """The records with these ids (unknown ids are simply absent)."""
        ...
    def get(self, record_id: str) -> Record:
        """Raises BookAgentError(code='record.not_found') for an unknown id."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class VectorStore(Protocol):
    """The package's prebuilt vectors. Read-only: never writes a byte of the package."""

    def inspect(self) -> dict[str, Any]: ...
    def validate(self) -> list[Any]: ...
    def get_record(self, record_id: str) -> Record:
        """Raises BookAgentError(code='record.not_found') for an unknown id."""
        ...
    def iter_records(self) -> Iterator[Record]: ...
    def get_source_metadata(self, record_id: str) -> dict[str, Any]: ...
    def search(self, query_vector: Vector, top_k: int) -> list[VectorHit]:
        """Exact top-k by the manifest's metric, best first."""
        ...
    def load(self) -> Any:
        """Load the matrix now (a warm-up), instead of at the first search."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class LexicalIndex(Protocol):
    """A full-text index over the records, kept in the book's runtime dir."""

    def search(self, query: str, top_k: int) -> list[LexicalHit]:
        """Best first. Query text is never parsed as query syntax: any string is safe."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class Registry(Protocol):
    """Registered books, persisted atomically under a cross-process lock."""

    def get(self, book_id: str) -> RegistryEntry:
        """Raises BookAgentError(code='book.not_registered') for an unknown id,
        'registry.corrupt' when the stored entry is unusable."""
        ...
    def put(self, entry: RegistryEntry, replace: bool = False) -> RegistryEntry:
        """Raises BookAgentError(code='book.already_registered') when another package holds
        the id and `replace` is False."""
        ...
    def list(self) -> list[RegistryEntry]: ...
    def remove(self, book_id: str) -> None: ...


@runtime_checkable
class PackageStore(Protocol):
    """Book packages on disk: finding, verifying and importing them. Never writes into a package."""

    def exists(self, path: Path) -> bool: ...
    def is_archive(self, path: Path) -> bool:
        """A zip or tar(.gz) file, judged by its bytes (a manifest file is not an archive)."""
        ...
    def inspect(self, root: Path, verify_hashes: bool = True) -> PackageInfo:
        """A package folder (or a folder holding exactly one). Problems become diagnostics."""
        ...
    def inspect_any(self, path: Path) -> PackageInfo:
        """A folder, or an archive extracted to a temporary place and removed again.
        Raises BookAgentError(code='package.not_found') for a missing path."""
        ...
    def validate(self, info: PackageInfo) -> None:
        """Raises BookAgentError when the package may not be used (an error diagnostic)."""
        ...
    def import_archive(self, archive: Path, managed_dir: Path, progress: Progress | None) -> Path:
        """Import safely (all or nothing, verified before publishing); returns the package root."""
        ...
    def remove_tree(self, folder: Path) -> None:
        """Remove a folder this program made (imported copies are read-only)."""
        ...
    def drop_import(self, package_root: Path, managed_dir: Path, roots_in_use: Sequence[Path]) -> bool:
        """Remove the imported copy holding `package_root` (managed_dir/<sha>/...) unless a root
        in use lies inside it; False for a package that is not an import."""
        ...
    def fingerprint(self, root: Path) -> dict[str, list[int]]: ...
    def changes(self, root: Path, recorded: dict[str, Any]) -> list[str]:
        """Listed files that are no longer what the fingerprint recorded ('.' for the root)."""
        ...
    def manifest_sha256(self, root: Path) -> str: ...


@runtime_checkable
class RuntimeStore(Protocol):
    """A book's runtime dir (data_dir/books/<id>/): its config and derived sidecars.

    Every write is atomic; builders hold the dir's build lock."""

    def create_dir(self, runtime_dir: Path) -> Callable[[], None]:
        """Create it (and its parents); returns an undo that removes what this call created.
        Raises BookAgentError(code='book.runtime_dir_failed')."""
        ...
    def undo_new_folder(self, folder: Path) -> Callable[[], None]:
        """An undo that removes `folder` if it does not exist now and is empty by then."""
        ...
    def remove_dir(self, runtime_dir: Path) -> None: ...
    def build_lock(self, runtime_dir: Path) -> AbstractContextManager[None]: ...
    def sweep_stale_temps(self, runtime_dir: Path) -> list[str]: ...
    def load_config(self, runtime_dir: Path) -> RuntimeConfig:
        """The defaults when there is no file; BookAgentError(code='config.invalid') for a bad one."""
        ...
    def save_config(self, runtime_dir: Path, config: RuntimeConfig) -> None: ...
    def has_config(self, runtime_dir: Path) -> bool: ...
    def config_snapshot(self, runtime_dir: Path) -> Callable[[], None]:
        """A function that puts the config file back as it is now (an undo)."""
        ...
    def lexical_path(self, runtime_dir: Path) -> Path: ...
    def lexical_state(self, runtime_dir: Path, expected: dict[str, str]) -> dict[str, Any]:
        """{present, fresh, reason, path[, record_count]} against the expected stamp."""
        ...
    def build_lexical(self, database_path: Path, target: Path, expected: dict[str, str],
                      progress: Progress | None) -> int:
        """Build the FTS sidecar at `target`; returns the record count."""
        ...
    def publish(self, staged: Path, target: Path) -> None:
        """Move a finished sidecar into place atomically."""
        ...
    def discard(self, path: Path) -> None:
        """Remove a staged file (missing is fine)."""
        ...
    def read_vector_check(self, runtime_dir: Path, stamp: dict[str, str]) -> dict[str, Any] | None: ...
    def write_vector_check(self, runtime_dir: Path, stamp: dict[str, str], result: dict[str, Any]) -> None: ...



@runtime_checkable
class QueryEncoder(Protocol):
    """Turns query text into a vector with exactly the package's model."""

    @property
    def route(self) -> str:
        """How queries are encoded, e.g. `local:numpy:/path` or `remote:siliconflow:URL`."""
        ...
    def encode(self, text: str) -> Vector:
        """Raises QueryRuntimeError when the model or provider cannot serve the query."""
        ...


@runtime_checkable
class QueryVectorizer(Protocol):
    """The query runtime as the search sees it: every route of the book's model."""

    def encode_query(self, query: str) -> QueryEncoding:
        """status 'ok' with a vector, or 'unavailable' with the error; never raises for
        an encoder failure."""
        ...
    def accept_query_vector(self, vector: Sequence[float]) -> QueryEncoding:
        """A caller's vector, checked and marked 'user-supplied-unverified'."""
        ...
    def availability(self) -> dict[str, Any]:
        """{available, routes, ...}: which routes could serve now. Makes no request."""
        ...
    def tokenizer_vocabulary(self) -> list[str] | None:
        """The local model's word pieces, or None when they cannot be seen (no request made)."""
        ...
    def warm_up(self) -> bool:
        """Load a local encoder now; True when one was loaded."""
        ...


@runtime_checkable
class Reranker(Protocol):
    def rerank(self, query: str, candidates: Sequence[dict[str, Any]], top_n: int) -> dict[str, Any]:
        """Returns {hits, rerank_requested, rerank_applied, warnings, error}; every candidate
        field survives; on failure the original order with rerank_applied False."""
        ...
    def healthcheck(self) -> dict[str, Any]: ...
    def provider_info(self) -> dict[str, Any]: ...



@runtime_checkable
class SourceReader(Protocol):
    """The original (PDF or EPUB): where a passage is, and its text back."""

    def locate(self, hit_or_text: Any, hints: dict[str, Any] | None = None) -> dict[str, Any]:
        """A verified locator for a hit, record or quotation (contracts/sources.md)."""
        ...
    def read_source(self, locator: Any, max_chars: int = 12000) -> dict[str, Any]: ...
    def close(self) -> None: ...


@runtime_checkable
class PageRenderer(Protocol):
    """Page images of a fixed-layout original, cached in the runtime dir."""

    def render_page(self, page_index: Any, clip: Any = None, scale: Any = None, dpi: Any = 150,
                    include_image: bool = False) -> dict[str, Any]:
        """Raises BookAgentError(code='render.*') for an EPUB or a bad page, clip or dpi."""
        ...


@runtime_checkable
class MarkdownReader(Protocol):
    """The package's Markdown rendition (book.md) and its agent skill (SKILL.md)."""

    def read_markdown(self, package: PackageInfo, *, record_span: tuple[int | None, int | None] | None,
                      record_id: str | None, start: int | None, end: int | None,
                      heading: str | None, context_chars: int) -> dict[str, Any]: ...
    def read_skill(self, package: PackageInfo) -> dict[str, Any]: ...



@runtime_checkable
class BookParts(Protocol):
    """Opens the adapters one registered book needs. Each is opened once per process by the
    caller (services/open_book.py) and closed by it; nothing is opened at construction."""

    def records(self, package: PackageInfo) -> RecordSource: ...
    def lexical_index(self, sidecar_path: Path) -> LexicalIndex: ...
    def vector_store(self, package: PackageInfo, runtime_dir: Path, database_sha256: str | None) -> VectorStore: ...
    def query_runtime(self, spec: dict[str, Any], config: RuntimeConfig, cache_dir: Path) -> QueryVectorizer: ...
    def reranker(self, config: RuntimeConfig, runtime_dir: Path) -> Reranker | None:
        """None for provider 'none'; raises BookAgentError(code='rerank.*') when it cannot load."""
        ...
    def sources(self, package: PackageInfo, runtime_dir: Path) -> SourceAndPages: ...


@runtime_checkable
class SourceAndPages(SourceReader, PageRenderer, Protocol):
    """The sources adapter serves both roles (one open document per book)."""



@runtime_checkable
class HostPort(Protocol):
    """One AI host's files (Codex TOML, Trae/WorkBuddy/Cherry Studio JSON), behind the
    HostAdapter facade. Pure: reads nothing but the text it is given (and `detect` the disk)."""

    host: str
    edition: str | None
    unconfirmed: tuple[str, ...]

    def detect(self) -> dict[str, Any]:
        """{installed: bool, evidence: [paths that exist], ...}: whether the host seems present."""
        ...
    def config_path(self) -> Path | None:
        """The user-level MCP config file we edit, or None when no program may write it."""
        ...
    def skills_dir(self) -> Path:
        """The folder that holds one sub-folder per installed skill."""
        ...
    def server_entry(self, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        """The keys book-agent manages in the server's entry (never a credential value)."""
        ...
    def add_server(self, text: str | None, path: Path, name: str, entry: dict[str, Any]) -> str:
        """The config text with our entry set (other keys kept). Raises host.config_malformed."""
        ...
    def remove_server(self, text: str, path: Path, name: str) -> tuple[str, bool]:
        """(text without our entry, whether nothing but an empty shell is left)."""
        ...
    def read_server(self, text: str | None, path: Path, name: str) -> dict[str, Any] | None: ...

    def warnings(self, argv: list[str], auth_env: str | None) -> list[dict[str, str]]:
        """Known refusals and caveats: [{code, message}]."""
        ...
    def manual(self, name: str, argv: list[str], auth_env: str | None) -> dict[str, Any]:
        """{steps: [...], snippet: str, deeplink: str | None} for doing it by hand."""
        ...
