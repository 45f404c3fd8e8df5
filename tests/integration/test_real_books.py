"""Real books nobody here wrote, packaged the way an upstream pipeline would
(tests/support/real_books.py): a Chinese A4 XeLaTeX PDF with page labels, a Standard Ebooks
EPUB (no-break spaces, word joiners, few ids), The Art of War EPUB. Every record verifies
against the original, every search hit (one book, library, CLI, MCP) carries a verified
locator and its printed page label, and quotes a reader copies locate exactly or normalised."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pypdfium2
import pytest
from fastmcp import Client

from book_agent.agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.text_match import normalize_key
from book_agent.mcp.server import build_server
from tests.support.cfi_resolver import epub_resolver
from tests.support.cli_support import run_cli
from tests.support.real_books import LSHORT_PDF, REAL_BOOKS, real_package

PDF_BOOK, EPUB_BOOK = "lshort-zh-cn", "devils-dictionary"
VERIFIED = {"exact", "normalized", "fuzzy"}
QUERIES = {PDF_BOOK: ["数学公式", "表格 tabular", "Comprehensive TeX Archive Network", "宏包 hyperref"],
           EPUB_BOOK: ["lawyer", "a person who talks when you wish him to listen", "marriage", "politics"],
           "art-of-war-real": ["spies", "知己知彼", "the art of war is of vital importance"]}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, BookAgent]]:
    packages, data = tmp_path_factory.mktemp("real-packages"), tmp_path_factory.mktemp("real-data")
    with BookAgent(data) as agent:
        for name in REAL_BOOKS:
            agent.init(real_package(packages, name))
        yield data, agent


@pytest.fixture(scope="module")
def pdf_labels() -> list[str]:
    doc = pypdfium2.PdfDocument(str(LSHORT_PDF))
    try:
        return [doc.get_page_label(i) for i in range(len(doc))]
    finally:
        doc.close()


@pytest.mark.parametrize("book", list(REAL_BOOKS))
def test_init_verifies_every_record_exactly_or_normalised(library: tuple[Path, BookAgent], book: str) -> None:
    state = library[1].status(book)["sidecars"]["locators"]
    assert state["present"] and state["fresh"]
    check = state["verification"]
    assert check["records"] > 100 and check["failed_count"] == 0 and check["failed"] == []
    assert check["by_method"]["exact"] + check["by_method"]["normalized"] == check["records"]
    assert check["seconds_per_1000_records"] > 0
    if REAL_BOOKS[book][0].suffix == ".epub":  # every EPUB record has a CFI that resolved back to it
        assert check["by_cfi"] == {"verified": check["records"]}


def test_the_pipelines_wrong_offsets_are_corrected(library: tuple[Path, BookAgent]) -> None:
    check = library[1].status(PDF_BOOK)["sidecars"]["locators"]["verification"]
    assert check["corrected"] > check["records"] // 2  # its offsets are into its own cleaned text


def _assert_verified(agent: BookAgent, book: str, hit: dict[str, Any], labels: list[str]) -> None:
    loc = hit["source_locator"]
    assert loc["verification"]["method"] in VERIFIED and loc["book_id"] == book and loc["record_id"] == hit["record_id"]
    if loc["kind"] == "pdf":
        assert loc["page_label"] == labels[loc["page_index"]] and loc["bbox"]
    read = agent.read_source(book, loc, max_chars=200_000)
    located = read["text"][read["span_in_text"]["start"] : read["span_in_text"]["end"]]
    assert normalize_key(located) == normalize_key(hit["text"])  # the offsets are the passage's
    if loc["kind"] == "epub":
        _assert_cfi_resolves(book, loc, located)


def _assert_cfi_resolves(book: str, loc: dict[str, Any], located: str) -> None:
    """The locator's CFI, resolved by the tests' own resolver in the original's XML, is the passage."""
    assert loc["verification"]["cfi"] == "verified"
    resolver = epub_resolver(str(REAL_BOOKS[book][0]), loc["href"])
    squash = re.compile(r"\s+")
    assert squash.sub("", resolver.text(loc["epub_cfi"])) == squash.sub("", located)
    assert resolver.following(loc["epub_cfi_start"]).lstrip().startswith(located[:1])


@pytest.mark.parametrize("book", list(REAL_BOOKS))
def test_every_search_hit_carries_a_verified_locator(library: tuple[Path, BookAgent], book: str,
                                                     pdf_labels: list[str]) -> None:
    agent = library[1]
    for query in QUERIES[book]:
        hits = agent.search(book, query, top_k=5)["hits"]
        assert hits, query
        for hit in hits:
            _assert_verified(agent, book, hit, pdf_labels)


