"""Cheap change detection for registered packages: sizes and mtimes of the listed files.

Hashes are verified in full at init and by `status --verify`; every later call compares
this fingerprint (a few stat calls) and says when the package changed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from book_agent.domain.package import MANIFEST_NAME


def manifest_sha256(root: Path) -> str:
    return hashlib.sha256((root / MANIFEST_NAME).read_bytes()).hexdigest()


def listed_files(root: Path) -> list[str]:
    manifest = json.loads((root / MANIFEST_NAME).read_text(encoding="utf-8"))
    rels = [MANIFEST_NAME]
    rels += [str(e["path"]) for e in (manifest.get("files") or {}).values() if isinstance(e, dict) and "path" in e]
    rels += [str(e["path"]) for e in manifest.get("extra_files") or [] if isinstance(e, dict) and "path" in e]
    return rels


def fingerprint(root: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for rel in listed_files(root):
        st = (root / rel).stat()
        out[rel] = [st.st_size, st.st_mtime_ns]
    return out


def changes(root: Path, recorded: dict[str, Any]) -> list[str]:
    """Relative paths whose size or mtime differ from the recorded fingerprint (or vanished)."""
    changed = []
    for rel, (size, mtime_ns) in recorded.items():
        try:
            st = (root / rel).stat()
        except OSError:
            changed.append(rel)
            continue
        if st.st_size != size or st.st_mtime_ns != mtime_ns:
            changed.append(rel)
    return changed
