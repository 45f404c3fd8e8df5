"""FilesystemPackageStore: book packages on disk, found, inspected and imported safely.

The PackageStore port's one first-party adapter: it joins the inspector (package/), the
archive importer (archives/) and the cheap change detection (package/fingerprint.py).
Nothing here writes into a package; imported copies live in the data dir. The inspector and
the archive modules load on first use: a search opens a registered book without them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import MANIFEST_NAME, PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent.ports import PackageStore, Progress
from book_agent_adapters.package import fingerprint

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".gz")
_CHECKED: set[str] = set()  # package roots checked once in this process: later checks may be watched


class FilesystemPackageStore(PackageStore):
    def exists(self, path: Path) -> bool:
        return path.exists()

    def is_archive(self, path: Path) -> bool:
        """A file that is not a manifest, read as an archive by its bytes; a file named like
        an archive counts too, so a broken one gets the importer's precise error."""
        if not path.is_file() or path.name == MANIFEST_NAME:
            return False
        from book_agent_adapters.archives.members import is_archive_file

        return is_archive_file(path) or path.suffix.lower() in ARCHIVE_SUFFIXES

    def inspect(self, root: Path, verify_hashes: bool = True) -> PackageInfo:
        from book_agent_adapters.package.inspector import PackageInspector

        return PackageInspector().inspect(root, verify_hashes=verify_hashes)

    def validate(self, info: PackageInfo) -> None:
        from book_agent_adapters.package.inspector import PackageValidator

        PackageValidator().validate(info)

    def import_archive(self, archive: Path, managed_dir: Path, progress: Progress | None) -> Path:
        from book_agent_adapters.archives.importer import import_archive

        def check(extracted: Path) -> None:
            self.validate(self.inspect(extracted))  # refuse before the rename: nothing half-imported stays

        extracted = import_archive(archive, managed_dir, verify=check, progress=progress)
        return self.inspect(extracted, verify_hashes=False).root

    def inspect_any(self, path: Path) -> PackageInfo:
        if not path.exists():
            raise BookAgentError("package.not_found", f"{path} does not exist",
                                 remediation="pass the path of a package folder or archive")
        if not self.is_archive(path):
            return self.inspect(path)
        import tempfile  # an archive's inspection only (tempfile imports shutil, bz2, lzma)

        from book_agent_adapters.archives.filesystem import remove_tree
        from book_agent_adapters.archives.importer import import_archive

        temporary = Path(tempfile.mkdtemp(prefix="book-agent-inspect-"))
        try:
            return self.inspect(import_archive(path, temporary))
        finally:
            remove_tree(temporary)  # the imported files are read-only

    def remove_tree(self, folder: Path) -> None:
        from book_agent_adapters.archives.filesystem import remove_tree

        remove_tree(folder)

    def drop_import(self, package_root: Path, managed_dir: Path, roots_in_use: Sequence[Path]) -> bool:
        managed = managed_dir.resolve()
        try:
            folder = managed / package_root.resolve().relative_to(managed).parts[0]
        except (ValueError, IndexError):
            return False  # not ours: a package folder registered in place
        if any(root.resolve().is_relative_to(folder) for root in roots_in_use):
            return False
        self.remove_tree(folder)
        return True

    def fingerprint(self, root: Path) -> dict[str, list[int]]:
        return fingerprint.fingerprint(root)

    def changes(self, root: Path, recorded: dict[str, Any]) -> list[str]:
        key = str(root)
        if key not in _CHECKED:  # a one-shot search checks once: no watch (libc's inotify, ~13 watches)
            _CHECKED.add(key)
            return fingerprint.changes(root, recorded)
        # the full lstat check, or the kernel's word that nothing happened since the last one
        from book_agent_adapters.package.change_watch import PACKAGE_WATCH

        return PACKAGE_WATCH.changes(root, recorded, lambda: fingerprint.changes(root, recorded))

    def manifest_sha256(self, root: Path) -> str:
        return fingerprint.manifest_sha256(root)
