"""Hostile archives are refused with their own code, leave nothing behind and write nothing
outside the managed folder; any member name either extracts inside it or is refused."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.archives.importer import ArchiveLimits, import_archive, remove_tree
from tests.support.hostile_archives import CORPUS, Hostile


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every entry under root: kind and size (files), so any new or changed file shows."""
    out: dict[str, tuple[str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st_ = path.lstat()
            kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
            out[str(path.relative_to(root))] = (kind, st_.st_size if kind == "file" else 0)
    return out


def _params() -> list[object]:
    return [
        pytest.param(item, id=item.kind, marks=[pytest.mark.slow] if item.slow else [])
        for item in CORPUS
    ]


@pytest.mark.parametrize("hostile", _params())
def test_hostile_archive_is_refused_with_its_code_and_leaves_nothing(
    tmp_path: Path, hostile: Hostile
) -> None:
    archives = tmp_path / "archives"
    archives.mkdir()
    managed = tmp_path / "managed"
    managed.mkdir()
    archive = hostile.build(archives, tmp_path)
    before = snapshot(tmp_path)

    with pytest.raises(BookAgentError) as caught:
        import_archive(archive, managed, ArchiveLimits(**hostile.limits))

    assert caught.value.code == hostile.code, caught.value
    assert caught.value.message
    assert snapshot(tmp_path) == before  # nothing outside managed/, nothing left inside
    assert list(managed.iterdir()) == []


def test_corpus_codes_cover_the_issue_list() -> None:
    wanted = {
        "archive.path_traversal", "archive.absolute_path", "archive.link_member",
        "archive.special_member", "archive.too_many_members", "archive.too_large",
        "archive.member_too_large", "archive.ratio_exceeded", "archive.size_mismatch",
        "archive.duplicate_name", "archive.encrypted_member", "archive.bad_name",
        "archive.path_too_long", "archive.too_deep", "archive.corrupt",
        "archive.unsupported_format", "archive.empty",
    }
    assert wanted <= {item.code for item in CORPUS}


def test_the_same_members_without_the_hostile_one_import(tmp_path: Path) -> None:
    """Control: the corpus' benign part imports, so refusals above are about the hostile member."""
    from tests.support.hostile_archives import good_files, write_zip

    archive = write_zip(tmp_path / "good.zip", good_files())
    dest = import_archive(archive, tmp_path / "managed")
    assert (dest / "pkg" / "book.md").read_bytes() == b"# Book\n"


# -- property: any name is either extracted inside managed/ or refused ---------------

TOKENS = [
    "a", "B", "pkg", ".", "..", "/", "\\", ":", "C:", "~", " ", "\x00", "\x07", "\n", "\x7f",
    "\u00e9", "e\u0301", "\u00c9", "\uff0e", "\uff0f", "\u202e", "\u2028", "\u00df", "ss",
    "\u212a", "K", "%2e", "\u4e66",
]
# Whole components are drawn often, so traversal and plain names (successes) are common.
COMPONENTS = st.one_of(
    st.sampled_from(["..", ".", "", "a", "pkg", "book.md", "C:", "\uff0e\uff0e"]),
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4).map("".join),
)
NAMES = st.lists(COMPONENTS, min_size=1, max_size=5).map("/".join)


def _zip_bytes(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore", UserWarning)  # duplicates are part of the test
        for index, name in enumerate(names):
            info = zipfile.ZipInfo("placeholder")
            info.filename = name  # written exactly, NULs and all
            archive.writestr(info, f"payload {index}".encode())
    return buffer.getvalue()


def _tar_bytes(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for index, name in enumerate(names):
            data = f"payload {index}".encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


PROPERTY = settings(
    deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@settings(PROPERTY, max_examples=25)
@given(names=st.lists(NAMES, min_size=1, max_size=4), as_tar=st.booleans())
def test_any_member_name_extracts_inside_or_is_refused(
    tmp_path: Path, names: list[str], as_tar: bool
) -> None:
    check_names(tmp_path, names, as_tar)


@pytest.mark.slow
@settings(PROPERTY, max_examples=300)
@given(names=st.lists(NAMES, min_size=1, max_size=6), as_tar=st.booleans())
def test_any_member_name_extracts_inside_or_is_refused_thoroughly(
    tmp_path: Path, names: list[str], as_tar: bool
) -> None:
    check_names(tmp_path, names, as_tar)


def check_names(tmp_path: Path, names: list[str], as_tar: bool) -> None:
    try:
        data = _tar_bytes(names) if as_tar else _zip_bytes(names)
    except (ValueError, UnicodeError, tarfile.TarError):
        assume(False)  # the stdlib will not even write it
        return
    sandbox = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        archive = sandbox / "in.bin"
        archive.write_bytes(data)
        managed = sandbox / "managed"
        managed.mkdir()
        before = snapshot(sandbox)
        try:
            dest = import_archive(archive, managed)
        except BookAgentError as exc:
            assert exc.code.startswith("archive.")
            assert snapshot(sandbox) == before
            return
        real_managed = managed.resolve()
        assert dest.parent == real_managed
        after = snapshot(sandbox)
        new = {path for path in after if path not in before}
        assert all(Path(sandbox, path).resolve().is_relative_to(dest) or
                   Path(sandbox, path).resolve() == dest for path in new)
        assert all(kind != "link" for kind, _ in after.values())
        written = [p for p in new if after[p][0] == "file"]
        assert written, "a successful import extracted at least one file"
    finally:
        remove_tree(sandbox)
