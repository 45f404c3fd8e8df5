"""PackageInspector and PackageValidator (contract v0.1.0): what a package is, and whether
it may be used.

`inspect` finds the unique root (package_root), then gathers every finding as a
Diagnostic instead of stopping at the first: manifest rules (package_manifest), listed
and unlisted files (package_files), the original's media type (package_media), and the
database with its vectors (package_database). Nothing from a package is executed, and no
byte of it is written: see contracts/package-inspection.md.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import MANIFEST_NAME, PackageInfo
from book_agent.domain.diagnostics import Diagnostic, errors_in
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.package.database_checks import check_database
from book_agent_adapters.package.file_checks import check_listed, check_unlisted
from book_agent_adapters.package.json_documents import load_json_object
from book_agent_adapters.package.manifest_checks import (
    check_archive_manifest,
    check_vector_manifest,
    file_entries,
    valid_book_id,
)
from book_agent_adapters.package.media_type import check_media_type
from book_agent_adapters.package.record_checks import original_kind
from book_agent_adapters.package.root_finder import find_package_root

_PATH_FIELDS = {
    "files.original": "original_path",
    "files.markdown": "markdown_path",
    "files.skill": "skill_path",
    "files.database": "database_path",
}


class PackageInspector:
    """Reads a package and reports everything wrong with it; writes nothing."""

    def inspect(self, path: Path | str, verify_hashes: bool = True) -> PackageInfo:
        """A PackageInfo whose diagnostics describe every problem found.

        Raises BookAgentError only when `path` cannot be read at all (package.not_found,
        package.unreadable), holds no package (package.no_manifest) or several
        (package.ambiguous_root). With verify_hashes=False the manifest's hashes are
        taken as they are (sizes are still checked).
        """
        root = find_package_root(path)
        manifest, diagnostics = _read_manifest(root)
        info = PackageInfo(
            book_id=None, title=None, root=root, original_path=None, markdown_path=None,
            skill_path=None, database_path=None, archive_manifest=manifest,
            vector_manifest=None, diagnostics=diagnostics,
        )
        if manifest is None:
            return info
        book_id = manifest.get("book_id")
        info.book_id = book_id if valid_book_id(book_id) else None
        info.title = manifest["title"] if isinstance(manifest.get("title"), str) else None
        diagnostics += check_archive_manifest(manifest, MANIFEST_NAME)

        listed = check_listed(root, file_entries(manifest), verify_hashes)
        diagnostics += listed.diagnostics
        diagnostics += check_unlisted(root, listed.listed)
        info.file_hashes = listed.hashes
        for entry, field_name in _PATH_FIELDS.items():
            setattr(info, field_name, listed.paths.get(entry))

        original = _entry(manifest, "original")
        if original is not None:
            diagnostics += check_media_type(original.get("media_type"), info.original_path,
                                            str(original.get("path")))
        vm_path = listed.paths.get("files.vector_manifest")
        if vm_path is not None:
            rel = str(_entry(manifest, "vector_manifest", {}).get("path"))
            info.vector_manifest, found = load_json_object(vm_path, "package.vectors_manifest_malformed", rel)
            diagnostics += found
            if info.vector_manifest is not None:
                diagnostics += check_vector_manifest(info.vector_manifest, rel)
        if info.database_path is not None:
            kind = original_kind(original.get("media_type")) if original is not None else None
            _, found = check_database(info.database_path, info.vector_manifest, info.book_id, kind)
            diagnostics += found
        return info


class PackageValidator:
    """Turns an inspection into a decision: usable, or refused with every error listed."""

    def validate(self, info: PackageInfo) -> list[Diagnostic]:
        """All diagnostics (warnings and info included) when the package is usable.

        Raises BookAgentError(code='package.invalid') when any diagnostic is an error (a
        required file, a checksum, a schema or the database is invalid); its details list
        the error diagnostics and their codes.
        """
        errors = errors_in(info.diagnostics)
        if errors:
            codes = sorted({d.code for d in errors})
            raise BookAgentError(
                "package.invalid",
                f"the package at {info.root} is invalid: {len(errors)} error(s) "
                f"({', '.join(codes)}); first: {errors[0].message}",
                details={
                    "root": str(info.root),
                    "book_id": info.book_id,
                    "codes": codes,
                    "errors": [d.to_dict() for d in errors],
                },
                remediation="rebuild or re-download the package; book-agent inspect PATH lists every problem",
            )
        return list(info.diagnostics)


def _read_manifest(root: Path) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    manifest_path = root / MANIFEST_NAME
    try:
        mode = os.lstat(manifest_path).st_mode
    except OSError as exc:
        raise BookAgentError(
            "package.unreadable", f"cannot read {manifest_path}: {exc.strerror or exc}",
            details={"path": str(manifest_path)},
        ) from exc
    if stat.S_ISLNK(mode):
        return None, [Diagnostic(
            "package.file_symlink", f"{MANIFEST_NAME} is a symlink; it is not read",
            "error", {"path": MANIFEST_NAME, "symlink": MANIFEST_NAME},
        )]
    if not stat.S_ISREG(mode):
        return None, [Diagnostic(
            "package.manifest_malformed", f"{MANIFEST_NAME} is not a regular file",
            "error", {"path": MANIFEST_NAME, "reason": "not a regular file"},
        )]
    return load_json_object(manifest_path, "package.manifest_malformed", MANIFEST_NAME)


def _entry(manifest: dict[str, Any], name: str, default: Any = None) -> Any:
    files = manifest.get("files")
    entry = files.get(name) if isinstance(files, dict) else None
    return entry if isinstance(entry, dict) else default
