"""Runtime sidecars (derived data in the book's runtime dir, never in the package).

Each carries a stamp: what package manifest and tokenizer it was built from. `status`
reports a sidecar missing, corrupt or stale; `prepare` rebuilds exactly those.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from book_agent.adapters import fts_lexical_index as fts
from book_agent.domain.lexical_text import TOKENIZER_VERSION


def lexical_stamp(manifest_sha: str, database_sha: str | None) -> dict[str, str]:
    return {
        "package_manifest_sha256": manifest_sha,
        "database_sha256": database_sha or "",
        "tokenizer_version": TOKENIZER_VERSION,
    }


def lexical_path(runtime_dir: Path) -> Path:
    return runtime_dir / fts.SIDECAR_NAME


def lexical_state(runtime_dir: Path, expected: dict[str, str]) -> dict[str, Any]:
    path = lexical_path(runtime_dir)
    if not path.exists():
        return {"present": False, "fresh": False, "reason": "missing", "path": str(path)}
    stamp = fts.read_stamp(path)
    if stamp is None:
        return {"present": True, "fresh": False, "reason": "corrupt", "path": str(path)}
    stale = sorted(k for k, v in expected.items() if stamp.get(k) != v)
    if stale:
        return {"present": True, "fresh": False, "reason": "stale: " + ", ".join(stale), "path": str(path)}
    return {"present": True, "fresh": True, "reason": None, "path": str(path),
            "record_count": int(stamp.get("record_count", "0"))}


def build_lexical(database_path: Path, runtime_dir: Path, expected: dict[str, str],
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    count = fts.build_sidecar(database_path, lexical_path(runtime_dir), expected, progress)
    return {"built": True, "record_count": count}
