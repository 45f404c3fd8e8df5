"""render_page: real PDFium renders of generated PDFs, clips, limits, cache, atomic files."""

from __future__ import annotations

import base64
import math
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.sources.pdf.page_render import plan_clip
from book_agent_adapters.sources.pdf.reader import PageBox
from book_agent_adapters.sources.resolver import SourceResolver
from tests.support.package_builder import BLANK_PAGE
from tests.support.sources_support import package_info

FIGURE_PAGE = 2  # package_builder draws a box with a diagonal at (72, 200)-(372, 350)


@pytest.fixture
def resolver(pdf_package: Path, tmp_path: Path) -> Iterator[SourceResolver]:
    with SourceResolver(package_info(pdf_package), tmp_path / "runtime") as r:
        yield r


def _dark_share(path: str, box: tuple[int, int, int, int] | None = None) -> float:
    with Image.open(path) as im:
        gray = im.convert("L")
        if box:
            gray = gray.crop(box)
        hist = gray.histogram()
    return sum(hist[:128]) / max(1, sum(hist))


def test_full_page_render_at_150_dpi(resolver: SourceResolver, tmp_path: Path) -> None:
    out = resolver.render_page(0)
    assert out["path"].startswith(str(tmp_path / "runtime" / "renders"))
    assert (out["width_px"], out["height_px"]) == (math.ceil(612 * 150 / 72), math.ceil(792 * 150 / 72))
    with Image.open(out["path"]) as im:
        assert im.format == "PNG" and im.size == (out["width_px"], out["height_px"])
    assert out["page_size_pt"] == [612.0, 792.0] and out["host_image_support"] == "unknown"
    assert not out["cached"] and "image_base64" not in out
    assert 0 < _dark_share(out["path"]) < 0.2  # there is text on it


def test_second_render_is_cached_and_image_bytes_on_request(resolver: SourceResolver) -> None:
    first = resolver.render_page(1, dpi=72)
    again = resolver.render_page(1, dpi=72, include_image=True)
    assert again["cached"] and again["path"] == first["path"]
    assert base64.b64decode(again["image_base64"]) == Path(first["path"]).read_bytes()
    assert resolver.render_page(1, dpi=96)["path"] != first["path"]


def test_figure_clip_shows_the_figure_and_blank_page_is_white(resolver: SourceResolver) -> None:
    fig = resolver.render_page(FIGURE_PAGE, clip=[60, 190, 390, 360], dpi=100)
    assert fig["clip"] == [60.0, 190.0, 390.0, 360.0] and not fig["clip_widened"]
    assert fig["width_px"] == math.ceil(330 * 100 / 72) or abs(fig["width_px"] - 330 * 100 / 72) < 2
    assert _dark_share(fig["path"]) > 0.005  # the box outline and the arrow
    blank = resolver.render_page(BLANK_PAGE, dpi=36)
    assert _dark_share(blank["path"]) == 0.0


def test_narrow_clip_is_widened_and_overhang_clamped(resolver: SourceResolver) -> None:
    out = resolver.render_page(0, clip=[300, 700, 310, 705])
    x0, y0, x1, y1 = out["clip"]
    assert out["clip_widened"] and x1 - x0 == 200 and y1 - y0 == 100
    assert x0 <= 300 and x1 >= 310 and y0 <= 700 and y1 >= 705
    edge = resolver.render_page(0, clip=[500, 700, 700, 900])
    assert edge["clip_clamped"] and edge["clip"][2] == 612 and edge["clip"][3] == 792


def test_plan_clip_keeps_widened_clips_inside_the_page() -> None:
    box = PageBox(0, 0, 612, 792, 0)
    clip, notes = plan_clip(box, [0, 0, 5, 5])
    assert clip == [0.0, 0.0, 200.0, 100.0] and notes == ["clip_widened"]


def test_pixel_cap_scales_down(resolver: SourceResolver) -> None:
    out = resolver.render_page(0, dpi=600, max_pixels=200_000)
    assert out["scaled_down"] and out["width_px"] * out["height_px"] <= 200_000
    assert out["dpi"] < 600 and out["requested_scale"] == pytest.approx(600 / 72)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"page_index": -1}, "source.page_out_of_range"),
        ({"page_index": 6}, "source.page_out_of_range"),
        ({"page_index": "1"}, "source.page_out_of_range"),
        ({"page_index": 0, "clip": [300, 700, 100, 720]}, "source.clip_invalid"),
        ({"page_index": 0, "clip": [700, 800, 900, 900]}, "source.clip_invalid"),
        ({"page_index": 0, "clip": [1, 2, 3]}, "source.clip_invalid"),
        ({"page_index": 0, "clip": [0, 0, float("nan"), 10]}, "source.clip_invalid"),
        ({"page_index": 0, "dpi": 0}, "source.render_option_invalid"),
        ({"page_index": 0, "dpi": 100_000}, "source.render_option_invalid"),
        ({"page_index": 0, "scale": -2}, "source.render_option_invalid"),
    ],
)
def test_bad_render_input_is_a_clear_error(resolver: SourceResolver, kwargs: dict[str, object], code: str) -> None:
    with pytest.raises(BookAgentError) as bad:
        resolver.render_page(**kwargs)  # type: ignore[arg-type]
    assert bad.value.code == code and bad.value.remediation


def test_concurrent_renders_never_see_half_a_file(resolver: SourceResolver) -> None:
    paths: list[str] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            out = resolver.render_page(3, dpi=100)
            with Image.open(out["path"]) as im:
                im.load()
            paths.append(out["path"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(paths)) == 1
    assert not [p for p in Path(paths[0]).parent.iterdir() if p.name.endswith(".tmp")]


def test_rotated_page_clip_is_rendered_in_display_orientation(tmp_path: Path) -> None:
    import pypdfium2
    from reportlab.pdfgen import canvas

    from tests.support.package_builder import build_package

    root = build_package(tmp_path / "pkg", kind="pdf")
    pdf_path = root / "original" / "book.pdf"
    c = canvas.Canvas(str(pdf_path), pagesize=(612, 792))
    c.rect(100, 600, 100, 100, fill=1)  # a black square in user space, left half of the clip
    c.showPage()
    c.save()
    doc = pypdfium2.PdfDocument(str(pdf_path))
    page = doc[0]
    page.set_rotation(90)  # /Rotate 90: shown turned clockwise
    page.close()
    doc.save(str(tmp_path / "rotated.pdf"))
    doc.close()
    pdf_path.write_bytes((tmp_path / "rotated.pdf").read_bytes())
    with SourceResolver(package_info(root), tmp_path / "rt") as r:
        full = r.render_page(0, dpi=72)
        clip = r.render_page(0, clip=[100, 600, 300, 700], dpi=72)
    assert (full["width_px"], full["height_px"]) == (792, 612) and full["rotation"] == 90
    assert (clip["width_px"], clip["height_px"]) == (100, 200)  # a 200 x 100 pt clip, turned
    # turned clockwise, the clip's left half (the square) is now its top half
    assert _dark_share(clip["path"], (0, 0, 100, 100)) > 0.95
    assert _dark_share(clip["path"], (0, 100, 100, 200)) < 0.05


def test_corrupt_pdf_is_a_clear_error(pdf_package: Path, tmp_path: Path) -> None:
    (pdf_package / "original" / "book.pdf").write_bytes(b"\x00" * 64)
    with SourceResolver(package_info(pdf_package), tmp_path / "rt") as r, pytest.raises(BookAgentError) as bad:
        r.render_page(0)
    assert bad.value.code == "source.original_corrupt"
