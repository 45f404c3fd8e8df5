"""Runtime sidecars (derived data in the book's runtime dir, never in the package).

Each carries a stamp: what package manifest and tokenizer it was built from. `status`
reports a sidecar missing, corrupt or stale; `prepare` rebuilds exactly those.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from book_agent.adapters.storage import fts_lexical_index as fts
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


VECTOR_CHECK_NAME = "vector-check.json"
VECTOR_CHECK_VERSION = "1"


def vector_check_stamp(database_sha: str | None, model: str | None, route: str | None) -> dict[str, str]:
    """What a self-check result depends on: the records, the model, and how queries are encoded."""
    return {"database_sha256": database_sha or "", "model": model or "", "route": route or "",
            "version": VECTOR_CHECK_VERSION}


def read_vector_check(runtime_dir: Path, expected: dict[str, str]) -> dict[str, Any] | None:
    """The cached self-check when it was made for exactly this stamp, else None."""
    import json

    try:
        data = json.loads((runtime_dir / VECTOR_CHECK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("stamp") == expected else None


def write_vector_check(runtime_dir: Path, stamp: dict[str, str], result: dict[str, Any]) -> None:
    import json
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".vector-check-", suffix=".json", dir=runtime_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({**result, "stamp": stamp}, handle, indent=1, ensure_ascii=False)
    os.replace(tmp, runtime_dir / VECTOR_CHECK_NAME)
