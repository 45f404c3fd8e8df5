"""Telling a copied derived file from a damaged one (issue 48).

A derived file (a lexical sidecar, a vector sidecar, an approximate index's files) is trusted
at once while its file state (size, mtime, inode, ctime) is the one recorded when it was built.
A copy of the data dir (`cp -a`, `cp -r`, `rsync -a`, a tar round trip, a restored backup)
gives every file a new inode and ctime (`cp -r` a new mtime too) but the same bytes; a damaged
file has other bytes. So a file whose state changed is verified once by its content (its sha256
against the one recorded when it was built), and the verdict is remembered for that exact state:

- in `copies.verified.json` in the file's folder where the data dir is writable (later
  processes trust it at once), with when it was verified and how long it took (`status`);
- in this process's memory where the data dir is read-only (a replica mounted read-only
  verifies each file once per process, instead of refusing it).

Any later write to the file changes its ctime, which no user can set back, so a remembered
verdict never vouches for a file changed since; a file with other bytes is never remembered.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.file_hash import sha256_file
from book_agent_adapters.files.safe_files import open_regular, require_regular

VERDICTS_NAME = "copies.verified.json"
MAX_VERDICT_BYTES = 1 << 16
KEPT = 16  # files remembered per folder (a folder holds a few derived files)

_LOCK = threading.Lock()
_MEMORY: dict[tuple[str, tuple[int, ...], str], dict[str, Any]] = {}  # (path, state, sha256) -> verdict


def file_state(st: os.stat_result) -> list[int]:
    """Size, mtime, inode and ctime: what a write in place, a replacement or a copy changes."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def read_verdicts(folder: Path) -> dict[str, dict[str, Any]]:
    """The verdicts remembered in `folder` (file name -> verdict); {} when none or unreadable."""
    try:
        with open_regular(folder / VERDICTS_NAME) as handle:
            data = json.loads(handle.read(MAX_VERDICT_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def remembered(path: Path, sha256: str, st: os.stat_result | None = None) -> bool:
    """Whether `path`, in its current state, was verified to hold the bytes of `sha256` (by this
    process, or by any process that could write the verdict down). Never hashes."""
    try:
        st = st if st is not None else require_regular(path)
    except OSError:
        return False
    state = file_state(st)
    with _LOCK:
        if (str(path), tuple(state), sha256) in _MEMORY:
            return True
    verdict = read_verdicts(path.parent).get(path.name)
    if verdict is None or verdict.get("state") != state or verdict.get("sha256") != sha256:
        return False
    with _LOCK:
        _MEMORY[(str(path), tuple(state), sha256)] = verdict
    return True


def holds(path: Path, sha256: str, st: os.stat_result | None = None) -> bool:
    """Whether `path` holds the bytes whose sha256 is `sha256`: from a verdict remembered for its
    current state, or hashed now (a match is then remembered). Raises OSError when unreadable."""
    return which(path, [sha256], st) == sha256


def which(path: Path, sha256s: list[str], st: os.stat_result | None = None) -> str | None:
    """Which of `sha256s` the bytes of `path` have (hashed at most once; a match remembered), or
    None. Raises OSError when unreadable."""
    st = st if st is not None else require_regular(path)
    for sha256 in sha256s:
        if remembered(path, sha256, st):
            return sha256
    if not sha256s:
        return None
    started = time.perf_counter()
    found = sha256_file(path)
    if found not in sha256s or file_state(require_regular(path)) != file_state(st):
        return None  # other bytes, or written while hashed (what was hashed may not be there now)
    remember(path, found, st, time.perf_counter() - started)
    return found


def remember(path: Path, sha256: str, st: os.stat_result, seconds: float) -> None:
    """Remember that `path` in the state `st` holds the bytes of `sha256`: in memory, and beside
    it when its folder can be written (best effort: a read-only data dir keeps it in memory)."""
    state = file_state(st)
    verdict = {"state": state, "sha256": sha256, "verified_at": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": round(seconds, 4), "bytes": st.st_size}
    with _LOCK:
        _MEMORY[(str(path), tuple(state), sha256)] = verdict
        verdicts = read_verdicts(path.parent)
        verdicts.pop(path.name, None)
        verdicts[path.name] = verdict
        kept = dict(list(verdicts.items())[-KEPT:])
        with contextlib.suppress(OSError):
            write_atomic(path.parent / VERDICTS_NAME, json.dumps(kept).encode("utf-8"),
                         prefix=".copies-verified-", suffix=".json")


def verified_here(folder: Path) -> list[dict[str, Any]]:
    """The copies recognised and verified in `folder`: remembered on disk, or (a read-only data
    dir) by this process. Each: file, verified_at, seconds, bytes, and where it is remembered."""
    found = {name: {"file": str(folder / name), **_public(v), "remembered": "on disk"}
             for name, v in read_verdicts(folder).items()}
    with _LOCK:
        for (path, _, _), verdict in _MEMORY.items():
            if Path(path).parent == folder and Path(path).name not in found:
                found[Path(path).name] = {"file": path, **_public(verdict), "remembered": "in memory"}
    return list(found.values())


def _public(verdict: dict[str, Any]) -> dict[str, Any]:
    return {k: verdict.get(k) for k in ("verified_at", "seconds", "bytes")}


def forget_all() -> None:
    """Forget what this process verified (tests standing in for a new process)."""
    with _LOCK:
        _MEMORY.clear()


# -- what a copy of a data dir costs to verify (`book-agent doctor`) -------------------------------

VERIFIED_FILES = ("books/*/lexical.sqlite", "books/*/vectors/vectors.*", "library/postings-*.npy",
                  "library/vectors/*")
SAMPLE_BYTES = 16 << 20


def estimate(data_dir: Path) -> dict[str, Any]:
    """How long verifying a copy of `data_dir` takes: the bytes of the derived files a copy's
    first searches verify, over this machine's hashing speed (measured on a buffer in memory:
    nothing is read from the data dir beyond its listing, nothing written); and the copies
    verified so far (their verdicts on disk)."""
    import hashlib

    files = [p for pattern in VERIFIED_FILES for p in data_dir.glob(pattern) if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    started = time.perf_counter()
    hashlib.sha256(bytes(SAMPLE_BYTES)).hexdigest()
    rate = SAMPLE_BYTES / max(time.perf_counter() - started, 1e-6)
    done = [v for folder in {*data_dir.glob("books/*/"), *(p.parent for p in files)}
            for v in read_verdicts(folder).values()]
    return {"derived_files": len(files), "derived_bytes": size, "hash_mb_per_s": round(rate / 2**20),
            "estimated_seconds": round(size / rate, 2),
            "verified_so_far": {"files": len(done), "seconds": round(sum(float(v.get("seconds") or 0) for v in done), 3)},
            "note": "a copied, restored or read-only mounted data dir verifies each derived file once, as its first "
                    "searches read it (from cache, about as fast as this; from a cold disk, at the disk's speed); "
                    "a writable one remembers the verdicts, a read-only one verifies once per process"}
