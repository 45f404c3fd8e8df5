"""A real Japanese EPUB with ruby (issue 43): Akutagawa's 蜘蛛の糸 from Aozora Bunko, packaged
by tools/build/aozora_epub.py (vertical writing, <ruby><rb>..</rb><rp>（</rp><rt>..</rt><rp>）</rp>
kept, the Aozora credit page kept; tests/support/data/real_books/kumo-no-ito.LICENSE.md).

The checks a careful reader makes: every record verified exactly with a CFI; quotes of the printed
words (no furigana), across ruby words too, found exactly; every record's CFI resolved by epub.js
to its passage; the contents (一, 二, 三, the credit page) on the records holding their headings;
read_source and locate without furigana in the text.
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from tests.support.epubjs import require_epubjs, resolve
from tests.support.real_books import KUMO_EPUB, build_real_package

BOOK = "kumo-no-ito"
FURIGANA = ("おしゃかさま", "はすいけ", "かんだた", "くも")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BookAgent]:
    root = tmp_path_factory.mktemp("aozora")
    package = build_real_package(root / BOOK, KUMO_EPUB, BOOK, "蜘蛛の糸", "ja")
    with BookAgent(root / "data") as agent:
        agent.init(package)
        yield agent


def _records(agent: BookAgent) -> list[dict[str, object]]:
    count = agent.status(BOOK)["sidecars"]["locators"]["verification"]["records"]
    return [dict(agent.read_entry(BOOK, f"{BOOK}-{i:05d}")) for i in range(count)]


def test_every_record_is_verified_exactly_with_a_cfi(agent: BookAgent) -> None:
    check = agent.status(BOOK)["sidecars"]["locators"]["verification"]
    assert check["records"] >= 20 and check["failed_count"] == 0
    assert check["by_method"]["exact"] == check["records"], check["by_method"]
    assert check["by_cfi"] == {"verified": check["records"]}
    assert not any(word in str(r["text"]) for r in _records(agent) for word in FURIGANA)


def _quotes(text: str) -> Iterator[str]:
    """What a reader copies: 12 to 30 printed characters from every 37th, and each ruby base
    word with the characters around it (the quote spans the ruby word)."""
    for start in range(1, max(2, len(text) - 12), 37):
        quote = text[start : start + 12 + start % 19]
        if len(quote.strip()) >= 4:
            yield quote
    for base in ("御釈迦様は極楽の蓮池", "犍陀多と云う男", "蜘蛛の糸が、急に", "極楽の蓮池のふちに立って"):
        if base in text:
            yield base


def test_quotes_of_the_printed_words_are_found_exactly(agent: BookAgent) -> None:
    methods: Counter[str] = Counter()
    for record in _records(agent):
        for quote in _quotes(str(record["text"])):
            loc = agent.locate_source(BOOK, quote)
            methods[loc["verification"]["method"]] += 1
            read = agent.read_source(BOOK, loc, max_chars=2000)
            assert read["text"][read["span_in_text"]["start"] : read["span_in_text"]["end"]] == quote
    assert sum(methods.values()) >= 100 and set(methods) == {"exact"}, methods
    print(f"quotes found exactly: {methods['exact']} of {sum(methods.values())}")


def test_epubjs_resolves_every_records_cfi_to_its_passage(agent: BookAgent) -> None:
    require_epubjs()
    with zipfile.ZipFile(KUMO_EPUB) as z:
        chapters = {name.removeprefix("OEBPS/"): z.read(name) for name in z.namelist() if name.endswith(".xhtml")}
    records = _records(agent)
    locs = [agent.locate_source(BOOK, {"record_id": r["record_id"]}) for r in records]
    got = resolve([(chapters[str(loc["href"])], str(loc["epub_cfi"])) for loc in locs])
    squash = re.compile(r"\s+")
    same = [squash.sub("", g.get("printed") or "") == squash.sub("", str(r["text"])) for r, g in zip(records, got, strict=True)]
    assert all(loc["verification"]["cfi_epubjs"] is True for loc in locs)  # the locator says so too
    assert all(same), [(r["text"], g) for r, g, ok in zip(records, got, same, strict=True) if not ok][:2]
    print(f"CFIs epub.js resolves: {sum(same)} of {len(same)}")


def test_the_contents_point_at_the_records_holding_their_headings(agent: BookAgent) -> None:
    toc = agent.get_toc(BOOK)
    titles = [e["title"] for e in toc["entries"]]
    assert titles == ["蜘蛛の糸", "一", "二", "三", "底本・クレジット"], titles
    for entry in toc["entries"]:
        record = agent.read_entry(BOOK, str(entry["first_record_id"]))
        assert entry["title"] in (record["headings"] or []) or str(record["text"]).startswith(entry["title"]), (entry, record)


def test_read_source_and_locate_give_the_printed_text(agent: BookAgent) -> None:
    loc = agent.locate_source(BOOK, "御釈迦様は極楽の蓮池のふちを")
    assert loc["verification"]["method"] == "exact" and loc["href"] == "text/main.xhtml"
    read = agent.read_source(BOOK, loc, max_chars=400)
    assert "御釈迦様は極楽の蓮池のふちを" in read["text"] and not any(w in read["text"] for w in FURIGANA)
    by_cfi = agent.read_source(BOOK, {"epub_cfi": loc["epub_cfi"]}, max_chars=400)
    assert by_cfi["text"][by_cfi["span_in_text"]["start"] : by_cfi["span_in_text"]["end"]] == "御釈迦様は極楽の蓮池のふちを"
    credit = agent.locate_source(BOOK, "青空文庫作成ファイル")
    assert credit["href"] == "text/credit.xhtml"  # the credit page is kept, as Aozora Bunko asks


def test_the_epub_is_vertical_and_keeps_ruby() -> None:
    with zipfile.ZipFile(KUMO_EPUB) as z:
        assert z.namelist()[0] == "mimetype" and z.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
        css, opf = z.read("OEBPS/style.css").decode(), z.read("OEBPS/content.opf").decode()
        main = z.read("OEBPS/text/main.xhtml").decode()
    assert "writing-mode: vertical-rl" in css and 'page-progression-direction="rtl"' in opf
    assert main.count("<rt>") > 50 and "<rb>犍陀多</rb>" in main and "gaiji" not in main


def test_the_packager_rebuilds_the_same_epub(tmp_path: Path) -> None:
    """The committed EPUB is what tools/build/aozora_epub.py makes of the Aozora source beside it."""
    from tools.build.aozora_epub import main

    out = tmp_path / "kumo.epub"
    source = KUMO_EPUB.with_name("kumo-no-ito.aozora.html")
    assert main([str(source), str(out), "--encoding", "utf-8"]) == 0
    assert out.read_bytes() == KUMO_EPUB.read_bytes()
