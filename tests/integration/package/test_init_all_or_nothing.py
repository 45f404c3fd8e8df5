"""Issue 13, findings 5 and 10: `init` registers a package whole or not at all, and temp files
of a killed run do not outlive the next `init`/`prepare`.

Failures are injected at several steps with real parts: a progress callback that raises
(archive import, lexical build), Ctrl-C in the build, a fake Registry (the port) that
refuses the entry or fails after writing it, a runtime dir blocked by a file, an invalid
package. After each: no entry, no runtime dir, no imported copy, no temp file; a failed
re-init leaves the previous registration working. The package never changes a byte.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from book_agent.agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.book.runtime_files import STALE_SECONDS, build_lock
from book_agent_adapters.registry.json_registry import JsonRegistry
from tests.support.package_builder import build_package, synthetic_records, tree_fingerprint


class Boom(Exception):
    pass


def fail_after(calls: int, error: BaseException | None = None) -> Any:
    seen = [0]

    def progress(done: int, total: int) -> None:
        seen[0] += 1
        if seen[0] > calls:
            raise error if error is not None else Boom("injected")
    return progress


class RefusingRegistry(JsonRegistry):
    """The Registry port, failing in put: before writing (refused) or after (then crashing)."""

    def __init__(self, data_dir: Path, after_write: bool) -> None:
        super().__init__(data_dir)
        self.after_write = after_write

    def put(self, entry: dict[str, Any], replace: bool = False) -> dict[str, Any]:
        if self.after_write:
            super().put(entry, replace)
            raise KeyboardInterrupt  # the process is interrupted just after the entry was written
        raise BookAgentError("registry.locked", "injected: the registry stayed locked")


def zipped(root: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                z.write(path, "book/" + path.relative_to(root).as_posix())
    return archive


def leftovers(data: Path) -> list[str]:
    """What a failed init left in the data dir (the registry's own lock file is expected)."""
    if not data.exists():
        return []
    found = [str(p.relative_to(data)) for p in data.rglob("*") if p.name != "registry.lock"]
    registry = data / "registry.json"
    if registry.exists() and JsonRegistry(data).list():
        found.append("registry entries")
    return sorted(f for f in found if f != "registry.json")


@pytest.mark.parametrize(("source", "failure"), [
    (source, failure) for source in ("folder", "archive")
    for failure in ("build-progress", "ctrl-c-in-build", "import-progress", "refused-put", "crash-after-put",
                    "runtime-dir-blocked")
    if not (source == "folder" and failure == "import-progress")  # a folder is not imported
])
def test_a_failed_init_leaves_nothing(tmp_path: Path, pdf_package: Path, source: str, failure: str) -> None:
    data = tmp_path / "data"
    package = zipped(pdf_package, tmp_path / "book.zip") if source == "archive" else pdf_package
    before = tree_fingerprint(pdf_package)
    registry = RefusingRegistry(data, failure == "crash-after-put") if "put" in failure else None
    progress = None
    if failure == "build-progress":
        progress = fail_after(2 if source == "archive" else 0)  # archive: past the import's reports
    elif failure == "ctrl-c-in-build":
        progress = fail_after(2 if source == "archive" else 0, KeyboardInterrupt())
    elif failure == "import-progress":
        progress = fail_after(0)
    elif failure == "runtime-dir-blocked":
        (data / "books").mkdir(parents=True)
        (data / "books" / "test-book").write_text("a file where the runtime dir goes", encoding="utf-8")
    with BookAgent(data_dir=data, registry=registry) as agent, pytest.raises((Boom, KeyboardInterrupt, BookAgentError)):
        agent.init(package, progress=progress)
    expected = ["books", "books/test-book"] if failure == "runtime-dir-blocked" else []
    assert leftovers(data) == expected
    assert JsonRegistry(data).list() == []
    assert tree_fingerprint(pdf_package) == before


@pytest.mark.parametrize("failure", ["build-progress", "refused-put", "crash-after-put"])
def test_a_failed_reinit_keeps_the_previous_registration(tmp_path: Path, pdf_package: Path, failure: str) -> None:
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as agent:
        agent.init(pdf_package)
    entry = JsonRegistry(data).get("test-book")
    records = synthetic_records(30)  # same book_id, other content: its index must be built
    other = build_package(tmp_path / "other", kind="epub", records=records, dims=4)
    registry = RefusingRegistry(data, failure == "crash-after-put") if "put" in failure else None
    progress = fail_after(0) if failure == "build-progress" else None
    with BookAgent(data_dir=data, registry=registry) as agent, pytest.raises((Boom, KeyboardInterrupt, BookAgentError)):
        agent.init(other, replace=True, progress=progress)
    assert JsonRegistry(data).get("test-book") == entry
    with BookAgent(data_dir=data) as agent:
        status = agent.status("test-book")
        assert status["package"]["healthy"] and status["sidecars"]["lexical"]["fresh"]
        assert agent.search("test-book", "rivers")["hits"]
    assert not [p.name for p in (data / "books" / "test-book").iterdir() if p.name.startswith(".lexical-")]


def test_a_refused_replace_writes_nothing_for_the_book(tmp_path: Path, pdf_package: Path,
                                                       pdf_package_template: Path) -> None:
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as agent:
        agent.init(pdf_package)
        runtime = data / "books" / "test-book"
        stamp = {p.name: p.stat().st_mtime_ns for p in runtime.iterdir()}
        other = Path(shutil.copytree(pdf_package_template, tmp_path / "other"))
        with pytest.raises(BookAgentError) as info:
            agent.init(other)  # no --replace
        assert info.value.code == "book.already_registered"
        assert {p.name: p.stat().st_mtime_ns for p in runtime.iterdir()} == stamp


def test_an_invalid_archive_leaves_no_imported_copy(tmp_path: Path, pdf_package: Path) -> None:
    (pdf_package / "book.md").write_text("tampered", encoding="utf-8")
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as agent, pytest.raises(BookAgentError) as info:
        agent.init(zipped(pdf_package, tmp_path / "book.zip"))
    assert info.value.code == "package.invalid"
    assert leftovers(data) == []


# --- finding 10: temp files of a killed run ------------------------------------------------

KILLED_RUN_LEFTOVERS = [".lexical-a1b2c3.sqlite", ".lexical-staged-0f0f0f.sqlite", ".config.json.x1y2.tmp",
                        "vectors/.vectors.f32.npy.abc", "vectors/.vectors.ids.json.def", "renders/.render-1.tmp"]


def plant(runtime: Path, age_s: float) -> list[Path]:
    planted = []
    for rel in KILLED_RUN_LEFTOVERS:
        path = runtime / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half written")
        old = time.time() - age_s
        os.utime(path, (old, old))
        planted.append(path)
    return planted


@pytest.mark.parametrize("command", ["init", "prepare"])
def test_stale_temp_files_are_swept_by_the_next_init_or_prepare(tmp_path: Path, pdf_package: Path,
                                                                 command: str) -> None:
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as agent:
        agent.init(pdf_package)
        runtime = data / "books" / "test-book"
        planted = plant(runtime, STALE_SECONDS + 60)
        agent.init(pdf_package) if command == "init" else agent.prepare("test-book")
    assert [p for p in planted if p.exists()] == []
    assert (runtime / "lexical.sqlite").is_file() and (runtime / "config.json").is_file()


def test_young_temp_files_of_unlocked_writers_are_kept(tmp_path: Path, pdf_package: Path) -> None:
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as agent:
        agent.init(pdf_package)
        runtime = data / "books" / "test-book"
        planted = plant(runtime, 5)  # as if a search or the MCP server were writing them now
        agent.prepare("test-book")
    kept = sorted(str(p.relative_to(runtime)) for p in planted if p.exists())
    assert kept == sorted(r for r in KILLED_RUN_LEFTOVERS if not r.startswith(".lexical-"))


def test_a_live_builder_keeps_its_temp_file_while_it_holds_the_lock(tmp_path: Path, pdf_package: Path) -> None:
    data = tmp_path / "data"
    with BookAgent(data_dir=data) as agent:
        agent.init(pdf_package)
    runtime = data / "books" / "test-book"
    live = runtime / ".lexical-live.sqlite"
    done = threading.Event()
    with build_lock(runtime):  # another process building now
        live.write_bytes(b"being written")
        worker = threading.Thread(target=lambda: (BookAgent(data_dir=data).prepare("test-book"), done.set()))
        worker.start()
        time.sleep(0.5)
        assert live.exists() and not done.is_set()  # the sweep waits for the builder
        live.unlink()  # the builder renames its file into place before letting go
    worker.join(timeout=60)
    assert done.is_set()


def test_registry_temp_files_of_a_killed_writer_are_swept(tmp_path: Path, pdf_package: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    leftover = data / ".registry.json.k1ll3d.tmp"
    leftover.write_text("{half", encoding="utf-8")
    with BookAgent(data_dir=data) as agent:
        agent.init(pdf_package)
    assert not leftover.exists()


