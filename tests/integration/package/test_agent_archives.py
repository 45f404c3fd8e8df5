"""BookAgent with archives: init imports safely and registers the copy; inspect registers nothing."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from book_agent import BookAgent, BookAgentError
from tests.support.package_builder import tree_fingerprint


def zip_package(root: Path, archive: Path, folder: str = "my-book") -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                z.write(path, f"{folder}/{path.relative_to(root)}")
    return archive


@pytest.fixture
def agent(tmp_path: Path):
    with BookAgent(data_dir=tmp_path / "data") as agent:
        yield agent


def test_init_from_a_zip_registers_the_imported_read_only_copy(agent, tmp_path, epub_package):
    archive = zip_package(epub_package, tmp_path / "book.bin")  # detected by content, not name
    result = agent.init(archive)
    root = Path(result["package_root"])
    assert root.is_relative_to(agent.data_dir / "packages")
    assert (root / "book-package.json").is_file()
    assert not (root / "book.md").stat().st_mode & 0o222  # read-only
    assert agent.search("test-book", "知己知彼")["hits"][0]["record_id"] == "r0008"
    assert agent.init(archive)["package_root"] == str(root)  # re-import is idempotent


def test_inspect_of_an_archive_registers_nothing_and_leaves_nothing(agent, tmp_path, epub_package):
    archive = zip_package(epub_package, tmp_path / "book.zip")
    before = sorted(p.name for p in tmp_path.iterdir())
    info = agent.inspect(archive)
    assert info["book_id"] == "test-book" and not [d for d in info["diagnostics"] if d["severity"] == "error"]
    assert agent.list_books() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not (agent.data_dir / "packages").exists()


def test_a_hostile_archive_is_refused_and_nothing_is_registered(agent, tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../../escape.txt", "x")
    with pytest.raises(BookAgentError) as info:
        agent.init(archive)
    assert info.value.code == "archive.path_traversal"
    assert agent.list_books() == []
    assert not (tmp_path / "escape.txt").exists()
    packages = agent.data_dir / "packages"
    assert not packages.exists() or [p for p in packages.iterdir() if not p.name.startswith(".")] == []


def test_an_archive_holding_a_broken_package_is_not_kept(agent, tmp_path, epub_package):
    (epub_package / "book.md").write_text("tampered", encoding="utf-8")
    archive = zip_package(epub_package, tmp_path / "book.zip")
    with pytest.raises(BookAgentError):
        agent.init(archive)
    packages = agent.data_dir / "packages"
    assert not packages.exists() or [p for p in packages.iterdir() if not p.name.startswith(".")] == []


def test_every_operation_leaves_the_package_bytes_and_modes_unchanged(agent, pdf_package, tmp_path):
    shutil.copy2(pdf_package / "SKILL.md", tmp_path / "skill-copy")  # unrelated file stays too
    before = tree_fingerprint(pdf_package)
    agent.inspect(pdf_package)
    agent.init(pdf_package)
    agent.status("test-book", verify=True)
    agent.prepare("test-book")
    hits = agent.search("test-book", "Figure 3 diagram supply chain", top_k=3)["hits"]
    agent.search("test-book", "兵者", query_vector=[0.1] * 16)
    agent.read_entry("test-book", "r0005")
    agent.read_markdown("test-book", record_id="r0005")
    agent.get_skill("test-book")
    locator = agent.locate_source("test-book", hits[0])
    agent.read_source("test-book", locator)
    agent.render_page("test-book", locator["page_index"], include_image=True)
    agent.close()
    assert tree_fingerprint(pdf_package) == before
