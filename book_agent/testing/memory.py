"""In-memory adapters for every port a use case needs: test the services with no files.

    books = MemoryPackages({"/books/a": FakeBook("book-a", records=[...])})
    agent = build_agent("/data", registry=MemoryRegistry(), packages=books,
                        runtime=MemoryRuntime(books), parts=MemoryBookParts(books),
                        markdown=MemoryMarkdown(books))

Paths are only names here: nothing is read or written on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.registry_entry import RegistryEntry, conflict
from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.domain.book.runtime_states import Fingerprint, LanguageCheck, LexicalState, Stamp
from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import Record
from book_agent.ports import (
    PackageStore,
    Progress,
    Registry,
    RuntimeStore,
)
from book_agent.testing.memory_parts import MemoryBookParts, MemoryMarkdown


@dataclass
class FakeBook:
    """A package as the fakes serve it: an id, records, and a version that changes its hash."""

    book_id: str
    records: list[Record] = field(default_factory=list)
    title: str = "A fake book"
    version: int = 1
    errors: list[str] = field(default_factory=list)  # diagnostics of severity error
    skill: str = "---\nname: fake\n---\nRead the book."
    changed: bool = False  # the package changed on disk since init


class MemoryRegistry(Registry):
    def __init__(self) -> None:
        self.entries: dict[str, RegistryEntry] = {}

    def get(self, book_id: str) -> RegistryEntry:
        if book_id not in self.entries:
            raise BookAgentError("book.not_registered", f"no book {book_id!r} is registered")
        return dict(self.entries[book_id])  # type: ignore[return-value]

    def put(self, entry: RegistryEntry, replace: bool = False) -> RegistryEntry:
        refused = conflict(self.entries.get(entry["book_id"]), entry, replace)
        if refused is not None:
            raise refused
        self.entries[entry["book_id"]] = dict(entry)  # type: ignore[assignment]
        return entry

    def list(self) -> list[RegistryEntry]:
        return [dict(self.entries[k]) for k in sorted(self.entries)]  # type: ignore[misc]

    def remove(self, book_id: str) -> None:
        self.get(book_id)  # book.not_registered, as JsonRegistry
        del self.entries[book_id]


class MemoryPackages(PackageStore):
    """Package folders by path. Archives are not faked: every path is a folder."""

    def __init__(self, books: dict[str, FakeBook]) -> None:
        self.books = {Path(k): v for k, v in books.items()}
        self.removed: list[Path] = []

    def book(self, root: Path) -> FakeBook:
        for path, book in self.books.items():
            if path == root or Path(str(root)).resolve() == path.resolve():
                return book
        raise BookAgentError("package.not_found", f"{root} does not exist")

    def by_database(self, database_path: Path) -> FakeBook:
        return self.book(database_path.parent)

    def exists(self, path: Path) -> bool:
        return any(path == root or path in root.parents for root in self.books)

    def is_archive(self, path: Path) -> bool:
        return False

    def inspect(self, root: Path, verify_hashes: bool = True) -> PackageInfo:
        book = self.book(root)
        return PackageInfo(
            book_id=book.book_id, title=book.title, root=root, original_path=None, markdown_path=None,
            skill_path=None, database_path=root / "index.sqlite",
            archive_manifest={"files": {"database": {"sha256": f"db-{book.version}"}}}, vector_manifest=None,
            diagnostics=[Diagnostic("package.record_invalid", message, "error") for message in book.errors])

    def inspect_any(self, path: Path) -> PackageInfo:
        return self.inspect(path)

    def validate(self, info: PackageInfo) -> None:
        if info.has_errors:
            raise BookAgentError("package.invalid", "the fake package has errors")

    def import_archive(self, archive: Path, managed_dir: Path, progress: Progress | None) -> Path:
        raise BookAgentError("archive.unsupported_format", "the fakes import no archive")

    def remove_tree(self, folder: Path) -> None:
        self.removed.append(folder)

    def drop_import(self, package_root: Path, managed_dir: Path, roots_in_use: Sequence[Path]) -> bool:
        return False  # the fakes import nothing

    def fingerprint(self, root: Path) -> dict[str, list[int]]:
        return {"book-package.json": [self.book(root).version, 0, 0]}

    def changes(self, root: Path, recorded: Fingerprint) -> list[str]:
        return ["index.sqlite"] if self.book(root).changed else []

    def manifest_sha256(self, root: Path) -> str:
        book = self.book(root)
        return f"manifest-{book.book_id}-{book.version}"


class MemoryRuntime(RuntimeStore):
    """Runtime dirs as dicts. `fail_build` makes the next lexical build raise it."""

    def __init__(self, packages: MemoryPackages) -> None:
        self.packages = packages
        self.dirs: set[Path] = set()
        self.configs: dict[Path, RuntimeConfig] = {}
        self.sidecars: dict[Path, dict[str, str]] = {}
        self.vector_checks: dict[Path, LanguageCheck] = {}
        self.fail_build: BookAgentError | None = None

    def create_dir(self, runtime_dir: Path) -> Callable[[], None]:
        new = runtime_dir not in self.dirs
        self.dirs.add(runtime_dir)
        return (lambda: self.remove_dir(runtime_dir)) if new else (lambda: None)

    def undo_new_folder(self, folder: Path) -> Callable[[], None]:
        return lambda: None

    def remove_dir(self, runtime_dir: Path) -> None:
        self.dirs.discard(runtime_dir)
        for store in (self.configs, self.sidecars, self.vector_checks):
            for path in [p for p in store if p == runtime_dir or runtime_dir in p.parents]:
                del store[path]

    def build_lock(self, runtime_dir: Path) -> AbstractContextManager[None]:
        return nullcontext()

    def sweep_stale_temps(self, runtime_dir: Path) -> list[str]:
        return []

    def load_config(self, runtime_dir: Path) -> RuntimeConfig:
        return self.configs.get(runtime_dir, RuntimeConfig())

    def save_config(self, runtime_dir: Path, config: RuntimeConfig) -> None:
        self.configs[runtime_dir] = config

    def has_config(self, runtime_dir: Path) -> bool:
        return runtime_dir in self.configs

    def config_snapshot(self, runtime_dir: Path) -> Callable[[], None]:
        before = self.configs.get(runtime_dir)

        def restore() -> None:
            if before is None:
                self.configs.pop(runtime_dir, None)
            else:
                self.configs[runtime_dir] = before

        return restore

    def lexical_path(self, runtime_dir: Path) -> Path:
        return runtime_dir / "lexical.sqlite"

    def lexical_state(self, runtime_dir: Path, expected: Stamp) -> LexicalState:
        stamp = self.sidecars.get(self.lexical_path(runtime_dir))
        if stamp is None:
            return {"present": False, "fresh": False, "reason": "missing"}
        fresh = all(stamp.get(k) == v for k, v in expected.items())
        return {"present": True, "fresh": fresh, "reason": None if fresh else "stale",
                "record_count": int(stamp.get("record_count", "0"))}

    def build_lexical(self, database_path: Path, target: Path, expected: dict[str, str],
                      progress: Progress | None) -> int:
        if self.fail_build is not None:
            raise self.fail_build
        count = len(self.packages.by_database(database_path).records)
        self.sidecars[target] = {**expected, "record_count": str(count), "database": str(database_path)}
        return count

    def publish(self, staged: Path, target: Path) -> None:
        self.sidecars[target] = self.sidecars.pop(staged)

    def discard(self, path: Path) -> None:
        self.sidecars.pop(path, None)

    def read_vector_check(self, runtime_dir: Path, stamp: Stamp) -> LanguageCheck | None:
        found = self.vector_checks.get(runtime_dir)
        return found if found is not None and found.get("stamp") == stamp else None

    def write_vector_check(self, runtime_dir: Path, stamp: Stamp, result: LanguageCheck) -> None:
        self.vector_checks[runtime_dir] = {**result, "stamp": stamp}


def memory_adapters(books: dict[str, FakeBook]) -> dict[str, Any]:
    """Keyword arguments for `agent.build_agent`/`bootstrap.build_ports`: every port in memory."""
    packages = MemoryPackages(books)
    runtime = MemoryRuntime(packages)
    return {"registry": MemoryRegistry(), "packages": packages, "runtime": runtime,
            "parts": MemoryBookParts(packages, runtime), "markdown": MemoryMarkdown(packages)}

