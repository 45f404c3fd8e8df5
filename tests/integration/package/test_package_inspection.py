"""PackageInspector / PackageValidator on real packages: valid, broken in every named way,
hostile (escaping paths, symlinks), and large. No byte of a package may change."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from book_agent import BookAgentError, PackageInspector, PackageValidator
from book_agent_adapters.package.database_checks import check_database
from tests.support.package_builder import (
    BREAKAGES,
    break_package,
    build_package,
    rehash,
    sha256_file,
    synthetic_records,
    tree_fingerprint,
)

EXPECTED_CODE = {
    "missing_markdown": "package.file_missing",
    "missing_manifest_entry": "package.manifest_entry_missing",
    "unlisted_file": "package.file_unlisted",
    "symlinked_file": "package.file_symlink",
    "size_mismatch": "package.size_mismatch",
    "hash_mismatch": "package.hash_mismatch",
    "unsupported_schema_version": "package.schema_version_unsupported",
    "wrong_schema": "package.schema_unsupported",
    "bad_book_id": "package.bad_book_id",
    "malformed_manifest_json": "package.manifest_malformed",
    "malformed_vectors_json": "package.vectors_manifest_malformed",
    "not_sqlite": "package.database_unreadable",
    "wrong_sqlite_schema": "package.database_schema_invalid",
    "vector_wrong_length": "package.vector_length_invalid",
    "vector_nan": "package.vector_not_finite",
    "vector_without_record": "package.vector_orphan",
    "record_count_disagrees": "package.record_count_mismatch",
    "vectors_json_dims_disagree": "package.meta_mismatch",
}
WARNING_ONLY = {"unlisted_file"}


def inspect(path: Path, **kwargs: Any):
    return PackageInspector().diagnose(path, **kwargs)


def codes(info) -> set[str]:
    return {d.code for d in info.diagnostics}


def edit_manifest(root: Path, change: Callable[[dict[str, Any]], None], name: str = "book-package.json") -> None:
    path = root / name
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def sql(root: Path, statement: str, params: tuple[Any, ...] = ()) -> None:
    con = sqlite3.connect(root / "index.sqlite")
    con.execute(statement, params)
    con.commit()
    con.close()


# --- valid packages ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["pdf", "epub"])
def test_valid_package_is_described_fully(kind, request):
    root = request.getfixturevalue(f"{kind}_package")
    info = inspect(root)
    assert not info.has_errors, [d.to_dict() for d in info.diagnostics]
    assert info.book_id == "test-book" and info.title == "A Synthetic Test Book"
    assert info.root == root.resolve() and info.root.is_absolute()
    assert info.original_path == root.resolve() / f"original/book.{kind}"
    assert info.markdown_path == root.resolve() / "book.md"
    assert info.skill_path == root.resolve() / "SKILL.md"
    assert info.database_path == root.resolve() / "index.sqlite"
    assert info.vector_manifest is not None and info.vector_manifest["dimensions"] == 16
    assert info.archive_manifest is not None and info.archive_manifest["book_id"] == "test-book"
    assert info.original_kind == kind and info.read_only is True
    manifest = json.loads((root / "book-package.json").read_text(encoding="utf-8"))
    listed = {e["path"] for e in manifest["files"].values()}
    assert set(info.file_hashes) == listed
    assert all(info.file_hashes[rel] == sha256_file(root / rel) for rel in listed)
    assert PackageValidator().validate(info) == info.diagnostics
    json.dumps(info.to_dict())  # serialisable as it is


def test_package_without_vectors_is_valid(tmp_path):
    root = build_package(tmp_path / "p", kind="epub", vectors="none")
    info = inspect(root)
    assert not info.has_errors and info.vector_manifest is None
    assert not (root / "vectors.json").exists()


def test_skill_scripts_are_listed_but_never_run(tmp_path):
    marker = tmp_path / "ran"
    root = build_package(tmp_path / "p", kind="epub",
                         skill_files={"skill/run.py": f"open({str(marker)!r}, 'w').write('x')\n"})
    info = inspect(root)
    assert not info.has_errors and "skill/run.py" in info.file_hashes
    assert not marker.exists()


# --- every named breakage has its own code ------------------------------------------------

def test_every_breakage_has_its_own_expected_code():
    assert set(EXPECTED_CODE) == set(BREAKAGES)
    assert len(set(EXPECTED_CODE.values())) == len(EXPECTED_CODE)


@pytest.mark.parametrize("how", sorted(BREAKAGES))
def test_breakage_is_diagnosed_without_changing_a_byte(epub_package, how):
    break_package(epub_package, how)
    before = tree_fingerprint(epub_package)
    info = inspect(epub_package)
    assert tree_fingerprint(epub_package) == before
    assert not [p for p in epub_package.iterdir() if p.name.endswith(("-wal", "-shm", "-journal"))]
    assert EXPECTED_CODE[how] in codes(info), [d.to_dict() for d in info.diagnostics]
    if how in WARNING_ONLY:
        assert not info.has_errors
        assert PackageValidator().validate(info) == info.diagnostics
        return
    with pytest.raises(BookAgentError) as caught:
        PackageValidator().validate(info)
    assert caught.value.code == "package.invalid"
    assert EXPECTED_CODE[how] in caught.value.details["codes"]
    assert all(e["severity"] == "error" for e in caught.value.details["errors"])
    # the contract's own call raises the same (shared/contracts/contracts.md), hashes verified or not
    for verify in (True, False):
        if how == "hash_mismatch" and not verify:
            continue  # a changed byte of the same size is what verify_hashes=False does not look for
        with pytest.raises(BookAgentError) as contract:
            PackageInspector().inspect(epub_package, verify_hashes=verify)
        assert contract.value.code == "package.invalid" and EXPECTED_CODE[how] in contract.value.details["codes"]
        assert contract.value.remediation
    assert tree_fingerprint(epub_package) == before


@pytest.mark.parametrize("kind", ["pdf", "epub"])
def test_the_contracts_inspect_returns_a_valid_package_with_its_notes(kind, request):
    root = request.getfixturevalue(f"{kind}_package")
    info = PackageInspector().inspect(root, verify_hashes=True)
    assert info.book_id == "test-book" and not info.has_errors
    assert info.diagnostics == PackageInspector().diagnose(root).diagnostics


def test_the_cli_inspect_still_lists_every_problem_of_an_invalid_package(epub_package):
    """The non-raising way the CLI uses: its JSON is the diagnostics, as before."""
    from tests.support.cli_support import run_cli

    break_package(epub_package, "hash_mismatch")
    result = run_cli("inspect", str(epub_package), "--json")
    found = result.json
    assert "error" not in found, found
    assert "package.hash_mismatch" in {d["code"] for d in found["diagnostics"]}


def test_vectors_json_dimensions_disagreeing_also_flags_every_blob(epub_package):
    break_package(epub_package, "vectors_json_dims_disagree")
    lengths = [d for d in inspect(epub_package).diagnostics if d.code == "package.vector_length_invalid"]
    assert lengths and lengths[0].details["count"] == 10 and lengths[0].details["expected_bytes"] == 17 * 4


# --- finding the root -----------------------------------------------------------------------

def test_root_may_be_the_manifest_file_or_one_folder_down(tmp_path):
    root = build_package(tmp_path / "outer", kind="epub", folder="inner")
    assert inspect(root / "book-package.json").root == root.resolve()
    assert inspect(tmp_path / "outer").root == root.resolve()


def test_several_roots_are_reported_never_guessed(tmp_path, epub_package_template):
    for name in ("a", "b"):
        shutil.copytree(epub_package_template, tmp_path / "two" / name)
    with pytest.raises(BookAgentError) as caught:
        inspect(tmp_path / "two")
    assert caught.value.code == "package.ambiguous_root"
    assert caught.value.details["candidates"] == [str(tmp_path / "two" / n) for n in ("a", "b")]


def test_root_and_a_nested_root_are_ambiguous(epub_package, epub_package_template):
    shutil.copytree(epub_package_template, epub_package / "nested")
    with pytest.raises(BookAgentError) as caught:
        inspect(epub_package)
    assert caught.value.code == "package.ambiguous_root" and len(caught.value.details["candidates"]) == 2


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda p: p / "nothing-here", "package.not_found"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "package.no_manifest"),
        (lambda p: (p / "book.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18) and p / "book.zip", "package.no_manifest"),
        (lambda p: os.symlink(p / "gone", p / "dangling") or p / "dangling", "package.not_found"),
    ],
)
def test_paths_without_a_package_raise(tmp_path, make, code):
    with pytest.raises(BookAgentError) as caught:
        inspect(make(tmp_path))
    assert caught.value.code == code


# --- hostile manifests ----------------------------------------------------------------------

@pytest.mark.parametrize("bad_path", ["../outside.txt", "/etc/hostname", "skill\\x.md", "C:/x.md", "skill/../../x"])
def test_manifest_paths_may_not_escape_the_root(epub_package, bad_path):
    (epub_package.parent / "outside.txt").write_text("secret", encoding="utf-8")
    entry = {"path": bad_path, "sha256": "0" * 64, "bytes": 6}
    edit_manifest(epub_package, lambda m: m["extra_files"].append(entry))
    info = inspect(epub_package)
    escapes = [d for d in info.diagnostics if d.code == "package.path_escapes_root"]
    assert escapes and escapes[0].details["path"] == bad_path
    assert bad_path not in info.file_hashes


def test_symlinked_folder_inside_the_package_is_refused(tmp_path):
    root = build_package(tmp_path / "p", kind="epub", skill_files={"skill/notes.md": "notes"})
    shutil.move(root / "skill", tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", root / "skill")
    info = inspect(root)
    links = [d for d in info.diagnostics if d.code == "package.file_symlink"]
    assert links and links[0].details["symlink"] == "skill" and links[0].severity == "error"
    assert "skill/notes.md" not in info.file_hashes


def test_symlinked_manifest_is_not_read(epub_package, tmp_path):
    shutil.move(epub_package / "book-package.json", tmp_path / "real.json")
    os.symlink(tmp_path / "real.json", epub_package / "book-package.json")
    info = inspect(epub_package)
    assert codes(info) == {"package.file_symlink"} and info.archive_manifest is None


@pytest.mark.parametrize("text", ["[1, 2]", '{"schema": NaN}', "\xff\xfe", ""])
def test_manifest_that_is_no_json_object_is_malformed(epub_package, text):
    (epub_package / "book-package.json").write_bytes(text.encode("latin-1"))
    info = inspect(epub_package)
    assert codes(info) == {"package.manifest_malformed"} and info.book_id is None


@pytest.mark.parametrize("book_id", ["", "A", "-x", "x" * 65, "a b", "a/b", "ok\n", 7, None])
def test_bad_book_ids(epub_package, book_id):
    edit_manifest(epub_package, lambda m: m.update(book_id=book_id))
    info = inspect(epub_package)
    assert "package.bad_book_id" in codes(info) and info.book_id is None


@pytest.mark.parametrize("book_id", ["a", "x" * 64, "a.b_c-d9"])
def test_good_book_ids(epub_package, book_id):
    edit_manifest(epub_package, lambda m: m.update(book_id=book_id))
    sql(epub_package, "UPDATE meta SET value = ? WHERE key = 'book_id'", (book_id,))
    rehash(epub_package)
    info = inspect(epub_package)
    assert not info.has_errors and info.book_id == book_id


def test_schema_versions(epub_package):
    edit_manifest(epub_package, lambda m: m.update(schema_version="0.1.4"))
    assert not inspect(epub_package).has_errors  # a patch release of 0.1 is 0.1
    edit_manifest(epub_package, lambda m: m.update(schema_version="1.0"))
    (bad,) = [d for d in inspect(epub_package).diagnostics if d.code == "package.schema_version_unsupported"]
    assert bad.details["supported"] == ["0.1"] and "0.1" in bad.message


def test_unknown_keys_are_info(epub_package):
    edit_manifest(epub_package, lambda m: m.update(isbn="978-0", files={**m["files"], "cover": m["files"]["skill"]}))
    info = inspect(epub_package)
    unknown = {d.details["key"] for d in info.diagnostics if d.code == "package.unknown_key"}
    assert unknown == {"isbn", "files.cover"}
    assert all(d.severity == "info" for d in info.diagnostics)
    PackageValidator().validate(info)  # no raise


def test_manifest_entry_fields_are_checked(epub_package):
    edit_manifest(epub_package, lambda m: m["files"]["markdown"].update(sha256="xyz", bytes=-1))
    bad = [d for d in inspect(epub_package).diagnostics if d.code == "package.manifest_entry_invalid"]
    assert len(bad) == 2


# --- hashes and sizes -------------------------------------------------------------------------

def test_without_hash_verification_sizes_still_count(epub_package):
    manifest = json.loads((epub_package / "book-package.json").read_text(encoding="utf-8"))
    break_package(epub_package, "hash_mismatch")  # same size, other bytes
    info = inspect(epub_package, verify_hashes=False)
    assert not info.has_errors
    assert info.file_hashes["book.md"] == manifest["files"]["markdown"]["sha256"]
    break_package(epub_package, "size_mismatch")
    assert codes(inspect(epub_package, verify_hashes=False)) == {"package.size_mismatch"}


# --- media type -------------------------------------------------------------------------------

def test_media_type_must_be_pdf_or_epub(epub_package):
    edit_manifest(epub_package, lambda m: m["files"]["original"].update(media_type="text/plain"))
    assert "package.media_type_invalid" in codes(inspect(epub_package))


def test_media_type_must_match_the_bytes(pdf_package):
    edit_manifest(pdf_package, lambda m: m["files"]["original"].update(media_type="application/epub+zip"))
    (bad,) = [d for d in inspect(pdf_package).diagnostics if d.code == "package.media_type_invalid"]
    assert bad.details["actual"] == "application/pdf"


def test_zip_without_epub_mimetype_is_no_epub(epub_package):
    import zipfile

    with zipfile.ZipFile(epub_package / "original/book.epub", "w") as z:
        z.writestr("mimetype", "application/zip")
    rehash(epub_package)
    (bad,) = [d for d in inspect(epub_package).diagnostics if d.code == "package.media_type_invalid"]
    assert bad.details["actual"] is None


# --- the database -----------------------------------------------------------------------------

def vector_manifest(root: Path) -> dict[str, Any]:
    return json.loads((root / "vectors.json").read_text(encoding="utf-8"))


def test_check_database_returns_meta_and_findings(epub_package):
    meta, found = check_database(epub_package / "index.sqlite", vector_manifest(epub_package), "test-book")
    assert found == []
    assert meta["book_id"] == "test-book" and meta["record_count"] == "10" and meta["schema_version"] == "0.1"
    meta, found = check_database(epub_package / "index.sqlite", vector_manifest(epub_package), "other-book")
    assert [(d.code, d.details["key"]) for d in found] == [("package.meta_mismatch", "book_id")]


@pytest.mark.parametrize(
    ("statement", "code"),
    [
        ("DELETE FROM meta WHERE key = 'record_count'", "package.database_schema_invalid"),
        ("UPDATE meta SET value = 'many' WHERE key = 'record_count'", "package.database_schema_invalid"),
        ("UPDATE meta SET value = '0.2' WHERE key = 'schema_version'", "package.schema_version_unsupported"),
        ("UPDATE meta SET value = 'other/model' WHERE key = 'embedding_model'", "package.meta_mismatch"),
        ("ALTER TABLE records DROP COLUMN md_end", "package.database_schema_invalid"),
        ("DROP TABLE vectors", "package.database_schema_invalid"),
        ("UPDATE vectors SET embedding = 'text' WHERE rowid = 1", "package.vector_length_invalid"),
    ],
)
def test_database_findings(epub_package, statement, code):
    sql(epub_package, statement)
    _, found = check_database(epub_package / "index.sqlite", vector_manifest(epub_package), "test-book")
    assert code in {d.code for d in found}, [d.to_dict() for d in found]


def test_infinite_component_and_records_without_vectors(epub_package):
    inf = np.ones(16, "<f4")
    inf[3] = np.inf
    sql(epub_package, "UPDATE vectors SET embedding = ? WHERE record_id = 'r0002'", (inf.tobytes(),))
    sql(epub_package, "DELETE FROM vectors WHERE record_id IN ('r0009', 'r0010')")
    _, found = check_database(epub_package / "index.sqlite", vector_manifest(epub_package), "test-book")
    by_code = {d.code: d for d in found}
    assert by_code["package.vector_not_finite"].details["record_ids"] == ["r0002"]
    missing = by_code["package.vector_missing"]
    assert missing.severity == "warning" and missing.details["record_ids"] == ["r0009", "r0010"]


def test_vectors_json_record_count_must_match_rows(epub_package):
    vm = {**vector_manifest(epub_package), "record_count": 11}
    _, found = check_database(epub_package / "index.sqlite", vm, "test-book")
    assert [d.details["source"] for d in found if d.code == "package.record_count_mismatch"] == [
        "vectors.json record_count"
    ]


def test_vectors_without_vectors_json(epub_package):
    (epub_package / "vectors.json").unlink()
    edit_manifest(epub_package, lambda m: m["files"].pop("vector_manifest"))
    info = inspect(epub_package)
    assert "package.vectors_manifest_missing" in codes(info)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"metric": "l2"}, "package.vectors_manifest_invalid"),
        ({"dtype": "float16"}, "package.vectors_manifest_invalid"),
        ({"dimensions": "16"}, "package.vectors_manifest_invalid"),
        ({"provider": "somewhere"}, "package.vectors_manifest_invalid"),
        ({"schema_version": "2.0"}, "package.schema_version_unsupported"),
        ({"schema": "other"}, "package.schema_unsupported"),
    ],
)
def test_vectors_json_fields(epub_package, change, code):
    edit_manifest(epub_package, lambda m: m.update(change), name="vectors.json")
    rehash(epub_package)
    found = [d for d in inspect(epub_package).diagnostics if d.code == code]
    assert found and found[0].details["path"] == "vectors.json"


def test_wal_database_is_read_without_a_trace(epub_package):
    con = sqlite3.connect(epub_package / "index.sqlite")
    con.execute("PRAGMA journal_mode=wal")
    con.close()  # checkpointed on close: no -wal left, but the header now says WAL
    rehash(epub_package)
    before = tree_fingerprint(epub_package)
    info = inspect(epub_package)
    assert not info.has_errors
    assert tree_fingerprint(epub_package) == before


# --- speed -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_large_package_is_inspected_quickly(tmp_path):
    root = build_package(tmp_path / "big", kind="epub", dims=1024, records=synthetic_records(20_000))
    timings = []
    for _ in range(2):  # best of two: the machine is shared, a single run can be unlucky
        started = time.perf_counter()
        info = inspect(root, verify_hashes=True)
        timings.append(time.perf_counter() - started)
    assert not info.has_errors and len(info.file_hashes) == 5
    assert min(timings) < 2.0, timings


def test_a_view_in_place_of_a_table_is_not_run(epub_package):
    sql(epub_package, "ALTER TABLE records RENAME TO records_data")
    sql(epub_package, "CREATE VIEW records AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                      "SELECT x AS record_id, x AS seq, '' AS text, '[]' AS headings, NULL AS md_start, "
                      "NULL AS md_end, '{}' AS source FROM c")
    started = time.perf_counter()
    _, found = check_database(epub_package / "index.sqlite", vector_manifest(epub_package), "test-book")
    assert time.perf_counter() - started < 2.0
    (bad,) = [d for d in found if d.code == "package.database_schema_invalid"]
    assert bad.details["table"] == "records" and "view" in bad.message


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any folder")
def test_unreadable_folder_raises(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        with pytest.raises(BookAgentError) as caught:
            inspect(locked)
        assert caught.value.code == "package.unreadable"
    finally:
        locked.chmod(0o700)
