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

import json
import os
import stat
from pathlib import Path
from typing import Any

from book_agent.domain.package import MANIFEST_NAME

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
                   folders: dict[str, bool] | None = None) -> os.stat_result | None:
    """lstat of `rel` when every component is a real folder and the last a regular file.

    `folders`: the folders already found real during this one check (several files share
    them); strings, not Paths: this runs before every search, where pathlib cost a fifth."""
    current = str(root)
    parts = rel.split("/")
    last = len(parts) - 1
    st: os.stat_result | None = None
    for index, part in enumerate(parts):
        current = f"{current}/{part}"
        if index < last and folders is not None and folders.get(current):
            continue
        try:
            st = os.lstat(current)
        except OSError:
            return None
        wanted = stat.S_ISREG if index == last else stat.S_ISDIR
        if not wanted(st.st_mode):  # a symlink is neither
            return None
        if index < last and folders is not None:
            folders[current] = True
    return st


def _root_is_real(root: Path) -> bool:
    """The root is a folder, and neither it nor any folder above it is a symlink now."""
    try:
        st = os.lstat(root)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and os.path.realpath(root) == str(root)


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
    changed = [] if _root_is_real(root) else [ROOT_KEY]
    folders: dict[str, bool] = {}
    for rel, values in recorded.items():
        if not isinstance(values, list):  # a hand-edited registry: no promise left to check
            changed.append(str(rel))
            continue
        st = _lstat_regular(root, rel, folders)
        now = [st.st_size, st.st_mtime_ns, st.st_ctime_ns] if st is not None else None
        if now is None or now[: len(values)] != values:
            changed.append(rel)
    return changed
