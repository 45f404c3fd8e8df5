"""Checks of the files a manifest lists: path safety, symlinks, sizes, SHA-256 hashes.

Manifest paths come from elsewhere: each is checked as a string first (relative, POSIX,
no `..`, no backslash, no drive) and then walked component by component with lstat, so
neither a symlinked file nor a symlinked folder on the way can lead outside the root.
Files in the root that no entry lists are reported, never read.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import MANIFEST_NAME
from book_agent.domain.diagnostics import Diagnostic
from book_agent_adapters.files.file_hash import sha256_file

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_DRIVE = re.compile(r"[A-Za-z]:")
MAX_LISTED_IN_DETAILS = 100


@dataclass
class ListedFiles:
    """What the file checks found: usable absolute paths by entry name, hashes by path."""

    paths: dict[str, Path] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def path_problem(rel: Any) -> str | None:
    """Why a manifest path may not be used, or None when it is a safe relative path."""
    if not isinstance(rel, str) or not rel:
        return "the path must be a non-empty string"
    if "\\" in rel:
        return "the path contains a backslash (paths are POSIX-style)"
    if rel.startswith("/") or _DRIVE.match(rel):
        return "the path is absolute"
    if "\0" in rel:
        return "the path contains a NUL character"
    parts = rel.split("/")
    if ".." in parts:
        return "the path climbs out of the root with '..'"
    if any(part in ("", ".") for part in parts):
        return "the path has empty or '.' components"
    return None


def check_listed(root: Path, entries: list[tuple[str, Any]], verify_hashes: bool) -> ListedFiles:
    found = ListedFiles()
    for name, entry in entries:
        _check_entry(root, name, entry, verify_hashes, found)
    return found


def _check_entry(root: Path, name: str, entry: Any, verify: bool, found: ListedFiles) -> None:
    def diag(code: str, message: str, **details: Any) -> None:
        found.diagnostics.append(Diagnostic(code, f"{name}: {message}", "error", {"entry": name, **details}))

    if not isinstance(entry, dict):
        diag("package.manifest_entry_invalid", "the entry must be an object with path, sha256, bytes")
        return
    rel, expected_hash, expected_size = entry.get("path"), entry.get("sha256"), entry.get("bytes")
    problem = path_problem(rel)
    if problem is not None:
        code = "package.manifest_entry_invalid" if not isinstance(rel, str) or not rel else "package.path_escapes_root"
        diag(code, f"{problem}: {rel!r}", path=rel, reason=problem)
        return
    assert isinstance(rel, str)
    found.listed.add(rel)
    hash_ok = isinstance(expected_hash, str) and _HEX64.fullmatch(expected_hash) is not None
    size_ok = isinstance(expected_size, int) and not isinstance(expected_size, bool) and expected_size >= 0
    if not hash_ok:
        diag("package.manifest_entry_invalid", f"sha256 {expected_hash!r} is not 64 hex digits", path=rel)
    if not size_ok:
        diag("package.manifest_entry_invalid", f"bytes {expected_size!r} is not a non-negative integer", path=rel)
    target = _walk(root, rel, diag)
    if target is None:
        return
    size = target.stat().st_size
    if size_ok and size != expected_size:
        diag("package.size_mismatch", f"{rel} has {size} bytes, the manifest says {expected_size}",
             path=rel, expected=expected_size, actual=size)
        if size > int(expected_size or 0):  # its hash cannot match: reading more than declared
            found.paths[name] = target  # (maybe a huge sparse file) would only cost time
            return
    if verify:
        actual = sha256_file(target)
        found.hashes[rel] = actual
        if hash_ok and actual != str(expected_hash).lower():
            diag("package.hash_mismatch", f"{rel} has SHA-256 {actual}, the manifest says {expected_hash}",
                 path=rel, expected=expected_hash, actual=actual)
    elif hash_ok:
        found.hashes[rel] = str(expected_hash).lower()
    found.paths[name] = target


def _walk(root: Path, rel: str, diag: Callable[..., None]) -> Path | None:
    """lstat each component: the path only if it is a regular file reached without symlinks."""
    current = root
    parts = rel.split("/")
    for index, part in enumerate(parts):
        current = current / part
        so_far = "/".join(parts[: index + 1])
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            diag("package.file_missing", f"{rel} does not exist", path=rel)
            return None
        except OSError as exc:
            diag("package.file_missing", f"{rel} cannot be read ({exc.strerror or exc})", path=rel)
            return None
        if stat.S_ISLNK(st.st_mode):
            what = "is a symlink" if so_far == rel else f"goes through the symlinked folder {so_far}"
            diag("package.file_symlink", f"{rel} {what}; package files must be regular files",
                 path=rel, symlink=so_far)
            return None
        last = index == len(parts) - 1
        if last and not stat.S_ISREG(st.st_mode):
            diag("package.file_missing", f"{rel} is not a regular file", path=rel)
            return None
        if not last and not stat.S_ISDIR(st.st_mode):
            diag("package.file_missing", f"{rel}: {so_far} is not a folder", path=rel)
            return None
    return current


def check_unlisted(root: Path, listed: set[str]) -> list[Diagnostic]:
    """Warnings for files no entry lists, and for symlinks that no listed path goes through."""
    prefixes = {"/".join(p.split("/")[:i]) for p in listed for i in range(1, p.count("/") + 2)}
    unlisted: list[str] = []
    symlinks: list[str] = []
    stack = [""]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(root / folder if folder else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            unlisted.append(folder + "/")
            continue
        for entry in entries:
            rel = f"{folder}/{entry.name}" if folder else entry.name
            if entry.is_symlink():
                if rel not in prefixes and rel != MANIFEST_NAME:
                    symlinks.append(rel)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(rel)
            elif rel not in listed and rel != MANIFEST_NAME:
                unlisted.append(rel)
    out: list[Diagnostic] = []
    if unlisted:
        out.append(_summary("package.file_unlisted", "not listed in the manifest (ignored)", sorted(unlisted)))
    if symlinks:
        out.append(_summary("package.file_symlink", "a symlink that no entry uses (ignored, never followed)",
                            sorted(symlinks)))
    return out


def _summary(code: str, what: str, paths: list[str]) -> Diagnostic:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return Diagnostic(code, f"{len(paths)} file(s) {what}: {shown}", "warning",
                      {"paths": paths[:MAX_LISTED_IN_DETAILS], "count": len(paths)})
