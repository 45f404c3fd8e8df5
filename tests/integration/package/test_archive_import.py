"""import_archive on good archives: formats, idempotence, read-only output, verify hook,
progress, leftovers of crashed runs, disk-full and crash mid-way (real child processes)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.archives.importer import (
    TMP_PREFIX,
    ArchiveLimits,
    import_archive,
)
from tests.support import REPO_ROOT

ROOT = REPO_ROOT


def contents(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def make_zip(folder: Path, dest: Path, top: str | None = "book") -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            name = f"{top}/{rel}" if top else rel
            if path.is_dir():
                archive.writestr(name + "/", b"")
            else:
                archive.write(path, name)
    return dest


def make_tar(folder: Path, dest: Path, mode: str, arcname: str = "book") -> Path:
    with tarfile.open(dest, mode) as archive:  # type: ignore[call-overload]
        archive.add(folder, arcname=arcname)
    return dest


def sha16(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.mark.parametrize("fmt", ["zip", "tar", "tar.gz", "tar.gz-dot"])
def test_package_archive_round_trips_read_only(tmp_path: Path, pdf_package: Path, fmt: str) -> None:
    archive = tmp_path / "book.archive"
    if fmt == "zip":
        make_zip(pdf_package, archive)
    elif fmt == "tar.gz-dot":  # `tar -C pkg -czf x.tgz .`: members named ./book.md
        make_tar(pdf_package, archive, "w:gz", arcname=".")
    else:
        make_tar(pdf_package, archive, "w" if fmt == "tar" else "w:gz")
    managed = tmp_path / "managed"

    dest = import_archive(archive, managed)

    assert dest == managed.resolve() / sha16(archive)
    root = dest if fmt == "tar.gz-dot" else dest / "book"
    assert contents(root) == contents(pdf_package)
    assert (root / "book-package.json").is_file()
    for path in [dest, *dest.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o555 if path.is_dir() else 0o444), path
    assert [p.name for p in managed.iterdir()] == [dest.name]  # no temp folder left


@pytest.mark.parametrize("suffix", ["book.tar.gz", "book.zip", "book"])
def test_format_comes_from_content_not_the_name(tmp_path: Path, pdf_package: Path, suffix: str) -> None:
    real = make_zip(pdf_package, tmp_path / "real.zip") if suffix != "book.zip" else make_tar(
        pdf_package, tmp_path / "real.tgz", "w:gz"
    )
    misnamed = tmp_path / suffix
    os.rename(real, misnamed)
    dest = import_archive(misnamed, tmp_path / "managed")
    assert contents(dest / "book") == contents(pdf_package)


def test_reimport_is_idempotent_and_does_not_extract_again(tmp_path: Path, pdf_package: Path) -> None:
    archive = make_zip(pdf_package, tmp_path / "book.zip")
    first = import_archive(archive, tmp_path / "managed")
    inode = (first / "book" / "book.md").stat().st_ino
    calls: list[tuple[int, int]] = []

    again = import_archive(archive, tmp_path / "managed", progress=lambda d, t: calls.append((d, t)))

    assert again == first
    assert (again / "book" / "book.md").stat().st_ino == inode
    assert calls == []  # nothing was extracted
    assert len(list((tmp_path / "managed").iterdir())) == 1


def test_verify_sees_the_complete_temp_folder_before_publishing(tmp_path: Path, pdf_package: Path) -> None:
    archive = make_zip(pdf_package, tmp_path / "book.zip")
    managed = tmp_path / "managed"
    seen: list[tuple[Path, bool, int]] = []

    def verify(folder: Path) -> None:
        mode = stat.S_IMODE((folder / "book" / "book.md").stat().st_mode)
        seen.append((folder, (folder / "book" / "book-package.json").is_file(), mode))

    dest = import_archive(archive, managed, verify=verify)
    folder, complete, mode = seen[0]
    assert folder.parent == managed.resolve() and folder.name.startswith(TMP_PREFIX)
    assert complete and mode == 0o444
    assert not folder.exists() and dest.is_dir()
    import_archive(archive, managed, verify=verify)  # an existing import is checked too
    assert seen[1][0] == dest


@pytest.mark.parametrize("error", [BookAgentError("package.ambiguous_root", "two roots"), ValueError("boom")])
def test_failed_verify_leaves_nothing(tmp_path: Path, pdf_package: Path, error: Exception) -> None:
    archive = make_zip(pdf_package, tmp_path / "book.zip")
    managed = tmp_path / "managed"

    def verify(folder: Path) -> None:
        raise error

    with pytest.raises(BookAgentError) as caught:
        import_archive(archive, managed, verify=verify)
    expected = error.code if isinstance(error, BookAgentError) else "archive.verify_failed"
    assert caught.value.code == expected
    assert list(managed.iterdir()) == []


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_progress_is_monotonic_and_ends_complete(tmp_path: Path, fmt: str) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "big.bin").write_bytes(os.urandom(3_500_000))
    (folder / "small.md").write_bytes(b"hello")
    archive = make_zip(folder, tmp_path / "a.zip") if fmt == "zip" else make_tar(folder, tmp_path / "a.tgz", "w:gz")
    calls: list[tuple[int, int]] = []

    import_archive(archive, tmp_path / "managed", progress=lambda d, t: calls.append((d, t)))

    totals = {total for _, total in calls}
    assert len(totals) == 1
    total = totals.pop()
    assert total == (3_500_005 if fmt == "zip" else archive.stat().st_size)
    dones = [done for done, _ in calls]
    assert dones == sorted(dones) and all(done <= total for done in dones)
    assert len(calls) >= 4 and calls[-1] == (total, total)


def test_leftovers_of_a_crashed_run_do_not_confuse_a_new_import(tmp_path: Path, pdf_package: Path) -> None:
    managed = tmp_path / "managed"
    stale = managed / f"{TMP_PREFIX}stale"
    fresh = managed / f"{TMP_PREFIX}fresh"
    for leftover in (stale, fresh):
        (leftover / "book").mkdir(parents=True)
        (leftover / "book" / "book-package.json").write_text("{}")
        os.chmod(leftover / "book", 0o555)
    old = time.time() - 7 * 3600
    os.utime(stale, (old, old))

    dest = import_archive(make_zip(pdf_package, tmp_path / "book.zip"), managed)

    assert contents(dest / "book") == contents(pdf_package)
    assert not stale.exists()  # old enough to belong to a dead run: swept
    assert fresh.exists()  # might be a live import in another process: left alone


def test_concurrent_imports_of_one_archive_agree(tmp_path: Path, pdf_package: Path) -> None:
    archive = make_zip(pdf_package, tmp_path / "book.zip")
    managed = tmp_path / "managed"
    results: list[Path | BaseException] = []

    def run() -> None:
        try:
            results.append(import_archive(archive, managed))
        except BaseException as exc:  # surfaced by the assert below
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and isinstance(results[0], Path)
    assert [p.name for p in managed.iterdir()] == [results[0].name]


CHILD = """
import json, os, signal, sys
from book_agent_adapters.archives.importer import import_archive
from book_agent.domain.errors import BookAgentError
mode, archive, managed = sys.argv[1:4]
if mode == "fsize":
    import resource
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
def progress(done, total):
    if mode == "kill" and done > 0:
        os.kill(os.getpid(), signal.SIGKILL)
