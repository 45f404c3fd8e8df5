"""Issue 29: a package's check is skipped while the kernel (inotify) reports nothing for it, and
every kind of change is still seen by the very next check (package/change_watch.py).

Real packages on the real filesystem, a real inotify; each change below is one the lstat
check (fingerprint.py) reports, and the watched check must report it too, at once."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from book_agent_adapters.package import change_watch, fingerprint
from book_agent_adapters.package.change_watch import PackageWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


class CountedCheck:
    def __init__(self, root: Path, recorded: dict[str, list[int]]) -> None:
        self.root, self.recorded, self.calls = root, recorded, 0

    def __call__(self) -> list[str]:
        self.calls += 1
        return fingerprint.changes(self.root, self.recorded)


@pytest.fixture
def package(tmp_path: Path, pdf_package_template: Path) -> tuple[Path, dict[str, list[int]]]:
    root = Path(shutil.copytree(pdf_package_template, tmp_path / "shelf" / "pkg"))
    return root, fingerprint.fingerprint(root)


def armed(root: Path, recorded: dict[str, list[int]], watch: PackageWatch) -> CountedCheck:
    """A watch whose package was checked (its watches armed first), then trusted once."""
    check = CountedCheck(root, recorded)
    assert watch.changes(root, recorded, check) == [] and watch.changes(root, recorded, check) == []
    assert check.calls == 1
    return check


def test_an_armed_clean_package_is_not_checked_again(package: tuple[Path, dict[str, list[int]]]) -> None:
    root, recorded = package
    watch = PackageWatch()
    check = armed(root, recorded, watch)
    for _ in range(50):
        assert watch.changes(root, recorded, check) == []
    assert check.calls == 1  # the kernel said nothing: no lstat
    other = dict(recorded, **{"book.md": [0, 0, 0]})  # another registration of the same folder
    assert watch.changes(root, other, CountedCheck(root, other)) == ["book.md"]
    watch.close()


def _append(root: Path, tmp: Path) -> None:
    with open(root / "book.md", "ab") as handle:
        handle.write(b"\n")


def _touch_back(root: Path, tmp: Path) -> None:
    st = (root / "SKILL.md").stat()
    os.utime(root / "SKILL.md", ns=(st.st_atime_ns, st.st_mtime_ns))  # same times: only the ctime moves


def _replace_by_copy(root: Path, tmp: Path) -> None:
    target = root / "original" / "book.pdf"
    st = target.stat()
    shutil.copy2(target, tmp / "copy")
    os.replace(tmp / "copy", target)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def _remove(root: Path, tmp: Path) -> None:
    (root / "vectors.json").unlink()


def _chmod(root: Path, tmp: Path) -> None:
    os.chmod(root / "index.sqlite", 0o600)


def _folder_for_symlink(root: Path, tmp: Path) -> None:
    shutil.copytree(root / "original", tmp / "outside", copy_function=shutil.copy2)
    shutil.rmtree(root / "original")
    os.symlink(tmp / "outside", root / "original")


def _folder_above_for_symlink(root: Path, tmp: Path) -> None:
    shelf = root.parent
    os.rename(shelf, tmp / "moved-shelf")
    os.symlink(tmp / "moved-shelf", shelf)


CHANGES: dict[str, Callable[[Path, Path], None]] = {
    "appended": _append, "times set back": _touch_back, "replaced by a copy": _replace_by_copy,
    "removed": _remove, "chmod": _chmod, "a folder swapped for a symlink": _folder_for_symlink,
    "a folder above swapped for a symlink": _folder_above_for_symlink,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_is_seen_by_the_next_check(package: tuple[Path, dict[str, list[int]]], tmp_path: Path,
                                                change: str) -> None:
    root, recorded = package
    watch = PackageWatch()
    check = armed(root, recorded, watch)
    outside = tmp_path / "outside-files"
    outside.mkdir()
    CHANGES[change](root, outside)
    expected = fingerprint.changes(root, recorded)
    assert expected  # the lstat check sees it
    assert watch.changes(root, recorded, check) == expected
    assert check.calls == 2
    watch.close()


def test_a_write_through_a_hard_link_made_before_is_seen(package: tuple[Path, dict[str, list[int]]],
                                                         tmp_path: Path) -> None:
    root, recorded = package
    os.link(root / "book.md", tmp_path / "alias.md")  # before the registration's fingerprint
    recorded = fingerprint.fingerprint(root)
    watch = PackageWatch()
    check = armed(root, recorded, watch)
    with open(tmp_path / "alias.md", "r+b") as handle:
        handle.write(b"#")  # same size; the inode is the watched one
    assert watch.changes(root, recorded, check) == ["book.md"]
    watch.close()


def test_an_unrelated_file_in_the_folder_costs_one_check_and_changes_nothing(
        package: tuple[Path, dict[str, list[int]]]) -> None:
    root, recorded = package
    watch = PackageWatch()
    check = armed(root, recorded, watch)
    (root / "notes.txt").write_text("a reader's note", encoding="utf-8")
    assert watch.changes(root, recorded, check) == [] and check.calls == 2  # checked in full, still clean
    assert watch.changes(root, recorded, check) == [] and check.calls == 2  # and trusted again
    watch.close()


NFS = "36 25 0:50 / {point} rw,relatime shared:1 - nfs4 server:/export rw\n"


def test_a_network_filesystem_is_always_checked_in_full(package: tuple[Path, dict[str, list[int]]]) -> None:
    root, recorded = package
    mounts = (Path("/proc/self/mountinfo").read_text(encoding="utf-8")
              + NFS.format(point=str(root.parent).replace(" ", "\\040")))
    watch = PackageWatch(mounts=lambda: mounts)
    check = CountedCheck(root, recorded)
    for _ in range(5):
        assert watch.changes(root, recorded, check) == []
    assert check.calls == 5
    watch.close()


def test_a_local_filesystem_is_found_under_the_longest_mount(tmp_path: Path) -> None:
    mounts = ("20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
              "30 20 0:50 / /mnt/books\\040shelf rw - nfs4 server:/x rw\n"
              "31 30 0:51 / /mnt/books\\040shelf/local rw shared:2 - tmpfs tmpfs rw\n")
    assert change_watch._is_local("/home/reader/pkg", lambda: mounts)
    assert not change_watch._is_local("/mnt/books shelf/pkg", lambda: mounts)
    assert change_watch._is_local("/mnt/books shelf/local/pkg", lambda: mounts)
    assert not change_watch._is_local("/mnt/books shelf/localx", lambda: mounts)


def test_without_inotify_every_check_is_full(package: tuple[Path, dict[str, list[int]]],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import inotify_simple

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(inotify_simple, "INotify", refuse)
    root, recorded = package
    watch = PackageWatch()
    check = CountedCheck(root, recorded)
    for _ in range(4):
        assert watch.changes(root, recorded, check) == []
    assert check.calls == 4


def test_a_change_lost_to_a_full_queue_is_still_seen(package: tuple[Path, dict[str, list[int]]],
                                                     tmp_path: Path, pdf_package_template: Path) -> None:
    """The queue holds max_queued_events; past it the kernel drops events and queues one overflow
    mark. A change whose own event was dropped must still be reported."""
    root, recorded = package
    noisy = Path(shutil.copytree(pdf_package_template, tmp_path / "noisy"))
    noisy_recorded = fingerprint.fingerprint(noisy)
    watch = PackageWatch()
    check = armed(root, recorded, watch)
    armed(noisy, noisy_recorded, watch)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    files = [noisy / "book.md", noisy / "SKILL.md"]  # alternating: the kernel merges only repeats
    for i in range(limit + 10):
        os.utime(files[i % 2], ns=(i, i))
    _append(root, tmp_path)  # its event finds the queue full
    assert watch.changes(root, recorded, check) == ["book.md"]
    watch.close()


PROBE = """
import json, sys
from pathlib import Path
from book_agent_adapters.package import fingerprint
from book_agent_adapters.package.store import FilesystemPackageStore
root = Path(sys.argv[1]); recorded = fingerprint.fingerprint(root); store = FilesystemPackageStore()
seen = []
for _ in range(3):
    seen.append([store.changes(root, recorded), "book_agent_adapters.package.change_watch" in sys.modules,
                 "inotify_simple" in sys.modules])
print(json.dumps(seen))
"""


def test_a_packages_first_check_in_a_process_is_plain_and_later_ones_are_watched(
        package: tuple[Path, dict[str, list[int]]]) -> None:
    """A one-shot search checks its package once: it never loads the watch (nor libc's inotify)."""
    import json
    import subprocess

    root, _ = package
    done = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True, timeout=60,
                          check=True)
    assert json.loads(done.stdout) == [[[], False, False], [[], True, True], [[], True, True]]
