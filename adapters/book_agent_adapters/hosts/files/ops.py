"""Planned file operations: what a plan shows is exactly what `apply` does.

An `Op` is one file's final state: new bytes, or None to delete it. `describe` renders it
for the plan (action, hashes, unified diff); `apply` performs it through safe_write.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from book_agent_adapters.hosts.files import safe_write


@dataclass(frozen=True)
class Op:
    path: Path
    data: bytes | None  # None: delete
    kind: str  # mcp_config | skill_file | skill_manifest
    backup: bool = False  # keep the original once before changing it
    prune_to: Path | None = None  # after a delete, remove emptied folders up to (and incl.) this

    def current(self) -> bytes | None:
        target = safe_write.real_target(self.path)
        return target.read_bytes() if target.is_file() else None

    def action(self) -> str:
        now = self.current()
        if self.data is None:
            return "unchanged" if now is None else "delete"
        if now is None:
            return "create"
        return "unchanged" if now == self.data else "modify"


def sha256(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"(binary, {len(data)} bytes)\n"


def describe(op: Op) -> dict[str, Any]:
    action = op.action()
    before = op.current()
    item: dict[str, Any] = {
        "path": str(op.path),
        "kind": op.kind,
        "action": action,
        "sha256_before": sha256(before),
        "sha256_after": sha256(op.data),
        "diff": "" if action == "unchanged" else safe_write.unified_diff(op.path, _text(before), _text(op.data)),
    }
    backup = safe_write.backup_path(op.path)
    if op.backup and action in ("modify", "delete") and not backup.exists():
        item["backup"] = str(backup)
    return item


def apply(ops: list[Op]) -> dict[str, list[str]]:
    done: dict[str, list[str]] = {"written": [], "deleted": [], "backups": []}
    for op in ops:
        action = op.action()
        if action == "unchanged":
            continue
        if op.backup and not safe_write.backup_path(op.path).exists():
            backup = safe_write.backup_once(op.path)
            if backup is not None:
                done["backups"].append(str(backup))
        if op.data is None:
            safe_write.real_target(op.path).unlink()
            done["deleted"].append(str(op.path))
            if op.prune_to is not None:
                _prune(op.path.parent, op.prune_to)
        else:
            safe_write.atomic_write(op.path, op.data)
            done["written"].append(str(op.path))
    return done


def _prune(folder: Path, stop: Path) -> None:
    """Remove folders left empty, from `folder` up to and including `stop`."""
    stop = stop.resolve()
    current = folder.resolve()
    while current == stop or stop in current.parents:
        try:
            current.rmdir()  # only an empty folder goes: nothing of anyone else is removed
        except OSError:
            return
        if current == stop:
            return
        current = current.parent