@pytest.mark.parametrize("book", [EPUB_BOOK, "art-of-war-real"])
def test_cli_and_mcp_hits_carry_cfis_a_reader_resolves(library: tuple[Path, BookAgent], book: str) -> None:
    query = QUERIES[book][0]
    cli = run_cli("--data-dir", str(library[0]), "--json", "search", book, query)
    assert cli.code == 0 and cli.json["hits"]

    async def run() -> Any:
        async with Client(build_server(book, data_dir=library[0])) as client:
            found = await client.call_tool("search", {"query": query, "top_k": 5})
            first = found.structured_content["hits"][0]
            located = await client.call_tool("locate_source", {"hit": {"record_id": first["record_id"]}})
            return found, located

    found, located = asyncio.run(run())
    agent = library[1]
    for hit in [*cli.json["hits"], *found.structured_content["hits"]]:
        _assert_verified(agent, book, hit, [])
        assert hit["source_locator"]["epub_cfi"].startswith("epubcfi(/6/")
    assert located.structured_content["epub_cfi"] == found.structured_content["hits"][0]["source_locator"]["epub_cfi"]


def test_library_hits_carry_their_books_verified_locators(library: tuple[Path, BookAgent], pdf_labels: list[str]) -> None:
    agent = library[1]
    result = agent.search("@all", "tabular 表格 lawyer spies", top_k=20)
    books = {hit["book_id"] for hit in result["hits"]}
    assert len(books) >= 2
    for hit in result["hits"]:
        _assert_verified(agent, hit["book_id"], hit, pdf_labels)


def _reader_copies(page_text: str) -> Iterator[tuple[str, str]]:
    """Quotes around each U+FFFE of a page as readers copy them: (how, quote)."""
    for found in re.finditer("\ufffe", page_text):
        window = page_text[max(0, found.start() - 40) : found.end() + 40]
        flat = re.sub(r"\s+", " ", window).strip()
        yield "verbatim", window
        yield "joined", flat.replace("\ufffe", "")  # a viewer that joins the hyphenated word
        yield "hyphen", flat.replace("\ufffe", "-")
        yield "hyphen-newline", flat.replace("\ufffe", "-\n")


def test_quotes_across_pdfiums_line_end_hyphens_locate_on_their_page(library: tuple[Path, BookAgent]) -> None:
    agent = library[1]
    doc = pypdfium2.PdfDocument(str(LSHORT_PDF))
    methods: Counter[str] = Counter()
    try:
        for index in (6, 38, 127, 130):
            page = doc[index]
            textpage = page.get_textpage()
            text = textpage.get_text_range()
            textpage.close()
            page.close()
            for how, quote in _reader_copies(text):
                loc = agent.locate_source(PDF_BOOK, quote)
                methods[loc["verification"]["method"]] += 1
                assert loc["page_index"] == index and loc["verification"]["method"] in ("exact", "normalized"), how
                assert loc["verification"]["method"] == "exact" or how != "verbatim"
    finally:
        doc.close()
    assert methods["normalized"] >= 12 and methods["fuzzy"] == 0


