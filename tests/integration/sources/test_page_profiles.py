"""Page-image advice from the page's own objects (issue 43): a hit whose text says nothing
(a sentence of prose) is sent to its page when the page draws a figure, sets maths apart or
text in columns, and left alone on a page of prose, code, contents or an index.

Real parts: the labelled set's typeset PDFs (eval/visual_fallback/: pdfTeX with Computer
Modern maths, XeLaTeX with TikZ), a PDF written by reportlab through init and search.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent.domain.search.page_profile import page_signals
from book_agent_adapters.sources.pdf.reader import PdfSource
from tests.support.package_builder import RecordSpec, build_package, rehash

ROOT = Path(__file__).resolve().parents[3]
OCTAVE = ROOT / "eval" / "visual_fallback" / "physical-modeling-octave.pdf"
LSHORT = ROOT / "tests" / "support" / "data" / "real_books" / "lshort-zh-cn.pdf"


@pytest.mark.parametrize(("path", "page", "expected"), [
    (OCTAVE, 29, {"page.drawing"}),  # a plot of the population (an embedded EPS: paths)
    (OCTAVE, 14, set()),  # a diagram of boxes holding their labels: reads as text (a known miss)
    (OCTAVE, 24, {"page.display_maths"}),  # display ODEs in CMMI/CMSY
    (OCTAVE, 11, {"page.display_maths"}),  # one displayed polynomial below a glossary
    (OCTAVE, 26, {"page.table_layout"}),  # a ruled table of names, meanings and types
    (OCTAVE, 3, set()),  # a REPL session with inline maths in its prose
    (OCTAVE, 2, set()),  # contents with dot leaders
    (LSHORT, 9, set()),  # contents in two columns
    (LSHORT, 100, {"page.drawing"}),  # TikZ shapes beside their code
    (LSHORT, 36, set()),  # framed code examples (boxes holding text are not a drawing)
])
def test_real_pages_profiles(path: Path, page: int, expected: set[str]) -> None:
    pdf = PdfSource(path)
    try:
        profile = pdf.page_profile(page)
        assert pdf.page_profile(page) is profile  # read once a page
    finally:
        pdf.close()
    assert {code for code, _ in page_signals(profile)} == expected, profile


SENTENCES = {
    0: "The harbour town kept its lamps lit through the long winter of the storms.",
    1: "The growth of the rabbit population over one year is plotted below in detail.",
    2: "The measured yields of four grain varieties are listed below for each plot.",
    3: "The rate of change of the population is given by the equation below here.",
}


def _pdf(path: Path) -> None:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path))
    for page, sentence in SENTENCES.items():
        c.setFont("Helvetica", 11)
        c.drawString(72, 720, sentence)
        if page == 1:  # a chart: axes and 150 short strokes of a curve
            c.line(100, 300, 500, 300)
            c.line(100, 300, 100, 600)
            for n in range(150):
                x = 100 + 2.5 * n
                c.line(x, 300 + n, x + 2.5, 301 + n)
        elif page == 2:  # a table: a header and five rows of four cells
            for row in range(6):
                cells = ("Variety", "Plot A", "Plot B", "Plot C") if row == 0 else (
                    f"Grain {row}", f"{12 + row}.5", f"{20 + row}.1", f"{7 * row}.0")
                for col, cell in enumerate(cells):
                    c.drawString(72 + 110 * col, 650 - 18 * row, cell)
        elif page == 3:  # a display formula in the Symbol font, centred
            c.setFont("Symbol", 14)
            c.drawString(250, 600, "a \u00d7 b + \u03b1")
            c.setFont("Helvetica", 11)
            c.drawString(72, 560, "where alpha is the rate of growth of the population in a year.")
        c.showPage()
    c.save()


def test_a_prose_hit_is_sent_to_a_page_that_draws_sets_maths_or_columns(tmp_path: Path) -> None:
    records = [RecordSpec(f"r{page:04d}", text, ["One"], page) for page, text in SENTENCES.items()]
    package = build_package(tmp_path / "pkg", kind="pdf", records=records, vectors="none", blank_page=False)
    _pdf(package / "original" / "book.pdf")
    rehash(package)
    queries = {0: "harbour lamps winter storms", 1: "rabbit population plotted", 2: "grain varieties yields",
               3: "rate of change population below here"}
    with BookAgent(tmp_path / "data") as agent:
        agent.init(package)
        for page, query in queries.items():
            result = agent.search("test-book", query, top_k=1)
            hit = result["hits"][0]
            assert hit["source_locator"]["page_index"] == page
            advice = hit["visual_fallback"]
            codes = {r["code"] for r in advice["reasons"]}
            expected = {0: set(), 1: {"page.drawing"}, 2: {"page.table_layout"}, 3: {"page.display_maths"}}[page]
            assert codes == expected, (page, advice)
            assert advice["recommended"] is (page != 0)
            assert result["visual_fallback"]["hits_needing_page"] == ([0] if page else [])
