"""Storage ports: the records, the indexes, the registry, packages on disk and runtime dirs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol, runtime_checkable

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.registry_entry import RegistryEntry
from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.domain.book.runtime_states import (
    CopyVerification,
    Fingerprint,
    LanguageCheck,
    LexicalState,
    PackageVerdict,
    RecordPlace,
    Stamp,
    StoreInspection,
)
from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.records import LexicalHit, Record, Vector, VectorHit
from book_agent.domain.search.vector_background import Background

Progress = Callable[[int, int], None]
# long work in phases: a phase's label ("art-of-war: lexical index") -> that phase's progress
Phases = Callable[[str], Progress | None]


@runtime_checkable
class RecordSource(Protocol):
    """The package's text records (index.sqlite, read-only)."""

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Record]:
        """The records with these ids (unknown ids are simply absent). A source may hand the
        same Record objects to every caller (a package never changes under an open book):
        callers read them and never change them (copy first, as `dataclasses.replace` does)."""
        ...
    def get(self, record_id: str) -> Record:
        """Raises BookAgentError(code='record.not_found') for an unknown id."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class VectorStore(Protocol):
    """The package's prebuilt vectors. Read-only: never writes a byte of the package."""

    def inspect(self) -> StoreInspection: ...
    def validate(self) -> list[Diagnostic]:
        """The database's and the vectors' checks (no error diagnostic: the vectors are sound)."""
        ...
    def get_record(self, record_id: str) -> Record:
        """Raises BookAgentError(code='record.not_found') for an unknown id."""
        ...
    def iter_records(self) -> Iterator[Record]: ...
    def get_source_metadata(self, record_id: str) -> RecordPlace: ...
    def search(self, query_vector: Vector, top_k: int) -> list[VectorHit]:
        """Exact top-k by the manifest's metric, best first."""
        ...
    def search_ids(self, query_vector: Vector, top_k: int) -> list[tuple[str, float]]:
        """As search, (record_id, score) only: no record is read."""
        ...
    def background(self, query_vector: Vector) -> Background | None:
        """The query's scores against the book's records of no relevance (a fixed sample of the
        book's own records, scored as search scores them): the fusion's floor and the channel's
        confidence (book_agent/domain/search/vector_background.py). Cheap: no scan of the book.
        None where the store cannot tell (the fusion then measures from 0). By default, None."""
        return None
    def load(self) -> object:
        """Load the matrix now (a warm-up), instead of at the first search; what it returns is
        the store's own (callers ignore it)."""
        ...
    def close(self) -> None: ...


@runtime_checkable
class LexicalIndex(Protocol):
    """A full-text index over the records, kept in the book's runtime dir."""

    def search(self, query: str, top_k: int) -> list[LexicalHit]:
        """Best first. Query text is never parsed as query syntax: any string is safe."""
        ...
    def warm_up(self) -> None:
        """Load now what repeated searches use, which a one-shot search never loads (a
        long-lived process's warm-up: its first real search then costs what later ones do).
        By default, nothing."""
        return None
    def close(self) -> None: ...


@runtime_checkable
class PassageTerms(Protocol):
    """Text read into terms as the lexical channel reads it (stems, CJK bigrams, folded
    script), for reading passages (book_agent/domain/search/proximity.py): the query's terms, and where each
    stands in a passage. Pure reading: no index, no network; any text is safe."""

    def positions(self, query: str, texts: Sequence[str]) -> tuple[list[str], list[Mapping[str, Sequence[int]]]]:
        """(the query's distinct terms, in query order; for each text, its terms' token
        positions, ascending: every term of the text, the query's among them). The mappings
        are read-only (a reader may hand the same one to every caller). A query of fewer than
        two distinct terms has nothing to find together: its terms, and {} for each text."""
        ...
    def read_ahead(self, texts: Sequence[str]) -> None:
        """Read these texts now (a warm-up): a later `positions` finds them read. A reader may
        keep fewer; its answers are the same either way."""
        ...
    def learn(self, words: Mapping[str, str]) -> None:
        """Words with their one term each, known already (a book's lexical index): a reader
        may keep them so as not to work them out at a search. Readings are the same either way."""
        ...
    def close(self) -> None:
        """Let go of what it keeps (a cache of readings); it stays usable."""
        ...


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
    def list(self) -> list[RegistryEntry]:
        """Every entry, by book id."""
        ...
    def remove(self, book_id: str) -> None:
        """Raises BookAgentError(code='book.not_registered') for an unknown id."""
        ...


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
    def fingerprint(self, root: Path) -> Fingerprint: ...
    def changes(self, root: Path, recorded: Fingerprint) -> list[str]:
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
    def lexical_state(self, runtime_dir: Path, expected: Stamp) -> LexicalState:
        """{present, fresh, reason, path[, record_count]} against the expected stamp."""
        ...
    def read_package_verdict(self, runtime_dir: Path) -> PackageVerdict | None:
        """The verdict write_package_verdict left (None: none, or unreadable)."""
        ...
    def write_package_verdict(self, runtime_dir: Path, verdict: PackageVerdict) -> None:
        """Remember that the package, as fingerprinted in `verdict`, was verified to hold the
        registered bytes. Best effort: a read-only data dir keeps nothing (never raises)."""
        ...
    def copy_verification(self, runtime_dir: Path) -> CopyVerification:
        """The derived files of the runtime dir recognised as a copy (new identity, same bytes)
        and verified: when, how long it took, where the verdict is kept."""
        ...
    def build_lexical(self, database_path: Path, target: Path, expected: Stamp,
                      progress: Progress | None) -> int:
        """Build the FTS sidecar at `target`; returns the record count."""
        ...
    def publish(self, staged: Path, target: Path) -> None:
        """Move a finished sidecar into place atomically."""
        ...
    def discard(self, path: Path) -> None:
        """Remove a staged file (missing is fine)."""
        ...
    def read_vector_check(self, runtime_dir: Path, stamp: Stamp) -> LanguageCheck | None:
        """The cached language check when it was made for exactly this stamp, else None."""
        ...
    def write_vector_check(self, runtime_dir: Path, stamp: Stamp, result: LanguageCheck) -> None: ...
