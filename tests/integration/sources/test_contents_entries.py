"""Issue 43, item 4: a contents entry points at the record holding its heading, not at the
first record of its page (or chapter).

Real parts: a PDF written by reportlab whose outline entries point at headings in the middle
of pages (a page's first record ends the previous section), an EPUB whose nav links point at
heading ids no record carries, packages around them and the BookAgent's get_toc.
"""

from __future__ import annotations

from pathlib import Path

from book_agent.agent import BookAgent
from tests.support.epub_originals import epub_package
from tests.support.package_builder import RecordSpec, build_package, rehash

SECTIONS = [  # (record, heading, page)
    RecordSpec("r0001", "1 Vectors. A vector space is a set with an addition and a scalar multiplication.", ["1 Vectors"], 0),
    RecordSpec("r0002", "1.1 Bases. A basis is a linearly independent set that spans the space.", ["1 Vectors", "1.1 Bases"], 0),
    RecordSpec("r0003", "so every vector is a unique combination of the basis vectors, as shown.", ["1 Vectors", "1.1 Bases"], 1),
    RecordSpec("r0004", "1.2 Dimension. The dimension is the number of vectors in any basis.", ["1 Vectors", "1.2 Dimension"], 1),
    RecordSpec("r0005", "Every finite dimensional space over a field has a basis of that size.", ["1 Vectors", "1.2 Dimension"], 1),
    RecordSpec("r0006", "1.3 Linear maps. A linear map preserves addition and scalar multiplication.", ["1 Vectors", "1.3 Linear maps"], 1),
]
OUTLINE = [("1 Vectors", 0, "r0001"), ("1.1 Bases", 0, "r0002"), ("1.2 Dimension", 1, "r0004"),
           ("1.3 Linear maps", 1, "r0006")]


def _outlined_pdf(path: Path) -> None:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path))
    for page in range(2):
        y = 720
        for record in (r for r in SECTIONS if r.page == page):
            c.drawString(72, y, record.text)
            title = next((t for t, p, rid in OUTLINE if rid == record.record_id), None)
            if title is not None:
                key = f"k{record.record_id}"
                c.bookmarkHorizontal(key, 72, y + 12)
                c.addOutlineEntry(title, key, level=0 if title == "1 Vectors" else 1)
            y -= 40
        c.showPage()
    c.save()


def test_a_pdf_outline_entry_points_at_its_heading_record(tmp_path: Path) -> None:
    package = build_package(tmp_path / "pkg", kind="pdf", records=SECTIONS, vectors="none", blank_page=False)
    _outlined_pdf(package / "original" / "book.pdf")
    rehash(package)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(package)
        toc = agent.get_toc("test-book")
    assert [(e["title"], e["page_index"], e["first_record_id"]) for e in toc["entries"]] == OUTLINE


def test_an_epub_nav_entry_points_at_its_heading_record(tmp_path: Path) -> None:
    chapters = [
        '<h1 id="h1">1 Vectors</h1><p id="p-r0001">A vector space.</p><h2 id="h11">1.1 Bases</h2>'
        '<p id="p-r0002">A basis spans.</p><p id="p-r0003">Unique combinations.</p>',
        '<h2 id="h12">1.2 Dimension</h2><p id="p-r0004">The number of vectors.</p>',
    ]
    records = [RecordSpec("r0001", "A vector space.", ["1 Vectors"], 0),
               RecordSpec("r0002", "A basis spans.", ["1 Vectors", "1.1 Bases"], 0),
               RecordSpec("r0003", "Unique combinations.", ["1 Vectors", "1.1 Bases"], 0),
               RecordSpec("r0004", "The number of vectors.", ["1 Vectors", "1.2 Dimension"], 1)]
    links = [("text/chapter01.xhtml#h1", "1 Vectors"), ("text/chapter01.xhtml#h11", "1.1 Bases"),
             ("text/chapter02.xhtml#h12", "1.2 Dimension"), ("text/chapter02.xhtml#gone", "Not a heading")]
    package = epub_package(tmp_path / "pkg", records, chapters, nav_links=links)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(package)
        toc = agent.get_toc("test-book")
    assert [e["first_record_id"] for e in toc["entries"]] == ["r0001", "r0002", "r0004", None]
