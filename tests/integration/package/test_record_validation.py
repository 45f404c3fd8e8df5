"""Issue 13, findings 5 and 9: every row of `records` is held to the format at inspect/init,
with coded diagnostics, before anything is registered.

The package's own schema may lack the contract's constraints (NOT NULL, PRIMARY KEY,
UNIQUE), so each test first rebuilds the table without them, then breaks one field of one
row (or duplicates a row) in one way.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from book_agent_adapters.package.inspector import PackageInspector
from book_agent_adapters.registry.json_registry import JsonRegistry
from tests.support import REPO_ROOT
from tests.support.cli_support import run_cli
from tests.support.package_builder import rehash, tree_fingerprint


def loosen(root: Path) -> sqlite3.Connection:
    """The records table without constraints or column types (what a careless pipeline may write)."""
    con = sqlite3.connect(root / "index.sqlite")
    con.executescript("""
        CREATE TABLE loose (record_id, seq, text, headings, md_start, md_end, source);
        INSERT INTO loose SELECT record_id, seq, text, headings, md_start, md_end, source FROM records;
        DROP TABLE records;
        ALTER TABLE loose RENAME TO records;
    """)
    return con


def damage(root: Path, sql: str, params: tuple = ()) -> Path:
    con = loosen(root)
    con.execute(sql, params)
    con.commit()
    con.close()
    rehash(root)
    return root


FIELD_BREAKS = {
    "text NULL": ("UPDATE records SET text = NULL WHERE record_id = 'r0002'", "text is NULL"),
    "text a number": ("UPDATE records SET text = 42 WHERE record_id = 'r0002'", "text is not text"),
    "headings NULL": ("UPDATE records SET headings = NULL WHERE record_id = 'r0002'", "headings is NULL or not JSON"),
    "headings not JSON": ("UPDATE records SET headings = '[\"a\"' WHERE record_id = 'r0002'",
                          "headings is NULL or not JSON"),
    "headings an object": ("UPDATE records SET headings = '{\"a\": 1}' WHERE record_id = 'r0002'",
                           "headings is not a JSON array of strings"),
    "headings numbers": ("UPDATE records SET headings = '[1, 2]' WHERE record_id = 'r0002'",
                         "headings is not a JSON array of strings"),
    "headings deeply nested": ("UPDATE records SET headings = ? WHERE record_id = 'r0002'",
                               "headings is NULL or not JSON"),
    "source NULL": ("UPDATE records SET source = NULL WHERE record_id = 'r0002'", "source is NULL or not JSON"),
    "source not JSON": ("UPDATE records SET source = 'page 3' WHERE record_id = 'r0002'",
                        "source is NULL or not JSON"),
    "source an array": ("UPDATE records SET source = '[0]' WHERE record_id = 'r0002'", "source is not a JSON object"),
    "source without kind": ("UPDATE records SET source = '{\"page_index\": 0}' WHERE record_id = 'r0002'",
                            "source.kind is not pdf or epub"),
    "source of another kind": ("UPDATE records SET source = '{\"kind\": \"epub\", \"href\": \"a.xhtml\"}' "
                               "WHERE record_id = 'r0002'", "source.kind is epub, the original is pdf"),
    "page_index negative": ("UPDATE records SET source = '{\"kind\": \"pdf\", \"page_index\": -1}' "
                            "WHERE record_id = 'r0002'", "source.page_index is not a non-negative integer"),
    "page_index text": ("UPDATE records SET source = '{\"kind\": \"pdf\", \"page_index\": \"3\"}' "
                        "WHERE record_id = 'r0002'", "source.page_index is not a non-negative integer"),
    "char span reversed": ("UPDATE records SET source = '{\"kind\": \"pdf\", \"page_index\": 0, \"char_start\": 9, "
                           "\"char_end\": 2}' WHERE record_id = 'r0002'",
                           "source.char_start/char_end are not integers with 0 <= start <= end"),
    "md span reversed": ("UPDATE records SET md_start = 50, md_end = 10 WHERE record_id = 'r0002'",
                         "md_start/md_end are not integers with 0 <= start <= end"),
    "md_start text": ("UPDATE records SET md_start = 'x' WHERE record_id = 'r0002'",
                      "md_start/md_end are not integers with 0 <= start <= end"),
    "record_id NULL": ("UPDATE records SET record_id = NULL WHERE record_id = 'r0002'",
                       "record_id is not a non-empty string"),
    "record_id empty": ("UPDATE records SET record_id = '' WHERE record_id = 'r0002'",
                        "record_id is not a non-empty string"),
    "record_id a number": ("UPDATE records SET record_id = 7 WHERE record_id = 'r0002'",
                           "record_id is not a non-empty string"),
    "seq NULL": ("UPDATE records SET seq = NULL WHERE record_id = 'r0002'", "seq is not an integer"),
}


@pytest.mark.parametrize("name", sorted(FIELD_BREAKS))
def test_a_broken_field_is_a_coded_diagnostic(pdf_package: Path, name: str) -> None:
    sql, reason = FIELD_BREAKS[name]
    params = ("[" * 50_000,) if "?" in sql else ()
    damage(pdf_package, sql, params)
    info = PackageInspector().diagnose(pdf_package)
    found = [d for d in info.diagnostics if d.code == "package.record_invalid"]
    assert len(found) == 1 and found[0].severity == "error"
    assert reason in found[0].details["problems"], found[0].details


DUPLICATES = {
    "record_id": ("INSERT INTO records SELECT record_id, 99, text, headings, md_start, md_end, source FROM records "
                  "WHERE record_id = 'r0003'", "package.record_id_duplicate"),
    "seq": ("UPDATE records SET seq = 0 WHERE record_id = 'r0004'", "package.record_seq_duplicate"),
}


@pytest.mark.parametrize("column", sorted(DUPLICATES))
def test_duplicates_are_refused_before_anything_is_registered(tmp_path: Path, pdf_package: Path, column: str) -> None:
    sql, code = DUPLICATES[column]
    if column == "record_id":  # the vector count must still match the record count
        con = sqlite3.connect(pdf_package / "index.sqlite")
        con.execute("UPDATE meta SET value = '11' WHERE key = 'record_count'")
        con.commit()
        con.close()
        (pdf_package / "vectors.json").write_text(json.dumps(
            {**json.loads((pdf_package / "vectors.json").read_text(encoding="utf-8")), "record_count": 11}),
            encoding="utf-8")
    damage(pdf_package, sql)
    before = tree_fingerprint(pdf_package)
    data = tmp_path / "data"
    report = run_cli("--data-dir", str(data), "inspect", str(pdf_package), "--json")
    assert report.code == 1 and code in {d["code"] for d in report.json["diagnostics"]}
    result = run_cli("--data-dir", str(data), "init", str(pdf_package), "--json")
    assert result.code == 1 and result.error_code == "package.invalid"
    assert code in result.json["error"]["details"]["codes"]
    assert JsonRegistry(data).list() == [] and not (data / "books" / "test-book").exists()
    assert tree_fingerprint(pdf_package) == before


def test_duplicate_vector_ids_are_refused(pdf_package: Path) -> None:
    con = sqlite3.connect(pdf_package / "index.sqlite")
    con.executescript("CREATE TABLE v2 AS SELECT * FROM vectors; DROP TABLE vectors; ALTER TABLE v2 RENAME TO vectors;"
                      "INSERT INTO vectors SELECT * FROM vectors WHERE record_id = 'r0001';")
    con.commit()
    con.close()
    rehash(pdf_package)
    codes = {d.code for d in PackageInspector().diagnose(pdf_package).diagnostics}
    assert "package.record_id_duplicate" in codes


def test_many_bad_rows_make_one_short_diagnostic(pdf_package: Path) -> None:
    damage(pdf_package, "UPDATE records SET text = NULL, source = 'x'")
    (found,) = [d for d in PackageInspector().diagnose(pdf_package).diagnostics if d.code == "package.record_invalid"]
    problems = found.details["problems"]
    assert problems["text is NULL"]["count"] == 10 and len(problems["text is NULL"]["record_ids"]) == 10
    assert set(problems) == {"text is NULL", "source is NULL or not JSON"}


def test_an_epub_package_checks_hrefs(epub_package: Path) -> None:
    damage(epub_package, "UPDATE records SET source = '{\"kind\": \"epub\", \"href\": \"\"}' WHERE record_id = 'r0001'")
    (found,) = [d for d in PackageInspector().diagnose(epub_package).diagnostics if d.code == "package.record_invalid"]
    assert "source.href is not a non-empty string" in found.details["problems"]


def test_valid_packages_have_no_record_diagnostics(pdf_package: Path, epub_package: Path) -> None:
    example = REPO_ROOT / "examples" / "art-of-war-package"
    for root in (pdf_package, epub_package, example):
        codes = {d.code for d in PackageInspector().diagnose(root, verify_hashes=False).diagnostics}
        assert not codes & {"package.record_invalid", "package.record_id_duplicate", "package.record_seq_duplicate"}
