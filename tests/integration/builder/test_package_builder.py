"""The builder writes what the format page describes (so the other tests stand on solid ground)."""

import json
import sqlite3

import pypdfium2 as pdfium
import pytest

from tests.support.package_builder import (
    BREAKAGES,
    break_package,
    build_package,
    sha256_file,
    tree_fingerprint,
)


def test_pdf_package_is_complete_and_hashes_match(pdf_package):
    manifest = json.loads((pdf_package / "book-package.json").read_text(encoding="utf-8"))
    for entry in manifest["files"].values():
        path = pdf_package / entry["path"]
        assert path.stat().st_size == entry["bytes"]
        assert sha256_file(path) == entry["sha256"]
    doc = pdfium.PdfDocument(str(pdf_package / "original/book.pdf"))
    try:
        texts = []
        for i in range(len(doc)):
            page = doc[i]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
    finally:
        doc.close()
    assert "孫子曰" in texts[3]
    assert texts[-1].strip() == ""  # the page without text


def test_markdown_spans_point_at_record_text(epub_package):
    markdown = (epub_package / "book.md").read_text(encoding="utf-8")
    con = sqlite3.connect(epub_package / "index.sqlite")
    rows = con.execute("SELECT text, md_start, md_end FROM records").fetchall()
    con.close()
    assert rows and all(markdown[s:e] == text for text, s, e in rows)


@pytest.mark.parametrize("how", sorted(BREAKAGES))
def test_every_breakage_changes_the_package(tmp_path, how):
    root = build_package(tmp_path / "p", kind="epub")
    before = tree_fingerprint(root)
    break_package(root, how)
    assert tree_fingerprint(root) != before
