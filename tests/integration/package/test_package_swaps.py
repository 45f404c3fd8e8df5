"""Issue 13, finding 4: a package that is no longer what `init` registered is refused by every
read path, even when the swap keeps each file's size and mtime.

Swaps tried: any listed file replaced by a symlink to an outside copy (symlink mtime forged),
a folder on the way replaced by a symlink to a copy, the package root itself replaced by a
symlink to a copy or by a real copy, a file replaced by a regular copy with the same size and
mtime, and a file rewritten in place with the same size and its mtime put back.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent.domain.errors import BookAgentError
from tests.support.cli_support import run_cli
from tests.support.package_builder import tree_fingerprint

LISTED = ["book.md", "SKILL.md", "index.sqlite", "vectors.json", "original/book.pdf", "book-package.json"]


def forged_stat(path: Path, like: os.stat_result) -> None:
    """Give `path` (a symlink itself, not its target) the size-independent times of `like`."""
    os.utime(path, ns=(like.st_atime_ns, like.st_mtime_ns), follow_symlinks=False)


def symlink_file(root: Path, rel: str, outside: Path) -> None:
    target = root / rel
    st = target.stat()
    copy = outside / rel.replace("/", "_")
    shutil.copy2(target, copy)  # same bytes, same size, same mtime
    os.chmod(target.parent, 0o755)
    target.unlink()
    os.symlink(copy, target)
    forged_stat(target, st)


def symlink_folder(root: Path, rel: str, outside: Path) -> None:
    folder = root / rel
    st = folder.stat()
    copy = Path(shutil.copytree(folder, outside / "copied-folder", copy_function=shutil.copy2))
    shutil.rmtree(folder)
    os.symlink(copy, folder)
    forged_stat(folder, st)


def regular_copy(root: Path, rel: str, outside: Path) -> None:
    target = root / rel
    st = target.stat()
    copy = outside / "copy"
    shutil.copy2(target, copy)
    os.replace(copy, target)  # a new inode, same size, same mtime
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def registered(tmp_path: Path, pdf_package_template: Path) -> tuple[Path, Path]:
    root = Path(shutil.copytree(pdf_package_template, tmp_path / "pkg"))
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as agent:
        agent.init(root)
    return root, data


READS: dict[str, Callable[[Path, Path], list[str]]] = {
    "search": lambda data, tmp: ["search", "test-book", "rivers"],
    "markdown": lambda data, tmp: ["markdown", "test-book", "--record", "r0001"],
    "read": lambda data, tmp: ["read", "test-book", "r0001"],
    "skill": lambda data, tmp: ["skill", "test-book"],
    "locate": lambda data, tmp: ["locate", "test-book", "--record", "r0001"],
    "render": lambda data, tmp: ["render", "test-book", "0"],
    "source": lambda data, tmp: ["source", "test-book", "--locator-json", str(_locator(tmp))],
}


def _locator(tmp: Path) -> Path:
    path = tmp / "locator.json"
    path.write_text(json.dumps({"kind": "pdf", "page_index": 0}), encoding="utf-8")
    return path


def assert_every_read_refuses(root: Path, data: Path, tmp: Path) -> None:
    for name, argv in READS.items():
        result = run_cli("--data-dir", str(data), *argv(data, tmp), "--json")
        assert result.code == 1 and result.error_code == "package.changed", (name, result.stdout[:300])
    served = run_cli("--data-dir", str(data), "mcp", "test-book")  # the MCP server does not start
    assert served.code == 1 and "package.changed" in served.stderr and served.stdout == b""
    status = run_cli("--data-dir", str(data), "status", "test-book", "--json").json
    assert status["package"]["healthy"] is False and status["package"]["changed_files"]


def test_the_registered_package_is_read(registered: tuple[Path, Path], tmp_path: Path) -> None:
    root, data = registered
    before = tree_fingerprint(root)
    for name, argv in READS.items():
        assert run_cli("--data-dir", str(data), *argv(data, tmp_path), "--json").code == 0, name
    assert tree_fingerprint(root) == before  # reading never changes a byte of the package


@pytest.mark.parametrize("rel", LISTED)
def test_a_file_swapped_for_a_symlink_with_forged_size_and_mtime(registered: tuple[Path, Path], tmp_path: Path,
                                                               rel: str) -> None:
    root, data = registered
    outside = tmp_path / "outside"
    outside.mkdir()
    symlink_file(root, rel, outside)
    assert_every_read_refuses(root, data, tmp_path)


def rewritten_in_place(root: Path, rel: str, outside: Path) -> None:
    """Other bytes of the same length, written into the same file, mtime put back."""
    target = root / rel
    st = target.stat()
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x01
    os.chmod(target, 0o644)
    target.write_bytes(bytes(data))
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("rel", ["book.md", "SKILL.md"])
def test_a_file_rewritten_in_place_with_its_mtime_forged(registered: tuple[Path, Path], tmp_path: Path,
                                                         rel: str) -> None:
    root, data = registered
    rewritten_in_place(root, rel, tmp_path)
    assert_every_read_refuses(root, data, tmp_path)


@pytest.mark.parametrize("rel", ["book.md", "index.sqlite", "original/book.pdf"])
def test_a_file_replaced_by_a_copy_with_the_same_size_and_mtime(registered: tuple[Path, Path], tmp_path: Path,
                                                              rel: str) -> None:
    root, data = registered
    regular_copy(root, rel, tmp_path)
    assert_every_read_refuses(root, data, tmp_path)


def test_a_folder_swapped_for_a_symlink(registered: tuple[Path, Path], tmp_path: Path) -> None:
    root, data = registered
    outside = tmp_path / "outside"
    outside.mkdir()
    symlink_folder(root, "original", outside)
    assert_every_read_refuses(root, data, tmp_path)


def test_the_package_root_swapped_for_a_symlink(registered: tuple[Path, Path], tmp_path: Path) -> None:
    root, data = registered
    st = root.stat()
    copy = Path(shutil.copytree(root, tmp_path / "elsewhere", copy_function=shutil.copy2))
    shutil.rmtree(root)
    os.symlink(copy, root)
    forged_stat(root, st)
    assert_every_read_refuses(root, data, tmp_path)


def test_the_package_root_replaced_by_a_real_copy(registered: tuple[Path, Path], tmp_path: Path) -> None:
    root, data = registered
    copy = Path(shutil.copytree(root, tmp_path / "copy", copy_function=shutil.copy2))
    shutil.rmtree(root)
    os.rename(copy, root)  # same path, same names, sizes and mtimes: other inodes
    assert_every_read_refuses(root, data, tmp_path)


def test_a_swap_after_the_book_was_opened_is_seen_by_the_open_agent(registered: tuple[Path, Path],
                                                                    tmp_path: Path) -> None:
    root, data = registered
    with BookAgent(data_dir=data) as agent:
        assert agent.read_markdown("test-book", record_id="r0001")["text"]  # opened and cached
        outside = tmp_path / "outside"
        outside.mkdir()
        symlink_file(root, "book.md", outside)
        with pytest.raises(BookAgentError) as info:
            agent.read_markdown("test-book", record_id="r0001")
        assert info.value.code == "package.changed" and "book.md" in info.value.details["changed"]


def test_an_older_fingerprint_still_catches_a_symlink(registered: tuple[Path, Path], tmp_path: Path) -> None:
    root, data = registered
    registry = json.loads((data / "registry.json").read_text(encoding="utf-8"))
    entry = registry["books"]["test-book"]
    entry["fingerprint"] = {rel: values[:2] for rel, values in entry["fingerprint"].items()}
    (data / "registry.json").write_text(json.dumps(registry), encoding="utf-8")  # as an older version wrote it
    assert run_cli("--data-dir", str(data), "read", "test-book", "r0001", "--json").code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    symlink_file(root, "book.md", outside)
    assert run_cli("--data-dir", str(data), "read", "test-book", "r0001", "--json").error_code == "package.changed"


def test_an_open_agent_sees_a_swap_at_its_next_read_and_search(registered: tuple[Path, Path],
                                                               tmp_path: Path) -> None:
    """An agent that searched a book (opened, checked clean) refuses it once it is swapped:
    reads and searches check every time."""
    root, data = registered
    with BookAgent(data_dir=data) as agent:
        assert agent.search("test-book", "rivers")["hits"]  # opened, checked clean
        outside = tmp_path / "outside"
        outside.mkdir()
        symlink_file(root, "book.md", outside)
        with pytest.raises(BookAgentError) as read:
            agent.read_markdown("test-book", record_id="r0001")  # a read checks every time
        assert read.value.code == "package.changed"
        with pytest.raises(BookAgentError) as searched:
            agent.search("test-book", "rivers")
        assert searched.value.code == "package.changed" and "book.md" in searched.value.details["changed"]


def test_a_folder_above_the_package_swapped_for_a_symlink_is_seen_by_the_next_search(
        tmp_path: Path, pdf_package_template: Path) -> None:
    """The root's own folders are checked before every search too (one lstat each): moving the
    shelf that holds the package and leaving a symlink in its place is a change."""
    shelf = tmp_path / "shelf"
    root = Path(shutil.copytree(pdf_package_template, shelf / "pkg"))
    with BookAgent(data_dir=tmp_path / "data") as agent:
        agent.init(root)
        assert agent.search("test-book", "rivers")["hits"]  # opened, checked clean
        os.rename(shelf, tmp_path / "shelf-moved")
        os.symlink(tmp_path / "shelf-moved", shelf)  # the same path reaches the same files
        with pytest.raises(BookAgentError) as searched:
            agent.search("test-book", "rivers")
        assert searched.value.code == "package.changed" and searched.value.details["changed"] == ["."]
        os.unlink(shelf)
        os.rename(tmp_path / "shelf-moved", shelf)  # put back: the book is what was registered again
        assert agent.search("test-book", "rivers")["hits"]
