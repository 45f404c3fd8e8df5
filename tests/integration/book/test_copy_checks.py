"""copy_checks: a derived file whose identity changed is verified by its content once, and the
verdict kept for exactly that file state (issue 48). Real files; `forget_all` stands for a new
process."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from book_agent_adapters.files import copy_checks


@pytest.fixture(autouse=True)
def new_process():
    copy_checks.forget_all()
    yield
    copy_checks.forget_all()


def made(folder: Path, data: bytes = b"sidecar bytes " * 1000) -> tuple[Path, str]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "lexical.sqlite"
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_a_verified_copy_is_remembered_beside_it_for_its_state(tmp_path):
    path, sha = made(tmp_path / "book")
    assert not copy_checks.remembered(path, sha)
    assert copy_checks.holds(path, sha)
    verdict = json.loads((path.parent / copy_checks.VERDICTS_NAME).read_text())["lexical.sqlite"]
    assert verdict["state"] == copy_checks.file_state(path.stat()) and verdict["sha256"] == sha
    assert verdict["bytes"] == path.stat().st_size and verdict["seconds"] >= 0
    copy_checks.forget_all()  # a later process trusts the verdict on disk
    assert copy_checks.remembered(path, sha)


@pytest.mark.parametrize("where", [0, 0.5, -1])
def test_other_bytes_are_never_remembered(tmp_path, where):
    path, sha = made(tmp_path / "book")
    data = bytearray(path.read_bytes())
    data[int(len(data) * where)] ^= 1
    path.write_bytes(bytes(data))
    assert not copy_checks.holds(path, sha)
    assert not copy_checks.holds(path, sha)
    assert not (path.parent / copy_checks.VERDICTS_NAME).exists()


def test_a_file_written_since_its_verdict_is_verified_again(tmp_path):
    path, sha = made(tmp_path / "book")
    assert copy_checks.holds(path, sha)
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[7] ^= 1
    with open(path, "r+b") as handle:  # in place, same size, the mtime set back: only the ctime tells
        handle.write(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not copy_checks.remembered(path, sha)
    assert not copy_checks.holds(path, sha)


def test_a_folder_that_cannot_be_written_keeps_the_verdict_in_memory(tmp_path):
    path, sha = made(tmp_path / "book")
    (path.parent / copy_checks.VERDICTS_NAME).mkdir()  # any write there fails, as on a read-only mount
    assert copy_checks.holds(path, sha)
    assert copy_checks.remembered(path, sha)  # in this process
    assert [v["remembered"] for v in copy_checks.verified_here(path.parent)] == ["in memory"]
    copy_checks.forget_all()
    assert not copy_checks.remembered(path, sha)  # a new process verifies again
    assert copy_checks.holds(path, sha)


def test_which_hashes_once_and_names_the_matching_build(tmp_path):
    path, sha = made(tmp_path / "book")
    assert copy_checks.which(path, ["0" * 64, sha]) == sha
    assert copy_checks.which(path, ["0" * 64]) is None
    assert copy_checks.which(path, []) is None


def test_the_doctor_estimate_counts_what_a_copy_verifies(tmp_path):
    made(tmp_path / "data" / "books" / "a")
    (tmp_path / "data" / "library").mkdir()
    (tmp_path / "data" / "library" / "postings-0123456789ab.docs.npy").write_bytes(bytes(4096))
    (tmp_path / "data" / "books" / "a" / "config.json").write_text("{}")  # not a derived file a copy verifies
    found = copy_checks.estimate(tmp_path / "data")
    assert found["derived_files"] == 2
    assert found["derived_bytes"] == 14000 + 4096
    assert found["hash_mb_per_s"] > 0 and found["estimated_seconds"] >= 0
