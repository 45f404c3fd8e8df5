"""Issue 42, item 4: the builder is faithful to the book. Metadata from the original (PDF info
and XMP, EPUB OPF), the language read from the text when none is declared, headings from the
layout of a PDF without an outline, running heads and folios out of the records, printed folios
as inferred page labels, records of whole sentences within the token window, and a book whose
pages are mostly unreadable refused with the pages named."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from book_agent.agent import build_agent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.builder import build as builder
from book_agent_adapters.builder import layout, metadata, sizing
from book_agent_adapters.builder.build import Options
from tests.support.cli_support import run_cli
from tests.support.hostile_books import good_epub

BODY = ("The moon rose over the quiet harbour and the boats came home one by one. Nobody on the "
        "quay said a word, for the catch had been poor all week and the winter was near. ")
ZH = "孙子曰：兵者，国之大事，死生之地，存亡之道，不可不察也。故经之以五事，校之以计，而索其情。"
JA = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で泣いていた。"


def rows(package: Path) -> list[tuple[str, list[str], dict[str, object]]]:
    con = sqlite3.connect(f"file:{package / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return [(t, json.loads(h), json.loads(s)) for t, h, s in
                con.execute("SELECT text, headings, source FROM records ORDER BY seq")]
    finally:
        con.close()


def book_pdf(path: Path, *, outline: bool = False, xmp: bytes = b"") -> Path:
    """Six pages: a running head, printed folios (page index + 3), a chapter heading in 20 pt
    bold, a numbered section in 13 pt bold, body text in 10 pt; no page labels."""
    from reportlab.lib.utils import simpleSplit
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pageCompression=0)
    pdf.setTitle("")
    headings = {0: ("Chapter 1 The Harbour", 20), 2: ("1.1 The Boats", 13), 4: ("Chapter 2 The Winter", 20)}
    for page in range(6):
        pdf.setFont("Helvetica", 9)
        pdf.drawString(72, 800, "Tides and Harbours")
        y = 760
        if page in headings:
            title, size = headings[page]
            pdf.setFont("Helvetica-Bold", size)
            pdf.drawString(72, y, title)
            if outline:
                pdf.bookmarkPage(f"p{page}")
                pdf.addOutlineEntry(title, f"p{page}", level=0 if size == 20 else 1)
            y -= 2 * size
        pdf.setFont("Helvetica", 10)
        for line in simpleSplit(BODY * 6, "Helvetica", 10, 460):
            pdf.drawString(72, y, line)
            y -= 13
        pdf.setFont("Helvetica", 9)
        pdf.drawString(300, 40, str(page + 3))
        pdf.showPage()
    pdf.save()
    if xmp:
        data = path.read_bytes()
        path.write_bytes(data.replace(b"%%EOF", b"%% " + xmp.replace(b"\n", b" ") + b"\n%%EOF"))
    return path


def test_a_pdf_without_outline_gets_layout_headings_clean_records_and_inferred_labels(tmp_path: Path) -> None:
    report = builder.build(book_pdf(tmp_path / "tides.pdf"), tmp_path / "pkg", Options(vectors=False))
    found = rows(tmp_path / "pkg")
    assert report["extraction"]["headings_from"] == "layout"
    assert report["extraction"]["page_labels"] == "inferred"
    assert all("Tides and Harbours" not in text for text, _, _ in found)  # the running head is out
    assert all(not text.rstrip().endswith(str(source["page_index"] + 3)) for text, _, source in found)  # folios out
    assert {json.dumps(h) for _, h, _ in found} >= {
        '["Chapter 1 The Harbour"]', '["Chapter 1 The Harbour", "1.1 The Boats"]', '["Chapter 2 The Winter"]'}
    assert all(s["page_label"] == str(s["page_index"] + 3) and s["page_label_inferred"] is True for _, _, s in found)
    verified(tmp_path / "pkg", tmp_path / "data", report["book_id"])


def test_an_outline_is_preferred_and_its_headings_start_records(tmp_path: Path) -> None:
    report = builder.build(book_pdf(tmp_path / "tides.pdf", outline=True), tmp_path / "pkg", Options(vectors=False))
    assert report["extraction"]["headings_from"] == "outline"
    starts = [text.split("\n")[0] for text, _, _ in rows(tmp_path / "pkg")]
    assert "1.1 The Boats" in starts and "Chapter 2 The Winter" in starts


def verified(package: Path, data: Path, book_id: str) -> None:
    assert run_cli("--data-dir", str(data), "init", str(package), "--json").code == 0
    con = sqlite3.connect(f"file:{package / 'index.sqlite'}?mode=ro", uri=True)
    ids = [r[0] for r in con.execute("SELECT record_id FROM records")]
    con.close()
    with build_agent(data) as agent:
        methods = {agent.locate_source(book_id, {"record_id": i})["verification"]["method"] for i in ids}
    assert methods <= {"exact", "normalized"}, methods


def test_pdf_title_and_authors_come_from_xmp_when_the_info_dictionary_is_silent(tmp_path: Path) -> None:
    xmp = (b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description><dc:title><rdf:Alt>'
           b'<rdf:li xml:lang="x-default">Tides &amp; Harbours</rdf:li></rdf:Alt></dc:title><dc:creator><rdf:Seq>'
           b'<rdf:li>Ann Author</rdf:li><rdf:li>Bo Writer</rdf:li></rdf:Seq></dc:creator><dc:language><rdf:Bag>'
           b'<rdf:li>en-GB</rdf:li></rdf:Bag></dc:language></rdf:Description></rdf:RDF></x:xmpmeta>')
    report = builder.build(book_pdf(tmp_path / "t.pdf", xmp=xmp), tmp_path / "pkg", Options(vectors=False))
    assert (report["title"], report["authors"], report["language"]) == ("Tides & Harbours", ["Ann Author", "Bo Writer"], "en")
    assert report["metadata_from"] == {"title": "xmp", "authors": "xmp", "language": "xmp"}


@pytest.mark.parametrize("text, language", [(ZH * 5, "zh"), (JA * 5, "ja"), (BODY * 5, "en"),
                                            ("Le chat est sur la table et les enfants sont dans le jardin. " * 5, "fr"),
                                            ("Der Hund ist nicht in dem Haus, und die Katze ist auf dem Dach. " * 5, "de"),
                                            ("", "")])
def test_the_language_is_read_from_the_text(text: str, language: str) -> None:
    assert metadata.detect_language([text]) == language


def test_an_epub_without_a_declared_language_is_labelled_from_its_text(tmp_path: Path) -> None:
    good_epub(tmp_path / "zh.epub", language="und", text=ZH)
    report = builder.build(tmp_path / "zh.epub", tmp_path / "pkg", Options(vectors=False))
    assert report["language"] == "zh" and report["metadata_from"]["language"] == "text"
    manifest = json.loads((tmp_path / "pkg" / "book-package.json").read_text(encoding="utf-8"))
    assert manifest["language"] == "zh" and manifest["authors"] == ["Ann Author"]


@pytest.mark.parametrize("text", [BODY * 40, ZH * 40, JA * 40, "word " * 3000, "字" * 5000, "x" * 50_000])
def test_records_fit_the_window_and_end_at_sentence_ends(text: str) -> None:
    pieces = sizing.fit(text, 0, len(text))
    runs = sizing.group(pieces, text)
    spans = [(pieces[r[0]][0], pieces[r[-1]][1]) for r in runs]
    assert all(sizing.tokens(text[s:e]) <= sizing.MAX_TOKENS for s, e in spans)
    assert "".join(text[s:e] for s, e in spans).replace(" ", "") == text.replace(" ", "")  # nothing lost
    if text in (BODY * 40, ZH * 40, JA * 40):
        assert all(text[e - 1] in ".。" for s, e in spans)  # whole sentences only


@pytest.mark.parametrize("text, state", [("A plain readable page of text, as books have.", "ok"),
                                         ("1.1 Origins . . . . . . . . . . 3\n1.2 More . . . . . . . 7", "ok"),
                                         ("   \n  ", "empty"), ("\ue001\ue002\ue003" * 20, "garbage"),
                                         ("!#$%&*+/<=>?@^`|~" * 10, "garbage")])
def test_readability(text: str, state: str) -> None:
    assert layout.readability(text) == state


def test_a_book_of_mostly_unreadable_pages_is_refused_naming_them(tmp_path: Path) -> None:
    from reportlab.pdfgen import canvas

    path = tmp_path / "scan.pdf"
    pdf = canvas.Canvas(str(path))
    for page in range(5):
        if page == 0:
            pdf.drawString(72, 720, BODY)
        pdf.rect(72, 72, 400, 500, fill=1)
        pdf.showPage()
    pdf.save()
    with pytest.raises(BookAgentError) as caught:
        builder.build(path, tmp_path / "pkg", Options(vectors=False))
    assert caught.value.code == "build.unreadable" and caught.value.details["empty"] == [2, 3, 4, 5]
    assert not (tmp_path / "pkg").exists()
