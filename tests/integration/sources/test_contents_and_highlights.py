"""Issue 24, items 4 and 6: highlighted page renders, the table of contents, a record's neighbours.

Real parts: packages built by book-agent-build (adapters/book_agent_adapters/builder/) from four real pages of lshort-zh-cn (the
GFDL's text, tests/support/data/books) and the repository's Art of War EPUB; PDFs with outlines
written by reportlab (one outline item edited to point at no object); the CLI and a FastMCP
client against the real servers (one book and `@all`).
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from book_agent.agent import build_agent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.builder.build import Options, build
from tests.support import REPO_ROOT
from tests.support.cli_support import run_cli
from tests.support.pdf_boxes import _rebuild_xref

PDF = REPO_ROOT / "tests" / "support" / "data" / "books" / "lshort-zh-cn-gfdl-pages.pdf"
EPUB = REPO_ROOT / "examples" / "the-art-of-war" / "the-art-of-war.epub"


def _package(original: Path, out: Path, book_id: str) -> Path:
    """A lexical-only package of `original` at `out`, made by the builder users run (book-agent-build)."""
    build(original, out, Options(book_id=book_id, vectors=False))
    return out


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with `gfdl` (PDF, no outline), `war` (EPUB) and `outlined` (PDF with an outline)."""
    root = tmp_path_factory.mktemp("contents")
    outlined = write_outlined_pdf(root / "outlined.pdf")
    with build_agent(root / "data") as agent:
        for name, original in (("gfdl", PDF), ("war", EPUB), ("outlined", outlined)):
            agent.init(_package(original, root / name, name))
    return root / "data"


