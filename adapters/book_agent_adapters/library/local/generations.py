"""Generations of the local library's indexes, written once for the lexical and vector sides.

Each index (the lexical one, lexical/living_generation.py; each model group's faiss index,
vectors/faiss_vector_index.py) is a set of files named by one small JSON *pointer*:

- **Commit.** A writer (holding the library's build lock) writes its new files under names no
  pointer names, then replaces the pointer in one rename (`commit_pointer`): a reader, or a
  writer killed at any point, sees the old generation or the new one, never a mix.
- **Pin.** A reader reads the pointer, then opens the files it names and keeps them open (a
  connection, a descriptor, bytes in memory): that is its pin. A writer may replace the
  generation between the two; the files then are gone (FileNotFoundError) and the reader reads
  the pointer again (`pinned`).
- **Removal.** After its commit a writer deletes the files the new pointer no longer names, and
  before writing it sweeps what a killed writer left (`sweep`, `unnamed`). A reader pinning them
  keeps them: POSIX keeps an unlinked file's bytes for whoever holds it open. Where the system
  refuses (Windows, while a reader maps a file), the file stays and a later writer's sweep
  takes it.
- **Restores.** Pointers name files by their plain names within the folder, so a data dir
  copied whole (`cp -r`) serves the same generation.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.safe_files import open_regular

T = TypeVar("T")
OPEN_ATTEMPTS = 4  # a generation replaced while being opened is read again (writers commit in milliseconds)


def read_pointer(path: Path, form: object, limit: int | None = None) -> tuple[dict[str, Any] | None, str]:
    """(the pointer, "present"), or (None, why not: "absent", "unreadable", "of another format").
    Only a regular file is read (a FIFO would hang), at most `limit` bytes of it."""
    try:
        with open_regular(path) as handle:
            raw = json.loads((handle.read() if limit is None else handle.read(limit)).decode("utf-8"))
    except FileNotFoundError:
        return None, "absent"
    except (OSError, ValueError):
        return None, "unreadable"
    if not isinstance(raw, dict) or raw.get("format") != form:
        return None, "of another format"
    return raw, "present"


def commit_pointer(path: Path, pointer: dict[str, Any], *, prefix: str | None = None, indent: int | None = None) -> None:
    """Make `pointer` the generation in place: one rename (its temp file named by `prefix`)."""
    write_atomic(path, json.dumps(pointer, ensure_ascii=False, indent=indent).encode("utf-8"), prefix=prefix)


def unlink_quietly(path: Path) -> bool:
    """Delete a file a reader may still map (Windows refuses: a later writer's sweep retries)."""
    try:
        path.unlink()
    except OSError:
        return False
    return True


def sweep(paths: Iterable[Path]) -> list[str]:
    """Delete these files, quietly (see unlink_quietly); the ones deleted."""
    return [str(path) for path in list(paths) if unlink_quietly(path)]


def unnamed(folder: Path, pattern: re.Pattern[str], named: set[str],
            key: Callable[[Path], str] = lambda path: path.name) -> list[Path]:
    """The files of `folder` whose name matches `pattern` (the index's own files) and whose key
    (the name, or the generation it belongs to) no pointer in place names."""
    with contextlib.suppress(FileNotFoundError):
        return [path for path in folder.iterdir() if pattern.fullmatch(path.name) and key(path) not in named]
    return []


def pinned(open_once: Callable[[bool], T], attempts: int = OPEN_ATTEMPTS) -> T:
    """`open_once(last)` reads the pointer and opens what it names; FileNotFoundError means a
    writer replaced the generation meanwhile, and the pointer is read again (on the last attempt,
    `last` is True and the error is the caller's to give)."""
    for attempt in range(1, attempts + 1):
        try:
            return open_once(attempt == attempts)
        except FileNotFoundError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
