"""`init` as one transaction: a package is registered whole, or not at all.

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
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from book_agent.adapters.storage import fts_lexical_index as fts
from book_agent.adapters.storage.json_registry import conflict
from book_agent.adapters.storage.runtime_files import build_lock, sweep_stale_temps
from book_agent.app import books, sidecars
from book_agent.app.config_store import CONFIG_NAME, apply_settings, load_config, save_config
from book_agent.app.fingerprint import fingerprint, manifest_sha256
from book_agent.domain.errors import BookAgentError
from book_agent.domain.package import PackageInfo
from book_agent.ports import Registry

Progress = Callable[[int, int], None]


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


def register(data_dir: Path, registry: Registry, source: Path, reranker: str, replace: bool,
             progress: Progress | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Register the package at `source`; returns (new entry, the entry it replaced or None)."""
    undo = Undo()
    try:
        return _register(data_dir, registry, source, reranker, replace, progress, undo)
    except BaseException:
        undo.run()
        raise


def _register(data_dir: Path, registry: Registry, source: Path, reranker: str, replace: bool,
              progress: Progress | None, undo: Undo) -> tuple[dict[str, Any], dict[str, Any] | None]:
    imported = books.is_archive(source)
    root = _import(data_dir, registry, source, progress, undo) if imported else source
    info = books.inspect_dir(root, verify_hashes=True)
    books.validate(info)
    entry = books.registry_entry(info, source, imported, fingerprint(info.root), manifest_sha256(info.root))
    previous = _registered(registry, entry["book_id"])
    refused = conflict(previous, entry, replace)
    if refused is not None:
        raise refused  # before anything is written for this book
    runtime_dir = data_dir / "books" / str(entry["book_id"])
    _make_dir(runtime_dir, undo)
    with build_lock(runtime_dir):
        sweep_stale_temps(runtime_dir)
        _write_config(runtime_dir, reranker, undo)
        staged = _stage_lexical(entry, info, runtime_dir, progress, undo)
        # pushed first: a put that fails after writing (a crash, Ctrl-C) is undone too
        undo.push(lambda: _restore(registry, entry, previous))
        registry.put(entry, replace=replace)
        if staged is not None:
            os.replace(staged, sidecars.lexical_path(runtime_dir))
    return entry, previous


def _registered(registry: Registry, book_id: str) -> dict[str, Any] | None:
    try:
        return registry.get(book_id)
    except BookAgentError as exc:
        if exc.code == "book.not_registered":
            return None
        raise


def _restore(registry: Registry, entry: dict[str, Any], previous: dict[str, Any] | None) -> None:
    """Put back what `entry` replaced, if the registry still holds `entry` (a concurrent init
    that won the book_id keeps it)."""
    current = _registered(registry, entry["book_id"]) or {}
    if any(current.get(k) != entry.get(k) for k in ("package_root", "registered_at", "manifest_sha256")):
        return
    if previous is None:
        registry.remove(entry["book_id"])
    else:
        registry.put(previous, replace=True)


def _import(data_dir: Path, registry: Registry, source: Path, progress: Progress | None, undo: Undo) -> Path:
    managed = data_dir / "packages"
    _undo_new_dir(managed, undo)
    root = books.import_into(source, managed, progress)
    undo.push(lambda: drop_unused_import(data_dir, registry, root))
    return root


def _make_dir(folder: Path, undo: Undo) -> None:
    _undo_new_dir(folder.parent, undo)
    if not folder.exists():
        undo.push(lambda: books.remove_tree(folder))
    _create_runtime_dir(folder)


def _create_runtime_dir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BookAgentError(
            "book.runtime_dir_failed", f"cannot create the runtime dir {folder}: {exc.strerror or exc}",
            details={"runtime_dir": str(folder)},
            remediation="check that the data dir is a writable folder (--data-dir / $BOOK_AGENT_HOME)",
        ) from exc


def _undo_new_dir(folder: Path, undo: Undo) -> None:
    """A folder created for this init goes again on failure, when nothing else is in it."""
    if not folder.exists():
        undo.push(lambda: folder.rmdir() if folder.is_dir() and not any(folder.iterdir()) else None)


def _write_config(runtime_dir: Path, reranker: str, undo: Undo) -> None:
    path = runtime_dir / CONFIG_NAME
    if reranker == "none" and path.exists():
        return
    before = path.read_bytes() if path.exists() else None
    undo.push(lambda: path.write_bytes(before) if before is not None else path.unlink(missing_ok=True))
    save_config(runtime_dir, apply_settings(load_config(runtime_dir), {"reranker": reranker}))


def _stage_lexical(entry: dict[str, Any], info: PackageInfo, runtime_dir: Path, progress: Progress | None,
                   undo: Undo) -> Path | None:
    """Build the lexical index beside the live one (None when the live one is already fresh)."""
    assert info.database_path is not None
    expected = sidecars.lexical_stamp(str(entry.get("manifest_sha256") or ""), database_sha(info))
    if sidecars.lexical_state(runtime_dir, expected)["fresh"]:
        return None
    staged = runtime_dir / f".lexical-staged-{secrets.token_hex(6)}.sqlite"
    undo.push(lambda: staged.unlink(missing_ok=True))
    fts.build_sidecar(info.database_path, staged, expected, progress)
    return staged


def database_sha(info: PackageInfo | None) -> str | None:
    files = ((info.archive_manifest if info else None) or {}).get("files") or {}
    return (files.get("database") or {}).get("sha256")


def drop_unused_import(data_dir: Path, registry: Registry, package_root: Path) -> bool:
    """Remove an imported copy (data_dir/packages/<sha>/...) that no registration uses."""
    managed = (data_dir / "packages").resolve()
    try:
        folder = package_root.resolve().relative_to(managed).parts[0]
    except (ValueError, IndexError):
        return False  # not ours: a package folder registered in place
    in_use = any(Path(e["package_root"]).resolve().is_relative_to(managed / folder) for e in registry.list())
    if in_use:
        return False
    books.remove_tree(managed / folder)
    return True


def prepare(entry: dict[str, Any], info: PackageInfo, runtime_dir: Path, progress: Progress | None) -> dict[str, Any]:
    """(Re)build the sidecars that are missing, corrupt or stale, under the build lock."""
    assert info.database_path is not None
    expected = sidecars.lexical_stamp(str(entry.get("manifest_sha256") or ""), database_sha(info))
    _create_runtime_dir(runtime_dir)
    with build_lock(runtime_dir):
        sweep_stale_temps(runtime_dir)
        state = sidecars.lexical_state(runtime_dir, expected)
        result: dict[str, Any] = {"book_id": entry["book_id"], "lexical": {"built": False, "was": state}}
        if not state["fresh"]:
            built = sidecars.build_lexical(info.database_path, runtime_dir, expected, progress)
            result["lexical"] = {**built, "was": state}
    return result
