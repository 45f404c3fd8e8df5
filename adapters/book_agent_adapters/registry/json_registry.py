"""The registry of books: one JSON file, written atomically under a cross-process lock.

Eight `book-agent init` processes at once must lose no entry, so every change is a
read-modify-write inside an exclusive portalocker lock on a sibling lock file, and the
write itself is temp file + fsync + os.replace (a reader never sees half a file).

Reads (`get`, `list`) are cached while the file stays the same: each read opens the file and
compares its identity and state (device, inode, size, mtime and ctime, from fstat of the file
just opened) with those of the last parse, and parses again only when they differ. A write
replaces the file (a new inode, a new ctime), so a book registered or removed by any process is
seen by the next read; a server answering many calls no longer parses the whole registry (about
4 KB per book) for each. Opening (not only stat-ing) keeps NFS's close-to-open consistency.
Entries returned are shallow copies: their nested values (`fingerprint`, `package`) are shared
with the cache and must not be changed in place.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from book_agent.domain.book.registry_entry import RegistryEntry, conflict, entry_problem
from book_agent.domain.errors import BookAgentError
from book_agent.input_files import InputTooLarge
from book_agent.ports import Registry
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.safe_files import open_regular, portalocker_module

REGISTRY_VERSION = 1
LOCK_TIMEOUT_S = 30.0
MAX_REGISTRY_BYTES = 64 << 20  # thousands of books; anything bigger is not our file


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON so that readers see either the old file or the new one, never a mix.

    Non-ASCII is written as UTF-8; a string that UTF-8 cannot hold (a path with undecodable
    bytes, kept by Python as lone surrogates) makes the whole file ASCII-escaped instead,
    which round-trips to the same string. Raises OSError as the file system does.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    try:
        payload = text.encode("utf-8")
    except UnicodeEncodeError:
        payload = (json.dumps(data, indent=2, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, payload, durable=True)


def _read_open(handle: Any, size: int) -> bytes:
    """An open file's bytes, at most MAX_REGISTRY_BYTES + 1 (read as sized, then to its end:
    no buffer of the limit's size for a file of a few KB)."""
    raw: bytes = handle.read(min(size, MAX_REGISTRY_BYTES) + 1)
    if len(raw) > size:  # it grew since fstat (an edit in place): on to the end, still bounded
        raw += handle.read(MAX_REGISTRY_BYTES + 1 - len(raw))
    return raw


def _read_regular(path: Path) -> bytes:
    """The registry's bytes (at most the limit + 1); a FIFO or device is refused, not read."""
    with open_regular(path) as handle:
        return _read_open(handle, os.fstat(handle.fileno()).st_size)


