"""The registry of books: one JSON file, written atomically under a cross-process lock.

Eight `book-agent init` processes at once must lose no entry, so every change is a
read-modify-write inside an exclusive portalocker lock on a sibling lock file, and the
write itself is temp file + fsync + os.replace (a reader never sees half a file).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError

REGISTRY_VERSION = 1
LOCK_TIMEOUT_S = 30.0


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON so that readers see either the old file or the new one, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class JsonRegistry:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "registry.json"
        self.lock_path = Path(data_dir) / "registry.lock"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        import portalocker  # only writers lock: reads and searches need not import it

        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with portalocker.Lock(str(self.lock_path), mode="a", timeout=LOCK_TIMEOUT_S):
                yield
        except portalocker.exceptions.LockException as exc:
            raise BookAgentError(
                "registry.locked",
                f"the registry at {self.path} stayed locked for {LOCK_TIMEOUT_S:.0f} s",
                remediation="another book-agent process is busy; retry when it finishes",
            ) from exc

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"version": REGISTRY_VERSION, "books": {}}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BookAgentError(
                "registry.corrupt",
                f"the registry {self.path} cannot be read: {exc}",
                remediation=f"restore or delete {self.path} and run `book-agent init` again",
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("books"), dict):
            raise BookAgentError(
                "registry.corrupt",
                f"the registry {self.path} is not a book-agent registry",
                remediation=f"restore or delete {self.path} and run `book-agent init` again",
            )
        return data

    def _update(self, change: Callable[[dict[str, Any]], Any]) -> Any:
        with self._locked():
            data = self._read()
            result = change(data["books"])
            write_json_atomic(self.path, data)
            return result

    def get(self, book_id: str) -> dict[str, Any]:
        books = self._read()["books"]
        if book_id not in books:
            known = sorted(books)
            raise BookAgentError(
                "book.not_registered",
                f"no book {book_id!r} is registered in {self.path.parent}",
                details={"book_id": book_id, "registered": known},
                remediation="run `book-agent init PACKAGE` first, or `book-agent list` to see the registered books"
                + (f" ({', '.join(known)})" if known else ""),
            )
        return dict(books[book_id])

    def put(self, entry: dict[str, Any], replace: bool = False) -> dict[str, Any]:
        book_id = entry["book_id"]

        def change(books: dict[str, Any]) -> dict[str, Any]:
            current = books.get(book_id)
            same_package = current is not None and current.get("package_root") == entry.get("package_root")
            if current is not None and not same_package and not replace:
                raise BookAgentError(
                    "book.already_registered",
                    f"book {book_id!r} is already registered from another package: {current.get('package_root')}",
                    details={"book_id": book_id, "registered_root": current.get("package_root")},
                    remediation="pass --replace (Python: replace=True) to take the new package under this id",
                )
            books[book_id] = entry
            return entry

        return dict(self._update(change))

    def list(self) -> list[dict[str, Any]]:
        books = self._read()["books"]
        return [dict(books[k]) for k in sorted(books)]

    def remove(self, book_id: str) -> None:
        self.get(book_id)
        self._update(lambda books: books.pop(book_id, None))
