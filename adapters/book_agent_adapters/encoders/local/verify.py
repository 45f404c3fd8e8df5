"""sha256 checks of model files, remembered so 90 MB is not hashed on every start.

A result is keyed by the file's resolved path, inode, size and mtime (ns): a rewrite in
place changes the mtime, a replacement (rename over it, a reinstall) the inode, so a
changed file is hashed again while an unchanged one costs a stat and a small JSON read. It is kept in-process and, when a cache folder is given, in one
small JSON file there (written atomically; an unwritable cache only costs a re-hash).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.file_hash import sha256_file

from . import errors

CACHE_FILE = "local-encoder-hashes.json"
_memory: dict[str, str] = {}
_lock = threading.Lock()


def _key(path: Path) -> str:
    st = path.stat()
    return f"{path.resolve()}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}"


def _read_cache(cache_dir: Path | None) -> dict[str, str]:
    if cache_dir is None:
        return {}
    try:
        data = json.loads((cache_dir / CACHE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_cache(cache_dir: Path | None, key: str, digest: str) -> None:
    if cache_dir is None:
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        data = _read_cache(cache_dir)
        data[key] = digest
        payload = json.dumps(data, indent=0, sort_keys=True).encode("utf-8")
        write_atomic(cache_dir / CACHE_FILE, payload, prefix=".hashes-")
    except OSError:
        pass  # a read-only cache dir only means hashing again next start


def file_sha256(path: Path, cache_dir: Path | None = None) -> tuple[str, bool]:
    """(sha256 hex, whether it came from a cache)."""
    key = _key(path)
    with _lock:
        if key in _memory:
            return _memory[key], True
    cached = _read_cache(cache_dir).get(key)
    if cached is not None:
        with _lock:
            _memory[key] = cached
        return cached, True
    digest = sha256_file(path)
    with _lock:
        _memory[key] = digest
    _write_cache(cache_dir, key, digest)
    return digest, False


def verify_file(path: Path, expected: str, cache_dir: Path | None = None) -> dict[str, object]:
    """Check `path` against `expected`; raise query.local_model_corrupt on a mismatch."""
    try:
        digest, cached = file_sha256(path, cache_dir)
    except OSError as exc:
        raise errors.error(
            errors.MODEL_CORRUPT, f"Cannot read {path}: {exc}", errors.REMEDIATION_CORRUPT,
            path=path,
        ) from exc
    if digest != expected.lower():
        raise errors.error(
            errors.MODEL_CORRUPT,
            f"{path.name} does not have the published sha256 of this model.",
            errors.REMEDIATION_CORRUPT,
            path=path, expected_sha256=expected, actual_sha256=digest,
        )
    return {"file": str(path), "sha256": digest, "verified": True, "from_cache": cached}


def forget_memory() -> None:
    """Drop in-process results (tests use it to prove the on-disk cache works)."""
    with _lock:
        _memory.clear()
