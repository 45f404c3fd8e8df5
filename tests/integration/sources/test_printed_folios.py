"""Issue 43, item 8: a PDF without page labels gets the folios printed in its footers and
headers as labels, marked inferred; a PDF with labels keeps its own.

Real parts: PDFs written by reportlab (roman front matter, arabic folios in footers and beside
running heads, a chapter opening without one), packages whose records claim no label, init,
locate and read_source through the BookAgent.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from book_agent.agent import BookAgent
from tests.support.package_builder import RecordSpec, build_package, rehash

PRINTED = [None, "i", "ii", "iii", "1", "2", "3", "4", "5", "6"]


def _pdf(path: Path, records: list[RecordSpec]) -> None:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path))
    for page, folio in enumerate(PRINTED):
        if folio is not None and folio.isdigit() and page % 2:
            c.drawString(72, 770, f"{folio}    Chapter One: Water")  # a running head with the folio at its edge
        elif folio is not None and page != 7:  # page 7 opens a chapter: no folio printed
            c.drawString(290, 40, f"- {folio} -")
        for n, record in enumerate(r for r in records if r.page == page):
            c.drawString(72, 700 - 30 * n, record.text)
        c.showPage()
    c.save()


def test_folios_become_inferred_labels(tmp_path: Path) -> None:
    records = [RecordSpec(f"r{p:04d}", f"Passage {p} tells of the river and the {p} bridges over it.", ["One"], p)
               for p in range(len(PRINTED))]
    package = build_package(tmp_path / "pkg", kind="pdf", records=records, vectors="none", blank_page=False)
    con = sqlite3.connect(package / "index.sqlite")  # records claim no label, as a pipeline without any writes
    con.execute("UPDATE records SET source = json_remove(source, '$.page_label')")
    con.commit()
    con.close()
    _pdf(package / "original" / "book.pdf", records)
    rehash(package)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(package)
        for record, printed in zip(records, PRINTED, strict=True):
            loc = agent.locate_source("test-book", {"record_id": record.record_id})
            assert loc["page_label"] == printed, (record.page, loc["page_label"])
            assert loc.get("page_label_inferred", False) == (printed is not None)
        shown = agent.read_source("test-book", {"page_index": 7})
        assert shown["page_label"] == "4" and shown["page_label_inferred"] is True
        assert json.dumps(shown)  # one JSON document
