"""Registration use cases: inspect, init, remove, prepare.

`init` is one transaction: a package is registered whole, or not at all.

Everything that can fail runs before the registry entry is written: the archive import,
the full inspection (every hash, every record), the runtime dir, the config, the lexical
index (built to a staged file). Only then is the entry put, and the staged index renamed
into place. Each step that writes something pushes its undo; any failure (a coded error, a
crash of the indexer, Ctrl-C) runs the undos in reverse, so a failed `init` leaves the
registry as it was and no runtime dir, imported copy or temp file behind; a failed re-init
leaves the previous registration intact.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import cast

from book_agent.domain.book.book_refs import one_book
from book_agent.domain.book.book_reports import BookRow, PackageReport, Prepared, Removal
from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.registry_entry import RegistryEntry, conflict, database_sha, new_entry
from book_agent.domain.book.runtime_states import LanguageCheck, unstamped
from book_agent.domain.book.sidecar_stamps import lexical_stamp
from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.locators import LocatorBuild
from book_agent.ports import Phases, Progress
from book_agent.services.books import OpenBooks
from book_agent.services.configure import apply_settings
from book_agent.services.context import Ports
from book_agent.services.locators import database_stamp, verify_book

LISTED_KEYS = ("book_id", "title", "package_root", "source", "imported", "registered_at")


class Undo:
    """Undo actions, run newest first; an undo that fails does not stop the others."""

    def __init__(self) -> None:
        self._steps: list[Callable[[], object]] = []

    def push(self, step: Callable[[], object]) -> None:
        self._steps.append(step)

    def run(self) -> None:
        # Ctrl-C while undoing must not leave the rest undone: the original error is what
        # propagates once every step has run.
        for step in reversed(self._steps):
            with contextlib.suppress(Exception, KeyboardInterrupt):
                step()
        self._steps.clear()


class Registration:
    def __init__(self, ports: Ports, books: OpenBooks) -> None:
        self._ports = ports
        self._books = books

    def inspect(self, path: str | Path) -> PackageReport:
        """Inspect a package folder or archive without registering it."""
        source = Path(path).expanduser()
        report = self._ports.packages.inspect_any(source).to_dict()
        if self._ports.packages.is_archive(source):
            # the paths point into the temporary folder it was extracted to, now removed
            report["archive"] = {"path": str(source.resolve()), "extracted_to_temporary_folder": True,
                                 "paths_are_temporary": True}
        return report

    def init(self, path: str | Path, reranker: str, replace: bool, progress: Phases) -> str:
        """Verify and register; returns the book_id. All or nothing (see the module doc)."""
        source = Path(path).expanduser().resolve()
        undo = Undo()
        try:
            entry, previous = self._register(source, reranker, replace, progress, undo)
        except BaseException:
            undo.run()
            raise
        book_id = str(entry["book_id"])
        self._books.forget(book_id)
        self.measure_language_evidence(book_id)
        self.verify_locators(book_id)
        self.profile_pages(book_id)
        if previous and previous.get("imported") and previous.get("package_root") != entry["package_root"]:
            self.drop_unused_import(Path(previous["package_root"]))  # the copy it replaced
        return book_id

    def _register(self, source: Path, reranker: str, replace: bool, progress: Phases,
                  undo: Undo) -> tuple[RegistryEntry, RegistryEntry | None]:
        ports = self._ports
        imported = ports.packages.is_archive(source)
        root = self._import(source, progress(f"importing {source.name}"), undo) if imported else source
        info = ports.packages.inspect(root, verify_hashes=True)
        ports.packages.validate(info)
        entry = new_entry(info, source, imported, ports.packages.fingerprint(info.root),
                          ports.packages.manifest_sha256(info.root))
        previous = self._registered(entry["book_id"])
        refused = conflict(previous, entry, replace)
        if refused is not None:
            raise refused  # before anything is written for this book
        runtime_dir = ports.runtime_dir(entry["book_id"])
        undo.push(ports.runtime.create_dir(runtime_dir))
        with ports.runtime.build_lock(runtime_dir):
            ports.runtime.sweep_stale_temps(runtime_dir)
            self._write_config(runtime_dir, reranker, undo)
            staged = self._stage_lexical(entry, info, runtime_dir, progress(f"{entry['book_id']}: lexical index"), undo)
            # pushed first: a put that fails after writing (a crash, Ctrl-C) is undone too
            undo.push(lambda: self._restore(entry, previous))
            ports.registry.put(entry, replace=replace)
            if staged is not None:
                ports.runtime.publish(staged, ports.runtime.lexical_path(runtime_dir))
        return entry, previous

    def _registered(self, book_id: str) -> RegistryEntry | None:
        try:
            return self._ports.registry.get(book_id)
        except BookAgentError as exc:
            if exc.code == "book.not_registered":
                return None
            raise

    def _restore(self, entry: RegistryEntry, previous: RegistryEntry | None) -> None:
        """Put back what `entry` replaced, if the registry still holds `entry` (a concurrent
        init that won the book_id keeps it)."""
        current = self._registered(entry["book_id"]) or {}
        if any(current.get(k) != entry.get(k) for k in ("package_root", "registered_at", "manifest_sha256")):
            return
        if previous is None:
            self._ports.registry.remove(entry["book_id"])
        else:
            self._ports.registry.put(previous, replace=True)

    def _import(self, source: Path, progress: Progress | None, undo: Undo) -> Path:
        managed = self._ports.managed_dir
        undo.push(self._ports.runtime.undo_new_folder(managed))
        root = self._ports.packages.import_archive(source, managed, progress)
        undo.push(lambda: self.drop_unused_import(root))
        return root

    def _write_config(self, runtime_dir: Path, reranker: str, undo: Undo) -> None:
        runtime = self._ports.runtime
        if reranker == "none" and runtime.has_config(runtime_dir):
            return
        undo.push(runtime.config_snapshot(runtime_dir))
        runtime.save_config(runtime_dir, apply_settings(runtime.load_config(runtime_dir), {"reranker": reranker}))

    def _stage_lexical(self, entry: RegistryEntry, info: PackageInfo, runtime_dir: Path,
                       progress: Progress | None, undo: Undo) -> Path | None:
        """Build the lexical index beside the live one (None when the live one is already fresh)."""
        assert info.database_path is not None
        expected = lexical_stamp(str(entry.get("manifest_sha256") or ""), database_sha(info))
        if self._ports.runtime.lexical_state(runtime_dir, expected)["fresh"]:
            return None
        import secrets  # a build only: ~10 ms (hashlib, hmac) of every search's start otherwise

        staged = runtime_dir / f".lexical-staged-{secrets.token_hex(6)}.sqlite"
        undo.push(lambda: self._ports.runtime.discard(staged))
        self._ports.runtime.build_lexical(info.database_path, staged, expected, progress)
        return staged

    def drop_unused_import(self, package_root: Path) -> bool:
        """Remove an imported copy (data_dir/packages/<sha>/...) that no registration uses."""
        in_use = [Path(e["package_root"]) for e in self._ports.registry.list()]
        return self._ports.packages.drop_import(package_root, self._ports.managed_dir, in_use)

    def remove(self, book_ref: str) -> Removal:
        """Unregister a book: its runtime dir goes, and its imported copy if it was imported.

        A package folder registered in place is never touched; a malformed registry entry
        is removed too (that is how it is repaired)."""
        try:
            entry: RegistryEntry = self._ports.registry.get(one_book(book_ref))
        except BookAgentError as exc:
            if exc.code != "registry.corrupt":
                raise
            entry = {}
        self._books.forget(book_ref)
        self._ports.registry.remove(book_ref)
        runtime = self._ports.runtime_dir(book_ref)
        self._ports.runtime.remove_dir(runtime)
        removed_copy = bool(entry.get("imported")) and self.drop_unused_import(Path(entry["package_root"]))
        return {"book_id": book_ref, "removed": True, "runtime_dir_removed": str(runtime),
                "imported_copy_removed": removed_copy, "package_root": entry.get("package_root")}

    def list_books(self) -> list[BookRow]:
        return [cast(BookRow, {k: e.get(k) for k in LISTED_KEYS}) for e in self._ports.registry.list()]

    def prepare(self, book_ref: str, phases: Phases) -> Prepared:
        """(Re)build the sidecars that are missing, corrupt or stale, under the build lock."""
        ports = self._ports
        entry = ports.registry.get(book_ref)
        info = ports.packages.inspect(Path(entry["package_root"]), verify_hashes=False)
        self._books.forget(book_ref)
        assert info.database_path is not None
        expected = lexical_stamp(str(entry.get("manifest_sha256") or ""), database_sha(info))
        runtime_dir = ports.runtime_dir(book_ref)
        with contextlib.ExitStack() as held:
            try:
                ports.runtime.create_dir(runtime_dir)
                held.enter_context(ports.runtime.build_lock(runtime_dir))
            except BookAgentError as exc:
                # A read-only data dir (a replica's) cannot take the lock: a book with nothing
                # to build is reported as it is; one that needs a build keeps the coded error.
                if exc.code != "storage.read_only" or not ports.runtime.lexical_state(runtime_dir, expected)["fresh"]:
                    raise
            else:
                ports.runtime.sweep_stale_temps(runtime_dir)
            state = ports.runtime.lexical_state(runtime_dir, expected)
            result: Prepared = {"book_id": entry["book_id"], "lexical": {"built": False, "was": state}}
            if not state["fresh"]:
                count = ports.runtime.build_lexical(info.database_path, ports.runtime.lexical_path(runtime_dir),
                                                    expected, phases(f"{book_ref}: lexical index"))
                result["lexical"] = {"built": True, "record_count": count, "was": state}
        result["language_evidence"] = self.measure_language_evidence(book_ref)
        result["locators"] = self.verify_locators(book_ref)
        self.profile_pages(book_ref)
        return result

    def profile_pages(self, book_id: str) -> int:
        """Every page of a PDF original profiled once for the page-image advice and kept in the
        runtime dir (sources/pdf/page_profile_cache.py), as the locators are, so a search never
        opens the PDF for it (a one-shot search stays light; issue 46). Best effort: a page not
        kept is read by the search that needs it. The number of pages read."""
        try:
            store = self._books.open(book_id).page_profiles
        except BookAgentError:
            return 0
        fill = getattr(store, "profile_all", None)  # the runtime dir's store; a fake's may lack it
        return int(fill()) if callable(fill) else 0

    def verify_locators(self, book_id: str) -> LocatorBuild:
        """Verify every record against the original once (kept in the runtime dir, rebuilt
        when the package or the verifier changes), so that search hands out checked locators."""
        book = self._books.open(book_id)
        runtime_dir = self._ports.runtime_dir(book_id)
        expected = database_stamp(book.entry, book.package)
        try:
            sources = book.sources
        except BookAgentError as exc:  # no original to read: hits keep their claims (record-metadata)
            return {"built": False, "error": exc.to_dict()}
        if self._ports.locators.state(runtime_dir, expected).get("fresh"):
            return verify_book(self._ports.locators, sources, runtime_dir, expected)  # reads only: no lock
        with self._ports.runtime.build_lock(runtime_dir):
            result = verify_book(self._ports.locators, sources, runtime_dir, expected)
        if result["built"]:
            self._books.forget(book_id)  # the next search opens the new sidecar
        return result

    def measure_language_evidence(self, book_id: str) -> LanguageCheck | None:
        """Does the model read the book's scripts? Measured once per model and route (cached)."""
        book = self._books.open(book_id)
        store, runtime, _, problem = book.vector_parts
        if problem is not None or runtime is None:
            return None
        try:
            check = book.vector_check((book.package.vector_manifest or {}).get("model"), runtime, store)
        except BookAgentError as exc:  # evidence is optional: search falls back to what is known
            return {"status": "failed", "code": exc.code, "reason": exc.message}
        self._books.forget(book_id)  # the next search reads the new evidence
        return unstamped(check) if check else None


