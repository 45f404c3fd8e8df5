"""Finding, inspecting and importing packages for registration."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.package import MANIFEST_NAME, PackageInfo

ARCHIVE_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"\x1f\x8b")


def is_archive(path: Path) -> bool:
    """A file that is not a manifest: zip/tar/gzip by content (tar has its magic at 257)."""
    if not path.is_file() or path.name == MANIFEST_NAME:
        return False
    with open(path, "rb") as handle:
        head = handle.read(512)
    return head.startswith(ARCHIVE_MAGIC) or head[257:262] == b"ustar" or path.suffix.lower() in (
        ".zip", ".tar", ".tgz", ".gz")


def inspect_dir(path: Path, verify_hashes: bool = True) -> PackageInfo:
    from book_agent.adapters.package.inspector import PackageInspector

    return PackageInspector().inspect(path, verify_hashes=verify_hashes)


def validate(info: PackageInfo) -> None:
    from book_agent.adapters.package.inspector import PackageValidator

    PackageValidator().validate(info)


def import_into(archive: Path, managed_dir: Path, progress: Callable[[int, int], None] | None) -> Path:
    """Import an archive safely and return the package root inside the extracted folder."""
    from book_agent.adapters.archives.importer import import_archive

    def check(extracted: Path) -> None:
        validate(inspect_dir(extracted))  # refuse before the rename: nothing half-imported stays

    extracted = import_archive(archive, managed_dir, verify=check, progress=progress)
    return inspect_dir(extracted, verify_hashes=False).root


def inspect_any(path: Path) -> PackageInfo:
    """Inspect a package folder or an archive (extracted to a temporary place, then removed)."""
    if not path.exists():
        raise BookAgentError("package.not_found", f"{path} does not exist",
                             remediation="pass the path of a package folder or archive")
    if not is_archive(path):
        return inspect_dir(path)
    from book_agent.adapters.archives.importer import import_archive

    with tempfile.TemporaryDirectory(prefix="book-agent-inspect-") as tmp:
        try:
            extracted = import_archive(path, Path(tmp))
            info = inspect_dir(extracted)
            return info
        finally:
            make_writable(Path(tmp))


def make_writable(tree: Path) -> None:
    """Imported files are read-only; restore write bits so a temporary copy can be removed."""
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, os.stat(full).st_mode | stat.S_IWUSR | stat.S_IRUSR | (stat.S_IXUSR if name in dirnames else 0))
    if tree.exists():
        os.chmod(tree, os.stat(tree).st_mode | stat.S_IWUSR | stat.S_IXUSR)


def remove_tree(tree: Path) -> None:
    make_writable(tree)
    shutil.rmtree(tree, ignore_errors=True)


def registry_entry(info: PackageInfo, source: Path, imported: bool, fingerprint: dict[str, Any],
                   manifest_sha: str) -> dict[str, Any]:
    from datetime import UTC, datetime

    return {
        "book_id": info.book_id,
        "title": info.title,
        "package_root": str(info.root),
        "source": str(source),
        "imported": imported,
        "registered_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "manifest_sha256": manifest_sha,
        "fingerprint": fingerprint,
        # the inspection as verified at init: later opens reuse it while the fingerprint
        # holds, instead of re-reading the database (and every vector) on each cold start
        "package": info.to_dict(),
    }