@pytest.mark.parametrize("book", [PDF_BOOK, EPUB_BOOK])
def test_quotes_from_sixty_records_locate_exactly_or_normalised(library: tuple[Path, BookAgent], book: str) -> None:
    """The middle of a record's text, as a pipeline extracted it (no-break spaces and word
    joiners folded, hyphenated words joined, lines joined): what a reader pastes."""
    agent = library[1]
    count = agent.status(book)["sidecars"]["locators"]["verification"]["records"]
    methods: Counter[str] = Counter()
    for index in range(0, count, max(1, count // 60)):
        text = agent.read_entry(book, f"{book}-{index:05d}")["text"]
        words = text.split(" ")
        if len(words) < 8 and len(text) < 40:
            continue
        quote = " ".join(words[len(words) // 4 : 3 * len(words) // 4]) if len(words) >= 8 else text[5:-5]
        methods[agent.locate_source(book, quote)["verification"]["method"]] += 1
    assert sum(methods.values()) >= 20 and set(methods) <= {"exact", "normalized"}, methods


def test_a_page_is_found_by_its_printed_label(library: tuple[Path, BookAgent]) -> None:
    agent = library[1]
    render = agent.render_page(PDF_BOOK, page_label="55", dpi=18)
    assert render["page_index"] == 66 and render["page_label"] == "55"
    assert agent.render_page(PDF_BOOK, page_label="IV", dpi=18)["page_index"] == 5  # "iv", case aside
    read = agent.read_source(PDF_BOOK, {"page_label": "55"})
    assert read["page_index"] == 66 and read["page_label"] == "55" and read["text"]
    assert agent.render_page(PDF_BOOK, 66, page_label="55", dpi=18)["page_index"] == 66


@pytest.mark.parametrize(("label", "code", "nearest"), [
    ("999", "source.page_label_unknown", "127"), ("56a", "source.page_label_unknown", None),
    ("", "source.page_label_invalid", None), ("x" * 65, "source.page_label_invalid", None)])
def test_an_unknown_label_lists_the_nearest(library: tuple[Path, BookAgent], label: str, code: str,
                                            nearest: str | None) -> None:
    with pytest.raises(BookAgentError) as err:
        library[1].render_page(PDF_BOOK, page_label=label)
    assert err.value.code == code and err.value.remediation
    if code == "source.page_label_unknown":
        listed = [n["page_label"] for n in err.value.details["nearest"]]
        assert listed and (nearest is None or nearest in listed)


def test_labels_that_name_no_page_of_this_book_are_refused(library: tuple[Path, BookAgent]) -> None:
    agent = library[1]
    with pytest.raises(BookAgentError) as err:
        agent.render_page(PDF_BOOK, 0, page_label="55")
    assert err.value.code == "source.locator_invalid" and err.value.details["labelled"] == [66]
    with pytest.raises(BookAgentError) as err:
        agent.read_source(EPUB_BOOK, {"page_label": "55"})
    assert err.value.code == "source.locator_invalid"


def test_the_cli_takes_a_page_label(library: tuple[Path, BookAgent]) -> None:
    data = str(library[0])
    render = run_cli("--data-dir", data, "--json", "render", PDF_BOOK, "--page-label", "55", "--dpi", "18")
    assert render.code == 0 and render.json["page_index"] == 66
    source = run_cli("--data-dir", data, "--json", "source", PDF_BOOK, "--page-label", "iv")
    assert source.code == 0 and source.json["page_index"] == 5
    unknown = run_cli("--data-dir", data, "--json", "render", PDF_BOOK, "--page-label", "1000")
    assert unknown.code != 0 and unknown.error_code == "source.page_label_unknown"
    neither = run_cli("--data-dir", data, "--json", "render", PDF_BOOK)
    assert neither.code != 0 and neither.error_code == "cli.usage"
    hits = run_cli("--data-dir", data, "--json", "search", PDF_BOOK, "数学公式")
    assert {h["source_locator"]["verification"]["method"] for h in hits.json["hits"]} <= VERIFIED


def test_mcp_search_and_render_page_by_label(library: tuple[Path, BookAgent]) -> None:
    async def run() -> tuple[Any, Any, Any]:
        async with Client(build_server(PDF_BOOK, data_dir=library[0])) as client:
            found = await client.call_tool("search", {"query": "数学公式", "top_k": 3})
            page = await client.call_tool("render_page", {"page_label": "55", "dpi": 18})
            bad = await client.call_tool("render_page", {"page_label": "999"}, raise_on_error=False)
            return found, page, bad

    found, page, bad = asyncio.run(run())
    assert all(h["source_locator"]["verification"]["method"] in VERIFIED for h in found.structured_content["hits"])
    assert page.structured_content["page_index"] == 66
    assert bad.is_error and "source.page_label_unknown" in bad.content[0].text


def test_mcp_library_search_hits_are_verified(library: tuple[Path, BookAgent]) -> None:
    async def run() -> Any:
        async with Client(build_server("@all", data_dir=library[0])) as client:
            return await client.call_tool("search", {"query": "lawyer tabular", "top_k": 6})

    hits = asyncio.run(run()).structured_content["hits"]
    assert hits and all(h["source_locator"]["verification"]["method"] in VERIFIED for h in hits)
    assert all(h["source_locator"]["book_id"] == h["book_id"] for h in hits)


def test_bad_input_on_a_real_book_is_a_coded_error(library: tuple[Path, BookAgent]) -> None:
    agent = library[1]
    with pytest.raises(BookAgentError) as err:
        agent.locate_source(PDF_BOOK, {"record_id": "no-such-record"})
    assert err.value.code == "source.record_not_found"
    with pytest.raises(BookAgentError) as err:
        agent.locate_source(PDF_BOOK, "这句话不在书里" * 14_000)  # 98,000 characters, not in the book
    assert err.value.code == "source.quote_not_found"
    with pytest.raises(BookAgentError) as err:
        agent.locate_source(PDF_BOOK, "x" * 100_001)
    assert err.value.code == "source.quote_invalid"


def test_a_readers_cfi_reads_the_passage_back(library: tuple[Path, BookAgent]) -> None:
    """A CFI a reader app hands over (the range, or its start) opens the same passage."""
    agent = library[1]
    for book in (EPUB_BOOK, "art-of-war-real"):
        for hit in agent.search(book, QUERIES[book][-1], top_k=5)["hits"]:
            loc = hit["source_locator"]
            read = agent.read_source(book, {"epub_cfi": loc["epub_cfi"]})
            assert (read["href"], read["char_start"], read["char_end"]) == (loc["href"], loc["char_start"], loc["char_end"])
            point = agent.read_source(book, {"epub_cfi": loc["epub_cfi_start"]})
            assert point["char_start"] == point["char_end"] == loc["char_start"]
    cli = run_cli("--data-dir", str(library[0]), "--json", "source", "art-of-war-real", "--cfi", loc["epub_cfi"])
    assert cli.code == 0 and cli.json["char_start"] == loc["char_start"]


@pytest.mark.parametrize(("cfi", "code"), [
    ("epubcfi(/6/9999!/4/2/1:0)", "source.cfi_not_found"),  # no such itemref
    ("epubcfi(/6/10!/4/2/1:0,/1:5", "source.cfi_invalid"),  # not closed
    ("epubcfi(/6/10!/4/998/1:0)", "source.cfi_not_found"),  # no such element
    ("epubcfi(/6/10!/4/2[no-such-id]/1:0)", "source.cfi_not_found"),  # the element's id differs
    ("epubcfi(/6/10!/4/2[a]/1:99999)", "source.cfi_not_found"),  # past the text
    ("epubcfi(/6/10!/4/2[a]/4/1:0,/1:0,/1:0)", "source.cfi_invalid"),  # a range's parent with an offset
    ("epubcfi(/6/10!/4/2[a]/1~3.5)", "source.cfi_invalid"),  # a temporal offset
    (42, "source.cfi_invalid"),
])
def test_a_cfi_that_names_nothing_is_a_coded_error(library: tuple[Path, BookAgent], cfi: Any, code: str) -> None:
    with pytest.raises(BookAgentError) as err:
        library[1].read_source(EPUB_BOOK, {"epub_cfi": cfi})
    assert err.value.code == code and err.value.remediation


def test_mcp_read_source_takes_a_cfi(library: tuple[Path, BookAgent]) -> None:
    loc = library[1].search(EPUB_BOOK, "lawyer", top_k=1)["hits"][0]["source_locator"]

    async def run() -> tuple[Any, Any]:
        async with Client(build_server(EPUB_BOOK, data_dir=library[0])) as client:
            good = await client.call_tool("read_source", {"locator": {"epub_cfi": loc["epub_cfi"]}})
            bad = await client.call_tool("read_source", {"locator": {"epub_cfi": "epubcfi(/6/9999!/4/1:0)"}},
                                         raise_on_error=False)
            return good, bad

    good, bad = asyncio.run(run())
    assert good.structured_content["char_start"] == loc["char_start"]
    assert bad.is_error and "source.cfi_not_found" in bad.content[0].text


def test_the_page_image_hint_never_asks_an_epub_for_a_render(library: tuple[Path, BookAgent]) -> None:
    data = str(library[0])
    epub = run_cli("--data-dir", data, "--json", "search", EPUB_BOOK, "a table of figures for the lawyer")
    advice = epub.json["visual_fallback"]
    assert advice["reasons"] and not advice["recommended"] and advice["action"] == "read_source"
    human = run_cli("--data-dir", data, "search", EPUB_BOOK, "a table of figures for the lawyer")
    shown = " ".join(human.stdout.decode().split())  # as wrapped by the terminal width
    assert "no fixed pages" in shown and "book-agent render" not in shown
    pdf = run_cli("--data-dir", data, "search", PDF_BOOK, "表格 tabular")
    assert "book-agent render" in " ".join(pdf.stdout.decode().split())
