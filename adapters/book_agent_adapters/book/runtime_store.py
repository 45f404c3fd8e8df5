"""RuntimeDirStore: a book's runtime dir (data_dir/books/<id>/), never the package.

It holds the book's config (config.json), the lexical FTS sidecar, the cached vector
self-check (vector-check.json), the vector matrix cache and rendered pages. Every file is
written atomically; builders hold the dir's build lock (adapters/book_agent_adapters/book/runtime_files.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import cast

from book_agent.domain.book.runtime_config import RuntimeConfig, check_config_endpoints
from book_agent.domain.book.runtime_states import LanguageCheck, LexicalState, Stamp
from book_agent.domain.errors import BookAgentError
from book_agent.input_files import load_json_file
from book_agent.ports import Progress, RuntimeStore
from book_agent_adapters.book import runtime_files
from book_agent_adapters.book.lexical import fts_lexical_index as fts
from book_agent_adapters.book.lexical import sidecar_checks
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.safe_files import require_regular
from book_agent_adapters.registry.json_registry import write_json_atomic

CONFIG_NAME = "config.json"
MAX_CONFIG_BYTES = 1 << 20
VECTOR_CHECK_NAME = "vector-check.json"


class RuntimeDirStore(RuntimeStore):
    def create_dir(self, runtime_dir: Path) -> Callable[[], None]:
        undo_parent = self.undo_new_folder(runtime_dir.parent)
        new = not runtime_dir.exists()
        try:
            runtime_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BookAgentError(
                "book.runtime_dir_failed", f"cannot create the runtime dir {runtime_dir}: {exc.strerror or exc}",
                details={"runtime_dir": str(runtime_dir)},
                remediation="check that the data dir is a writable folder (--data-dir / $BOOK_AGENT_HOME)",
            ) from exc

        def undo() -> None:
            if new:
                self.remove_dir(runtime_dir)
            undo_parent()

        return undo

    def undo_new_folder(self, folder: Path) -> Callable[[], None]:
        if folder.exists():
            return lambda: None

        def undo() -> None:
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()

        return undo

    def remove_dir(self, runtime_dir: Path) -> None:
        # imported copies are read-only: the archive module knows how to remove them
        from book_agent_adapters.archives.filesystem import remove_tree

        remove_tree(runtime_dir)

    def build_lock(self, runtime_dir: Path) -> AbstractContextManager[None]:
        return runtime_files.build_lock(runtime_dir)

    def sweep_stale_temps(self, runtime_dir: Path) -> list[str]:
        return runtime_files.sweep_stale_temps(runtime_dir)

    # --- config -------------------------------------------------------------------------

    def load_config(self, runtime_dir: Path) -> RuntimeConfig:
        path = runtime_dir / CONFIG_NAME
        if not path.exists():
            return RuntimeConfig()
        try:
            require_regular(path)  # a FIFO in its place would hang the read
            config = RuntimeConfig.from_dict(load_json_file(path, MAX_CONFIG_BYTES))
        except (OSError, ValueError) as exc:  # ConfigError, InputTooLarge are ValueErrors
            raise BookAgentError(
                "config.invalid", f"the runtime config {path} is invalid: {exc}",
                remediation=f"fix or delete {path} (then `book-agent configure BOOK ...`)",
            ) from exc
        check_config_endpoints(config)  # a hand-edited file is held to the same rule as `configure`
        return config

    def save_config(self, runtime_dir: Path, config: RuntimeConfig) -> None:
        try:
            write_json_atomic(runtime_dir / CONFIG_NAME, config.to_dict())
        except OSError as exc:
            raise BookAgentError(
                "config.write_failed", f"cannot write {runtime_dir / CONFIG_NAME}: {exc.strerror or exc}",
                details={"path": str(runtime_dir / CONFIG_NAME)},
                remediation="check that the data dir is writable and the disk not full",
            ) from exc

    def config_snapshot(self, runtime_dir: Path) -> Callable[[], None]:
        path = runtime_dir / CONFIG_NAME
        before = path.read_bytes() if path.exists() else None

        def restore() -> None:
            if before is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(before)

        return restore

    def has_config(self, runtime_dir: Path) -> bool:
        return (runtime_dir / CONFIG_NAME).exists()

    # --- the lexical sidecar --------------------------------------------------------------

    def lexical_path(self, runtime_dir: Path) -> Path:
        return runtime_dir / fts.SIDECAR_NAME

    def lexical_state(self, runtime_dir: Path, expected: Stamp) -> LexicalState:
        path = self.lexical_path(runtime_dir)
        if not path.exists():
            return {"present": False, "fresh": False, "reason": "missing", "path": str(path)}
        stamp = fts.read_stamp(path)
        if stamp is None:
            return {"present": True, "fresh": False, "reason": "corrupt", "path": str(path)}
        damaged = sidecar_checks.problem(path)
        if damaged:
            return {"present": True, "fresh": False, "reason": damaged, "path": str(path)}
        stale = sorted(k for k, v in expected.items() if stamp.get(k) != v)
        if stale:
            return {"present": True, "fresh": False, "reason": "stale: " + ", ".join(stale), "path": str(path)}
        return {"present": True, "fresh": True, "reason": None, "path": str(path),
                "record_count": int(stamp.get("record_count", "0"))}

    def build_lexical(self, database_path: Path, target: Path, expected: dict[str, str],
                      progress: Progress | None) -> int:
        return fts.build_sidecar(database_path, target, expected, progress)

    def publish(self, staged: Path, target: Path) -> None:
        os.replace(staged, target)

    def discard(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    # --- the vector self-check ------------------------------------------------------------

    def read_vector_check(self, runtime_dir: Path, stamp: Stamp) -> LanguageCheck | None:
        """The cached self-check when it was made for exactly this stamp, else None."""
        try:
            require_regular(runtime_dir / VECTOR_CHECK_NAME)
            data = json.loads((runtime_dir / VECTOR_CHECK_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        # cast: the file is ours, written by write_vector_check for exactly this stamp
        return cast(LanguageCheck, data) if isinstance(data, dict) and data.get("stamp") == stamp else None

    def write_vector_check(self, runtime_dir: Path, stamp: Stamp, result: LanguageCheck) -> None:
        text = json.dumps({**result, "stamp": stamp}, indent=1, ensure_ascii=False)
        write_atomic(runtime_dir / VECTOR_CHECK_NAME, text.encode("utf-8"), prefix=".vector-check-", suffix=".json")