def write_outlined_pdf(path: Path) -> Path:
    """Three pages, an outline entry each (the second nested), the third edited to point nowhere."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pageCompression=0, invariant=1)
    for i in range(3):
        c.drawString(72, 700, f"Chapter {i} begins here with words enough to make a record of it.")
        c.bookmarkPage(f"k{i}")
        c.addOutlineEntry(f"Chapter {i}", f"k{i}", level=1 if i == 1 else 0)
        c.showPage()
    c.save()
    pdf = path.read_bytes()
    pdf = pdf.replace(b"/Dest [ 5 0 R /Fit ]", b"/Dest [ 99 0 R /Fit ]")
    path.write_bytes(_rebuild_xref(pdf))
    return path


def first_ids(data: Path, book: str) -> list[str]:
    with build_agent(data) as agent:
        return [entry["first_record_id"] for entry in agent.get_toc(book)["entries"]]


def yellow_share(path: str, box_px: tuple[int, int, int, int]) -> float:
    with Image.open(path) as im:
        region = im.convert("RGB").crop(box_px)
        pixels = np.asarray(region).reshape(-1, 3).astype(int)  # any Pillow (getdata is deprecated in 12)
    r, g, b = pixels[:, 0], pixels[:, 1], pixels[:, 2]
    return float(((r > 200) & (g > 150) & (b < 160)).sum()) / max(1, len(pixels))


# --- highlighted renders -------------------------------------------------------------------
def test_two_records_and_a_quote_are_highlighted_on_one_page_with_their_boxes(books: Path) -> None:
    with build_agent(books) as agent:
        a, b = (agent.locate_source("gfdl", {"record_id": r}) for r in ("p0001-05", "p0001-06"))
        out = agent.render_page("gfdl", record_ids=["p0001-05", "p0001-06"], quotes=["Invariant Sections"])
        plain = agent.render_page("gfdl", 0)
    assert out["page_index"] == 0 == a["page_index"] == b["page_index"]
    assert [h["record_id"] for h in out["highlights"]] == ["p0001-05", "p0001-06", None]
    assert out["highlights"][2]["quote"] == "Invariant Sections" and out["highlights_elsewhere"] == []
    scale, top = out["scale"], out["page_box"][3]
    for mark, loc in zip(out["highlights"][:2], (a, b), strict=True):
        assert (mark["char_start"], mark["char_end"]) == (loc["char_start"], loc["char_end"])
        x0, y0, x1, y1 = loc["bbox"]  # the boxes are the locator's bbox, cut into lines
        assert min(bx[0] for bx in mark["boxes"]) == pytest.approx(x0, abs=0.02)
        assert max(bx[3] for bx in mark["boxes"]) == pytest.approx(y1, abs=0.02)
        assert len(mark["boxes"]) >= 2  # each record runs over several lines
    for mark in out["highlights"]:
        for x0, y0, x1, y1 in mark["boxes"]:
            px = (int(x0 * scale) + 2, int((top - y1) * scale) + 2, int(x1 * scale) - 2, int((top - y0) * scale) - 2)
            assert yellow_share(out["path"], px) > 0.5  # painted where PDFium says the text is
            assert yellow_share(plain["path"], px) < 0.05  # and not in the plain render
    assert out["path"] != plain["path"] and Path(out["path"]).stat().st_size == out["bytes"]
    with Image.open(out["path"]) as im:
        assert im.size == (out["width_px"], out["height_px"]) == (plain["width_px"], plain["height_px"])


def test_a_passage_on_another_page_is_listed_not_painted(books: Path) -> None:
    with build_agent(books) as agent:
        out = agent.render_page("gfdl", 0, record_ids=["p0004-03"])
        own = agent.render_page("gfdl", record_ids=["p0004-03"])  # no page: the passage's own
    assert out["highlights"] == [] and out["highlights_elsewhere"][0]["page_index"] == 3
    assert "nothing_highlighted" in out["notes"] and out["highlight_note"]
    assert own["page_index"] == 3 and own["highlights"][0]["boxes"]


def test_a_page_without_a_text_layer_renders_plain_with_an_honest_note(tmp_path: Path) -> None:
    from reportlab.pdfgen import canvas

    pdf = tmp_path / "scan.pdf"
    c = canvas.Canvas(str(pdf))
    c.drawString(72, 700, "The only page with text on it, long enough for a record of its own here.")
    c.showPage()
    c.rect(72, 200, 300, 300, fill=1)  # a "scan": marks, no text
    c.showPage()
    c.save()
    with build_agent(tmp_path / "data") as agent:
        agent.init(_package(pdf, tmp_path / "pkg", "scan"))
        out = agent.render_page("scan", 1, quotes=["The only page with text on it"])
    assert out["page_index"] == 1 and out["highlights"] == [] and "nothing_highlighted" in out["notes"]


@pytest.mark.parametrize(("book", "kwargs", "code"), [
    ("gfdl", {"record_ids": ["no-such-record"]}, "source.record_not_found"),
    ("gfdl", {"quotes": ["words that this licence never says anywhere at all"]}, "source.quote_not_found"),
    ("gfdl", {"quotes": ["x" * 100_001]}, "source.quote_invalid"),
    ("gfdl", {"quotes": ["Invariant Sections"] * 21}, "source.highlight_invalid"),
    ("gfdl", {"page_index": 9, "quotes": ["Invariant Sections"]}, "source.page_out_of_range"),
    ("war", {"record_ids": ["no-such-record"]}, "source.not_renderable"),
])
def test_bad_highlights_are_coded_errors(books: Path, book: str, kwargs: dict[str, Any], code: str) -> None:
    with build_agent(books) as agent, pytest.raises(BookAgentError) as caught:
        agent.render_page(book, **kwargs)
    assert caught.value.code == code and caught.value.remediation


# --- table of contents ---------------------------------------------------------------------
def test_a_pdf_outline_with_an_entry_pointing_nowhere(books: Path) -> None:
    with build_agent(books) as agent:
        toc = agent.get_toc("outlined")
        records = {r: agent.locate_source("outlined", {"record_id": r})["page_index"]
                   for r in {e["first_record_id"] for e in toc["entries"]} - {None}}
    assert toc["source"] == "pdf-outline"
    assert [(e["level"], e["title"], e["page_index"], e["target"]) for e in toc["entries"]] == [
        (1, "Chapter 0", 0, "page"), (2, "Chapter 1", 1, "page"), (1, "Chapter 2", None, "none")]
    assert [records.get(e["first_record_id"]) for e in toc["entries"][:2]] == [0, 1]
    assert toc["entries"][2]["first_record_id"] is None


def test_a_pdf_without_an_outline_says_so(books: Path) -> None:
    with build_agent(books) as agent:
        toc = agent.get_toc("gfdl")
    assert toc["source"] == "none" and toc["entries"] == [] and "no table of contents" in toc["note"]


def test_an_epub_navigation_leads_to_the_first_record_of_each_chapter(books: Path) -> None:
    with build_agent(books) as agent:
        toc = agent.get_toc("war")
        assert toc["source"] in ("epub-nav", "epub-ncx") and toc["entry_count"] >= 13
        for entry in toc["entries"]:
            assert entry["target"] == "chapter" and entry["first_record_id"]
            loc = agent.locate_source("war", {"record_id": entry["first_record_id"]})
            assert loc["spine_index"] == entry["spine_index"]
            assert loc["verification"]["method"] in ("exact", "normalized")


@pytest.mark.parametrize(("nav", "expected"), [
    (b"<not xml <nav", ("none", [])),  # no nav element at all: no contents
    (b"<html><body><nav><ol><li><a href='missing.xhtml#x'>Lost</a></li></ol></nav>", ("epub-nav", ["Lost"])),
])
def test_a_broken_epub_navigation_is_an_honest_none(tmp_path: Path, nav: bytes, expected: tuple[str, list[str]]) -> None:
    broken = tmp_path / "broken.epub"
    with zipfile.ZipFile(EPUB) as src, zipfile.ZipFile(broken, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, nav if info.filename.endswith("toc.xhtml") else src.read(info))
    with build_agent(tmp_path / "data") as agent:
        agent.init(_package(broken, tmp_path / "pkg", "broken"))
        toc = agent.get_toc("broken")
    assert (toc["source"], [e["title"] for e in toc["entries"]]) == expected
    assert all(e["target"] == "none" and e["first_record_id"] is None for e in toc["entries"])


# --- neighbours ----------------------------------------------------------------------------
def test_read_around_gives_the_records_before_and_after_in_reading_order(books: Path) -> None:
    import sqlite3

    con = sqlite3.connect(f"file:{books.parent / 'war' / 'index.sqlite'}?mode=ro", uri=True)
    order = [r[0] for r in con.execute("SELECT record_id FROM records ORDER BY seq")]
    con.close()
    with build_agent(books) as agent:
        mid = agent.read_around("war", order[10], 3)
        first = agent.read_around("war", order[0], 2)
        last = agent.read_around("war", order[-1], 0)
    assert [n["record_id"] for n in mid["records"]] == order[7:14]
    assert [n["offset"] for n in mid["records"]] == list(range(-3, 4))
    assert all(n["source_locator"]["verification"]["method"] in ("exact", "normalized") for n in mid["records"])
    assert mid["records"][3]["evidence_id"] == f"war#{order[10]}"
    assert (first["before"], first["after"], [n["record_id"] for n in first["records"]]) == (0, 2, order[:3])
    assert (last["before"], last["after"], last["position"]) == (0, 0, len(order) - 1)


@pytest.mark.parametrize(("record_id", "around", "code"), [
    ("no-such-record", 2, "source.record_not_found"), ("p0001-01", -1, "source.around_invalid"),
    ("p0001-01", 51, "source.around_invalid")])
def test_read_around_bad_input(books: Path, record_id: str, around: int, code: str) -> None:
    with build_agent(books) as agent, pytest.raises(BookAgentError) as caught:
        agent.read_around("gfdl", record_id, around)
    assert caught.value.code == code


# --- CLI and MCP ---------------------------------------------------------------------------
def test_cli_toc_read_around_and_highlighted_render(books: Path) -> None:
    data = str(books)
    toc = run_cli("--data-dir", data, "toc", "outlined")
    assert toc.code == 0 and "Chapter 1" in toc.stdout.decode() and "(points nowhere)" in toc.stdout.decode()
    around = run_cli("--data-dir", data, "--json", "read", "gfdl", "--record", "p0002-01", "--around", "1").json
    assert [n["offset"] for n in around["records"]] == [-1, 0, 1]
    render = run_cli("--data-dir", data, "render", "gfdl", "--record", "p0001-06", "--quote", "Invariant Sections")
    assert render.code == 0 and "-hl-" in render.stdout.decode() and "highlighted p0001-06" in render.stdout.decode()
    bad = run_cli("--data-dir", data, "read", "gfdl", "p0001-01", "--record", "p0001-02")
    assert bad.code != 0 and "cli.usage" in bad.stdout.decode() + bad.stderr


def test_mcp_tools_one_book_and_library(books: Path) -> None:
    from fastmcp import Client

    from book_agent.mcp.server import build_server

    async def run() -> tuple[Any, ...]:
        async with Client(build_server("gfdl", data_dir=books)) as one:
            shown = await one.call_tool("render_page", {"record_ids": ["p0001-06"], "include_image": True})
            around = await one.call_tool("read_around", {"record_id": "p0001-06", "around": 1})
        async with Client(build_server("@all", data_dir=books)) as lib:
            toc = await lib.call_tool("get_toc", {"book_id": "outlined"})
            bad = await lib.call_tool("read_around", {"book_id": "gfdl", "record_id": "x"}, raise_on_error=False)
        return shown, around, toc, bad

    shown, around, toc, bad = asyncio.run(run())
    assert shown.structured_content["highlights"][0]["boxes"] and shown.content[1].mime_type == "image/png"
    assert [n["offset"] for n in around.structured_content["records"]] == [-1, 0, 1]
    assert toc.structured_content["entries"][2]["target"] == "none"
    assert bad.is_error and json.loads(bad.content[0].text)["error"]["code"] == "source.record_not_found"

