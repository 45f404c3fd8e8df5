"""Cheap change detection for registered packages: what each listed file is, by lstat.

Hashes are verified in full at init and by `status --verify`; every later call compares
this fingerprint (a few lstat calls) and says when the package changed. It must see a swap
that keeps size and mtime: so every path component is lstat-ed (a file, a folder on the
way, or the package root replaced by a symlink is a change), and the status-change time
(ctime) is recorded besides the mtime. Anyone can set an mtime (utime), but setting it, or
writing the file, or putting another file in its place, moves the ctime to now. The inode
is not used: FAT-formatted drives renumber inodes at each mount.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import MANIFEST_NAME

ROOT_KEY = "."  # how a change of the package root itself is named


def manifest_sha256(root: Path) -> str:
    import hashlib  # registration only: OpenSSL's load is not a search's to pay

    return hashlib.sha256((root / MANIFEST_NAME).read_bytes()).hexdigest()


def listed_files(root: Path) -> list[str]:
    manifest = json.loads((root / MANIFEST_NAME).read_text(encoding="utf-8"))
    rels = [MANIFEST_NAME]
    rels += [str(e["path"]) for e in (manifest.get("files") or {}).values() if isinstance(e, dict) and "path" in e]
    rels += [str(e["path"]) for e in manifest.get("extra_files") or [] if isinstance(e, dict) and "path" in e]
    return rels


def _lstat_regular(root: Path | str, rel: str,
                   folders: set[str] | None = None) -> os.stat_result | None:
    """lstat of `rel` when every component is a real folder and the last a regular file.

    `folders`: the folders already found real during this one check (several files share them)."""
    folder_paths, path = _components(str(root), rel)
    for folder in folder_paths:
        if folders is not None and folder in folders:
            continue
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):  # a symlink is neither folder nor file
                return None
        except OSError:
            return None
        if folders is not None:
            folders.add(folder)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


@functools.lru_cache(maxsize=4096)
def _components(root: str, rel: str) -> tuple[tuple[str, ...], str]:
    """(the folders on the way from `root` to `rel`, the file's path): strings made once, not
    before every search (pathlib and the splitting were a fifth of the check)."""
    parts = rel.split("/")
    folders = tuple(root + "/" + "/".join(parts[: i + 1]) for i in range(len(parts) - 1))
    return folders, root + "/" + rel


def _root_is_real(root: str) -> bool:
    """The root is a folder, and neither it nor any folder above it is a symlink now."""
    try:
        st = os.lstat(root)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if not root.startswith("/") or root.startswith("//") or os.path.normpath(root) != root:
        return os.path.realpath(root) == root
    # An absolute, normal path that can be walked is its own realpath exactly when no folder
    # above it is a symlink (a symlink that resolves to its own path is a loop: no walk): one
    # lstat per folder, as realpath makes, without its bookkeeping
    at = root.find("/", 1)
    while at != -1:
        try:
            if stat.S_ISLNK(os.lstat(root[:at]).st_mode):
                return False
        except OSError:
            return os.path.realpath(root) == root  # changed meanwhile: the general rule
        at = root.find("/", at + 1)
    return True


def fingerprint(root: Path) -> dict[str, list[int]]:
    """{relative path: [size, mtime_ns, ctime_ns]} of every listed file.

    Called at init on a package that was just inspected (so every listed file is regular).
    """
    out: dict[str, list[int]] = {}
    for rel in listed_files(root):
        st = _lstat_regular(root, rel)
        if st is not None:
            out[rel] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return out


def changes(root: Path, recorded: dict[str, Any]) -> list[str]:
    """Relative paths that are no longer what was registered ("." for the root itself).

    A fingerprint written by an older version holds [size, mtime_ns] only: the ctime is then
    not compared, but every component is still checked to be a real folder or file.
    """
    root_text = str(root)
    changed = [] if _root_is_real(root_text) else [ROOT_KEY]
    folders: set[str] = set()
    for rel, values in recorded.items():
        if not isinstance(values, list):  # a hand-edited registry: no promise left to check
            changed.append(str(rel))
            continue
        st = _lstat_regular(root_text, rel, folders)
        now = [st.st_size, st.st_mtime_ns, st.st_ctime_ns] if st is not None else None
        if now is None or now[: len(values)] != values:
            changed.append(rel)
    return changed