class JsonRegistry(Registry):
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "registry.json"
        self.lock_path = Path(data_dir) / "registry.lock"
        self._last: tuple[tuple[int, ...], dict[str, Any]] | None = None  # (file state, data) of the last read

    @contextmanager
    def _locked(self) -> Iterator[None]:
        portalocker = portalocker_module(self.path.parent)  # only writers lock: reads need not import it

        self._check_data_dir()
        lock = portalocker.Lock(str(self.lock_path), mode="a", timeout=LOCK_TIMEOUT_S)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        except portalocker.exceptions.LockException as exc:
            raise BookAgentError(
                "registry.locked",
                f"the registry at {self.path} stayed locked for {LOCK_TIMEOUT_S:.0f} s",
                remediation="another book-agent process is busy; retry when it finishes",
            ) from exc
        except OSError as exc:
            raise BookAgentError(
                "registry.write_failed", f"cannot use the data dir {self.path.parent}: {exc.strerror or exc}",
                details={"data_dir": str(self.path.parent)},
                remediation="pass a writable folder with --data-dir (or $BOOK_AGENT_HOME)",
            ) from exc
        try:
            yield
        finally:
            lock.release()

    def _check_data_dir(self) -> None:
        folder = self.path.parent
        existing = next((p for p in (folder, *folder.parents) if p.exists()), folder)
        if not existing.is_dir():  # the data dir, or what would hold it, is a file
            raise BookAgentError(
                "registry.data_dir_invalid", f"the data dir {folder} is not a folder"
                + ("" if existing == folder else f" ({existing} is a file)"),
                details={"data_dir": str(folder)},
                remediation="pass a folder with --data-dir (or $BOOK_AGENT_HOME); it is created when missing",
            )

    def _read_cached(self) -> dict[str, Any]:
        """The registry (strictly checked), parsed again only when the file changed since the
        last read. The result is shared: never change it (`_update` reads afresh)."""
        last = self._last
        if last is not None:  # unchanged: one stat (not an open, fstat and close: every search asks)
            try:
                st = os.stat(self.path)
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode) and last[0] == (
                    st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns):
                return last[1]
        try:
            handle = open_regular(self.path)  # closed below; an error (a FIFO: refused unread) falls back to _read
        except OSError:
            return self._read()  # missing (an empty registry) or unreadable: as ever
        with handle:
            state = os.fstat(handle.fileno())
            key = (state.st_dev, state.st_ino, state.st_size, state.st_mtime_ns, state.st_ctime_ns)
            last = self._last
            if last is not None and last[0] == key:
                return last[1]
            data = self._parsed(lambda: _read_open(handle, state.st_size), strict=True)
        self._last = (key, data)
        return data

    def _read(self, strict: bool = True) -> dict[str, Any]:
        self._check_data_dir()
        if not self.path.exists():
            return {"version": REGISTRY_VERSION, "books": {}}
        return self._parsed(lambda: _read_regular(self.path), strict)

    def _parsed(self, read: Callable[[], bytes], strict: bool) -> dict[str, Any]:
        try:
            raw = read()
            if len(raw) > MAX_REGISTRY_BYTES:
                raise InputTooLarge(str(self.path), MAX_REGISTRY_BYTES)
            data = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            reason = f"it is larger than {MAX_REGISTRY_BYTES} bytes" if isinstance(exc, InputTooLarge) else exc
            raise BookAgentError(
                "registry.corrupt",
                f"the registry {self.path} cannot be read: {reason}",
                remediation=f"restore or delete {self.path} and run `book-agent init` again",
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("books"), dict):
            raise BookAgentError(
                "registry.corrupt",
                f"the registry {self.path} is not a book-agent registry",
                remediation=f"restore or delete {self.path} and run `book-agent init` again",
            )
        bad = {k: p for k, v in data["books"].items() if (p := entry_problem(str(k), v))}
        if bad and strict:
            name, problem = next(iter(bad.items()))
            raise BookAgentError(
                "registry.corrupt", f"the registry {self.path} has {len(bad)} malformed entr"
                f"{'y' if len(bad) == 1 else 'ies'}: {name!r}: {problem}",
                details={"path": str(self.path), "malformed": bad},
                remediation=f"`book-agent remove {name}` drops it (then `init` the package again), "
                f"or fix {self.path}",
            )
        return data

    def _update(self, change: Callable[[dict[str, Any]], Any], strict: bool = True) -> Any:
        with self._locked():
            self._sweep_temps()
            data = self._read(strict)
            result = change(data["books"])
            try:
                write_json_atomic(self.path, data)
            except OSError as exc:
                raise BookAgentError(
                    "registry.write_failed", f"cannot write the registry {self.path}: {exc.strerror or exc}",
                    details={"path": str(self.path)},
                    remediation="check that the data dir is writable and the disk not full",
                ) from exc
            return result

    def _sweep_temps(self) -> None:
        # Registry writes happen only under the lock: a temp file seen while holding it was
        # left by a process killed mid-write.
        for leftover in self.path.parent.glob("." + self.path.name + ".*.tmp"):
            leftover.unlink(missing_ok=True)

    def get(self, book_id: str) -> RegistryEntry:
        books = self._read_cached()["books"]
        if book_id not in books:
            known = sorted(books)
            raise BookAgentError(
                "book.not_registered",
                f"no book {book_id!r} is registered in {self.path.parent}",
                details={"book_id": book_id, "registered": known},
                remediation="run `book-agent init PACKAGE` first, or `book-agent list` to see the registered books"
                + (f" ({', '.join(known)})" if known else ""),
            )
        return cast(RegistryEntry, dict(books[book_id]))

    def put(self, entry: RegistryEntry, replace: bool = False) -> RegistryEntry:
        book_id = entry["book_id"]

        def change(books: dict[str, Any]) -> Any:
            refused = conflict(books.get(book_id), entry, replace)
            if refused is not None:
                raise refused
            books[book_id] = entry
            return entry

        return cast(RegistryEntry, dict(self._update(change)))

    def list(self) -> list[RegistryEntry]:
        books = self._read_cached()["books"]
        return [cast(RegistryEntry, dict(books[k])) for k in sorted(books)]

    def remove(self, book_id: str) -> None:
        """Unregister; a malformed entry can be removed too (that is how it is repaired)."""
        if book_id not in self._read(strict=False)["books"]:
            self.get(book_id)  # raises book.not_registered
        self._update(lambda books: books.pop(book_id, None), strict=False)
