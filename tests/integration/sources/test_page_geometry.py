"""Page geometry from the page's effective boxes: an A4 MediaBox inherited from /Pages, a
CropBox, /Rotate on the page or inherited. Real PDFs (reportlab, edited as real books have
them: tests/support/pdf_boxes.py) and the real A4 XeLaTeX book, rendered by PDFium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.sources.resolver import SourceResolver
from tests.support.pdf_boxes import A4, write_boxed_pdf
from tests.support.real_books import LSHORT_PDF

PAGES: list[dict[str, object]] = [
    {"text": "plain page"},
    {"text": "cropped page", "crop": [50, 100, 500, 800]},
    {"text": "turned page", "rotate": 90},
    {"text": "upside page", "rotate": 180},
    {"text": "left page", "rotate": 270},
]


def _resolver(pdf: Path, runtime: Path) -> SourceResolver:
    info = PackageInfo(book_id="boxes", title=None, root=pdf.parent, original_path=pdf, markdown_path=None,
                       skill_path=None, database_path=None, archive_manifest=None, vector_manifest=None)
    return SourceResolver(info, runtime)


@pytest.fixture(scope="module")
def boxed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SourceResolver]:
    folder = tmp_path_factory.mktemp("boxes")
    with _resolver(write_boxed_pdf(folder / "boxes.pdf", PAGES), folder / "runtime") as resolver:
        yield resolver


def _dark_share(path: str) -> float:
    with Image.open(path) as im:
        hist = im.convert("L").histogram()
    return sum(hist[:128]) / max(1, sum(hist))


@pytest.mark.parametrize("page", range(len(PAGES)))
def test_reported_size_has_the_rendered_images_aspect(boxed: SourceResolver, page: int) -> None:
    out = boxed.render_page(page, dpi=72)
    width_pt, height_pt = out["page_size_pt"]
    assert abs(out["width_px"] - width_pt) <= 1 and abs(out["height_px"] - height_pt) <= 1
    with Image.open(out["path"]) as im:
        assert im.size == (out["width_px"], out["height_px"])


def test_an_inherited_a4_mediabox_is_the_page_box(boxed: SourceResolver) -> None:
    out = boxed.render_page(0, dpi=72)
    assert out["page_size_pt"] == [round(A4[0], 2), round(A4[1], 2)]
    assert out["page_box"] == [0.0, 0.0, round(A4[0], 3), round(A4[1], 3)]
    turned = boxed.render_page(2, dpi=72)
    assert turned["rotation"] == 90 and turned["page_size_pt"] == [round(A4[1], 2), round(A4[0], 2)]
    assert turned["page_box"] == out["page_box"]  # user space: the box itself does not turn


def test_the_crop_box_is_the_page_box(boxed: SourceResolver) -> None:
    out = boxed.render_page(1, dpi=72)
    assert out["page_box"] == [50.0, 100.0, 500.0, 800.0] and out["page_size_pt"] == [450.0, 700.0]
    with pytest.raises(BookAgentError) as err:  # inside the MediaBox, outside the CropBox
        boxed.render_page(1, clip=[0, 0, 45, 90])
    assert err.value.code == "source.clip_invalid" and err.value.details["page_box"] == [50.0, 100.0, 500.0, 800.0]


def test_a_clip_in_the_top_50_points_of_a4_is_rendered_whole(boxed: SourceResolver) -> None:
    loc = boxed.locate("TOP plain page")
    assert loc["page_index"] == 0 and loc["bbox"][3] > 792  # above US letter's top edge
    out = boxed.render_page(0, clip=loc["bbox"], dpi=100)
    assert not out["clip_clamped"] and out["clip"][3] >= loc["bbox"][3]
    assert _dark_share(out["path"]) > 0.005  # the words are in the image


@pytest.mark.parametrize("clip", [[600, 0, 700, 100], [0, 845, 100, 900], [-100, -100, -1, -1]])
def test_a_clip_wholly_off_the_page_is_refused(boxed: SourceResolver, clip: list[float]) -> None:
    with pytest.raises(BookAgentError) as err:
        boxed.render_page(0, clip=clip)
    assert err.value.code == "source.clip_invalid" and err.value.remediation


@pytest.mark.parametrize("page", [2, 3, 4])
def test_a_located_bbox_on_a_rotated_page_renders_its_words(boxed: SourceResolver, page: int) -> None:
    text = str(PAGES[page]["text"])
    loc = boxed.locate(text)
    assert loc["page_index"] == page and loc["verification"]["method"] == "exact"
    out = boxed.render_page(page, clip=loc["bbox"], dpi=100)
    assert _dark_share(out["path"]) > 0.005


def test_an_inherited_rotation_turns_the_render(tmp_path: Path) -> None:
    pdf = write_boxed_pdf(tmp_path / "turned.pdf", [{"text": "one"}, {"text": "two", "rotate": 0}], inherit_rotate=90)
    with _resolver(pdf, tmp_path / "runtime") as resolver:
        inherited, own = resolver.render_page(0, dpi=72), resolver.render_page(1, dpi=72)
    assert inherited["rotation"] == 90 and inherited["width_px"] > inherited["height_px"]
    assert own["rotation"] == 0 and own["width_px"] < own["height_px"]


def test_the_real_a4_book_reports_a4(tmp_path: Path) -> None:
    with _resolver(LSHORT_PDF, tmp_path / "runtime") as resolver:
        out = resolver.render_page(66, dpi=36)
        with pytest.raises(BookAgentError):
            resolver.render_page(66, clip=[596, 0, 612, 792])  # inside US letter, off A4
    assert out["page_size_pt"] == [595.28, 841.89]
    assert abs(out["width_px"] / out["height_px"] - 595.28 / 841.89) < 0.01
