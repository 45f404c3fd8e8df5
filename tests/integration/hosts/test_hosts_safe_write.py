from __future__ import annotations

import os
from pathlib import Path

import pytest

from book_agent_adapters.hosts.files import safe_write


def test_atomic_write_keeps_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old\n")
    os.chmod(target, 0o600)
    safe_write.atomic_write(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_a_failed_write_leaves_the_original_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "mcp.json"
    target.write_text("original\n")
    with pytest.raises(TypeError):
        safe_write.atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_text() == "original\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp.json"]


def test_backup_is_taken_once(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("first\n")
    for text in (b"second\n", b"third\n"):  # as the hosts' apply step does: back up, then write
        safe_write.backup_once(target)
        safe_write.atomic_write(target, text)
    assert safe_write.backup_path(target).read_text() == "first\n" and target.read_bytes() == b"third\n"


def test_a_symlinked_config_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "config.toml"
    real.parent.mkdir()
    real.write_text("a = 1\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    safe_write.atomic_write(link, b"a = 2\n")
    assert link.is_symlink() and real.read_text() == "a = 2\n"


def test_diff_names_the_file_and_marks_creation(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    assert safe_write.unified_diff(path, None, "{}\n").startswith(f"--- /dev/null\n+++ {path}\n")
    assert "\\ No newline at end of file" in safe_write.unified_diff(path, "a", "b")
