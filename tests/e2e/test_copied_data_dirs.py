"""A data dir copied (cp -a, cp -r, a tar round trip), restored, or mounted read-only answers
every search as the original does (issue 48); a copy with other bytes is still caught.

Real copies by the real tools, searched by real CLI processes (each a cold start, as a replica
or a restored server is). The read-only copy is a read-only bind mount in a private mount
namespace (root ignores mode bits, a mount it cannot write through): skipped locally without
namespaces, failed under CI=true (tests/support/parts.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.test_full_and_read_only_data_dirs import UNSHARE, namespaces_work
from tests.support.library_support import WORDS, make_book
from tests.support.package_builder import RecordSpec
from tests.support.parts import require_real_part

BOOKS = ("book-0", "book-1")
SEARCHED = (*BOOKS, "@all")
COPIES = {
    "cp-a": lambda src, dst: ["cp", "-a", str(src), str(dst)],
    "cp-r": lambda src, dst: ["cp", "-r", str(src), str(dst)],
    "tar": lambda src, dst: ["sh", "-c", f"mkdir -p '{dst}' && tar -C '{src}' -cf - . | tar -C '{dst}' -xf -"],
}


def search(data: Path, book: str, vector: Path, read_only: bool = False) -> dict:
    argv = [sys.executable, "-m", "book_agent", "--data-dir", str(data), "search", book, "water ground battle",
            "--json", "--query-vector", str(vector)]
    if read_only:
        script = f"mount --bind '{data}' '{data}' && mount -o remount,bind,ro '{data}' && exec \"$@\""
        argv = [*UNSHARE, "sh", "-c", script, "sh", *argv]
    proc = subprocess.run(argv, capture_output=True, timeout=300, check=False)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    return json.loads(proc.stdout)


def summary(out: dict) -> tuple:
    return ({k: v["status"] for k, v in out["channels"].items()},
            [(h["evidence_id"], {k: v and round(v, 6) for k, v in h["scores"].items()}) for h in out["hits"]])


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, tuple]]:
    """A data dir of two books with every derived file a search reads made (lexical sidecars,
    impact files, vector sidecars, the library's lexical index), and its answers."""
    from book_agent import BookAgent

    root = tmp_path_factory.mktemp("copies")
    rng = np.random.default_rng(4)
    with BookAgent(root / "data") as agent:
        for b, book in enumerate(BOOKS):
            records = [RecordSpec(f"r{i}", " ".join(rng.choice(WORDS, 12)) + f" w{b}x{i}", ["H"], 0)
                       for i in range(80)]
            agent.init(make_book(root / "packages", book, records))
        agent.prepare("@all")
    vector = root / "vector.json"
    v = rng.standard_normal(16)
    vector.write_text(json.dumps(list(map(float, v / np.linalg.norm(v)))))
    answers = {}
    for _ in range(2):  # the second search loads what the first had made (impact files)
        answers = {book: summary(search(root / "data", book, vector)) for book in SEARCHED}
    for book in SEARCHED:
        assert answers[book][0]["lexical"] == "ok"
    assert (root / "data" / "books" / "book-0" / "vectors" / "vectors.f32.npy").exists()
    return root / "data", vector, answers


def copied(data: Path, mode: str, tmp_path: Path) -> Path:
    copy = tmp_path / f"copy-{mode}"
    subprocess.run(COPIES[mode](data, copy), check=True, timeout=120)
    return copy


def derived_files(data: Path) -> dict[str, tuple[int, int]]:
    """Each derived file's (inode, size): a rebuild is a new inode."""
    return {str(p.relative_to(data)): (p.stat().st_ino, p.stat().st_size) for p in data.rglob("*")
            if p.is_file() and "verified" not in p.name and not p.name.startswith(".")}


@pytest.mark.parametrize("mode", sorted(COPIES))
def test_a_copy_answers_every_search_as_the_original_and_rebuilds_nothing(original, mode, tmp_path):
    data, vector, answers = original
    copy = copied(data, mode, tmp_path)
    before = derived_files(copy)
    for _ in range(2):  # the first verifies what the copy changed, the second trusts the verdicts
        assert {book: summary(search(copy, book, vector)) for book in SEARCHED} == answers
    after = derived_files(copy)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing rebuilt
    verdicts = json.loads((copy / "books" / "book-0" / "copies.verified.json").read_text())
    assert "lexical.sqlite" in verdicts


def test_a_read_only_copy_answers_every_search_in_every_process(original, tmp_path):
    require_real_part(namespaces_work(tmp_path), "unshare -m with a read-only bind mount")
    data, vector, answers = original
    copy = copied(data, "cp-r", tmp_path)
    for _ in range(2):  # nothing can be remembered on disk: each process verifies in memory
        assert {book: summary(search(copy, book, vector, read_only=True)) for book in SEARCHED} == answers
    assert not list(copy.rglob("copies.verified.json"))


def test_a_copy_whose_files_lost_their_mode_bits_answers_as_the_original(original, tmp_path):
    data, vector, answers = original
    copy = copied(data, "cp-r", tmp_path)
    for path in copy.rglob("*"):
        if path.is_file():
            path.chmod(0o400 if path.suffix != ".json" else 0o777)
    assert {book: summary(search(copy, book, vector)) for book in SEARCHED} == answers


def flip_byte(path: Path, at: float = 0.6) -> None:
    data = bytearray(path.read_bytes())
    where = int(len(data) * at)
    data[where] ^= 0x55
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime: only the bytes differ


@pytest.mark.parametrize("mode", ["cp-a", "cp-r"])
def test_a_copy_with_one_byte_changed_in_a_lexical_sidecar_is_caught(original, mode, tmp_path):
    data, vector, answers = original
    copy = copied(data, mode, tmp_path)
    flip_byte(copy / "books" / "book-0" / "lexical.sqlite")
    for _ in range(2):  # caught again: damage is never remembered as sound
        out = search(copy, "book-0", vector)
        assert out["channels"]["lexical"]["status"] == "unavailable"
        assert out["channels"]["lexical"]["code"] == "lexical.index_stale"
    assert summary(search(copy, "book-1", vector)) == answers["book-1"]  # the other book is untouched
    verdicts = copy / "books" / "book-0" / "copies.verified.json"
    assert not verdicts.exists() or "lexical.sqlite" not in json.loads(verdicts.read_text())


def test_a_copy_with_one_byte_changed_in_a_vector_sidecar_never_searches_it(original, tmp_path):
    data, vector, answers = original
    copy = copied(data, "cp-a", tmp_path)
    npy = copy / "books" / "book-0" / "vectors" / "vectors.f32.npy"
    good = npy.read_bytes()
    flip_byte(npy, 0.9)
    assert summary(search(copy, "book-0", vector)) == answers["book-0"]  # the matrix read from SQLite again
    assert npy.read_bytes() == good  # and its sidecar rebuilt


def test_a_copy_with_one_byte_changed_in_the_library_postings_is_caught(original, tmp_path):
    data, vector, answers = original
    copy = copied(data, "cp-r", tmp_path)
    (postings,) = (copy / "library").glob("postings-*.docs.npy")
    flip_byte(postings, 0.7)
    out = search(copy, "@all", vector)  # the damaged index is refused, rebuilt, and answers
    assert summary(out) == answers["@all"]
    assert out["library"]["lexical_index"]["rebuilt"] is True


def test_a_copy_taken_midway_through_a_rebuild_serves_the_generation_it_holds(original, tmp_path):
    """A staged, half-written sidecar (what a copy taken while `prepare` ran holds) is ignored."""
    data, vector, answers = original
    copy = copied(data, "cp-a", tmp_path)
    folder = copy / "books" / "book-0"
    half = (folder / "lexical.sqlite").read_bytes()
    (folder / ".lexical-staged.sqlite").write_bytes(half[: len(half) // 2])
    assert summary(search(copy, "book-0", vector)) == answers["book-0"]


def test_status_says_when_a_copy_was_recognised_and_verified(original, tmp_path):
    data, vector, _ = original
    copy = copied(data, "cp-r", tmp_path)
    search(copy, "book-0", vector)
    proc = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(copy), "status", "book-0", "--json"],
                          capture_output=True, timeout=120, check=True)
    copies = json.loads(proc.stdout)["copy_verification"]
    names = {Path(c["file"]).name for c in copies["verified"]}
    assert "lexical.sqlite" in names
    assert all(c["seconds"] >= 0 and c["bytes"] > 0 for c in copies["verified"])
    shutil.rmtree(copy)


@pytest.mark.parametrize("mode", ["cp-a", "cp-r"])
def test_a_moved_data_dir_serves_its_own_imported_packages(tmp_path, mode):
    """Books imported from archives live in the data dir: a copy moved to another place (the
    original removed) reads its own copies, whose files all have new identities, verified once."""
    import zipfile

    from book_agent import BookAgent

    rng = np.random.default_rng(2)
    records = [RecordSpec(f"r{i}", " ".join(rng.choice(WORDS, 12)) + f" x{i}", ["H"], 0) for i in range(60)]
    package = make_book(tmp_path / "packages", "imported", records)
    archive = tmp_path / "imported.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(package.rglob("*")):
            if path.is_file():
                out.write(path, f"imported/{path.relative_to(package)}")
    with BookAgent(tmp_path / "data") as agent:
        agent.init(archive)
    vector = tmp_path / "vector.json"
    v = rng.standard_normal(16)
    vector.write_text(json.dumps(list(map(float, v / np.linalg.norm(v)))))
    before = [summary(search(tmp_path / "data", book, vector)) for book in ("imported", "@all")]
    moved = copied(tmp_path / "data", mode, tmp_path)
    shutil.rmtree(tmp_path / "data")
    for _ in range(2):
        assert [summary(search(moved, book, vector)) for book in ("imported", "@all")] == before
    (extracted,) = (moved / "packages").glob("*/imported/book.md")
    extracted.parent.chmod(0o755)
    if mode == "cp-a":  # the same bytes, but through a symlink whose target nobody watches: refused
        outside = tmp_path / "outside.md"
        shutil.copy2(extracted, outside)
        extracted.unlink()
        extracted.symlink_to(outside)
    else:  # other bytes: refused, as before
        extracted.chmod(0o644)
        extracted.write_text(extracted.read_text() + " ")
    out = search(moved, "imported", vector)
    assert out["error"]["code"] == "package.changed"