try:
    print(json.dumps({"path": str(import_archive(archive, managed, progress=progress))}))
except BookAgentError as exc:
    print(json.dumps(exc.to_dict()))
"""


def run_child(mode: str, archive: Path, managed: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(archive), str(managed)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )


def big_archive(tmp_path: Path) -> Path:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "book-package.json").write_text("{}")
    (folder / "original.pdf").write_bytes(os.urandom(3 << 20))
    return make_zip(folder, tmp_path / "big.zip")


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs POSIX file-size limits")
def test_disk_full_mid_write_is_reported_and_leaves_nothing(tmp_path: Path) -> None:
    archive = big_archive(tmp_path)
    managed = tmp_path / "managed"
    managed.mkdir()

    result = run_child("fsize", archive, managed)

    assert json.loads(result.stdout)["code"] == "archive.no_space", result.stderr
    assert list(managed.iterdir()) == []


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_crash_mid_way_publishes_nothing_and_the_next_import_works(tmp_path: Path) -> None:
    archive = big_archive(tmp_path)
    managed = tmp_path / "managed"

    result = run_child("kill", archive, managed)

    assert result.returncode == -signal.SIGKILL
    left = list(managed.iterdir())
    assert left and all(p.name.startswith(TMP_PREFIX) for p in left)  # only a temp folder
    dest = import_archive(archive, managed)
    assert (dest / "book" / "original.pdf").stat().st_size == 3 << 20
    assert sorted(p.name for p in managed.iterdir() if not p.name.startswith(TMP_PREFIX)) == [dest.name]


def test_missing_archive_and_bad_limits_are_reported(tmp_path: Path) -> None:
    with pytest.raises(BookAgentError) as caught:
        import_archive(tmp_path / "nope.zip", tmp_path / "managed")
    assert caught.value.code == "archive.not_found"
    with pytest.raises(BookAgentError) as caught:
        ArchiveLimits(max_members=0)
    assert caught.value.code == "archive.invalid_limits"


def test_limits_defaults_and_the_package_level_export() -> None:
    import book_agent

    assert book_agent.import_archive is import_archive
    assert book_agent.ArchiveLimits is ArchiveLimits
    limits = ArchiveLimits()
    assert limits.max_members == 10_000 and limits.max_ratio == 100
    assert limits.to_dict()["max_total_bytes"] == 2 << 30
