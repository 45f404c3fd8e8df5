"""Issue 43, item 1: ruby (furigana) stays out of an EPUB's text everywhere it is read.

Real parts: EPUBs written by the test (tests/support/epub_originals.py) whose chapters carry
ruby in every form books use (<rt> alone, with <rp> parentheses, <rb> bases, a second <rtc>
row, nested ruby, ruby inside links and headings), packages around them, init, locate,
read_source and toc through the BookAgent; CFIs resolved by the tests' own DOM resolver.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent.domain.sources.epub_cfi import CfiStep, parse_cfi
from book_agent_adapters.sources.epub.cfi import ChapterCfi, span_cfi
from book_agent_adapters.sources.epub.chapter_text import extract_chapter
from tests.support.cfi_resolver import Resolver
from tests.support.epub_originals import chapter_document, epub_package
from tests.support.package_builder import RecordSpec

PACKAGE_STEPS = (CfiStep(6), CfiStep(4, "ch1ref"))
RUBY_FORMS = {
    # printed text: the markup that prints it
    "山路を登りながら、こう考えた。": "<ruby>山路<rt>やまみち</rt></ruby>を登りながら、こう考えた。",
    "智に働けば角が立つ。": "<ruby>智<rp>(</rp><rt>ち</rt><rp>)</rp></ruby>に<ruby>働<rp>（</rp><rt>はたら</rt><rp>）</rp></ruby>けば<ruby>角<rt>かど</rt></ruby>が立つ。",
    "情に棹させば流される。": "<ruby><rb>情</rb><rt>じょう</rt></ruby>に<ruby><rb>棹</rb><rb>さ</rb><rt>さお</rt><rt></rt></ruby>せば流される。",
    "東京は大きな都市である。": "<ruby>東京<rtc><rt>とうきょう</rt></rtc><rtc><rt>Tokyo</rt></rtc></ruby>は大きな都市である。",
    "兎角に人の世は住みにくい。": "<ruby><ruby>兎<rt>と</rt></ruby><ruby>角<rt>かく</rt></ruby><rt>とかく</rt></ruby>に人の世は住みにくい。",
    "意地を通せば窮屈だ。": '<a href="#n1"><ruby>意地<rt>いじ</rt></ruby></a>を<em><ruby>通<rt>とお</rt></ruby></em>せば<ruby>窮屈<rt>きゅうくつ</rt></ruby>だ。',
}
HEADING = "<h2 id=\"h\"><ruby>草枕<rt>くさまくら</rt></ruby></h2>"


def _body() -> str:
    paras = "\n".join(f'<p id="p-r{i:04d}">{markup}</p>' for i, markup in enumerate(RUBY_FORMS.values(), start=1))
    return f"{HEADING}\n{paras}"


@pytest.fixture(scope="module")
def ruby_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ruby")
    records = [RecordSpec(f"r{i:04d}", text, ["草枕"], 0) for i, text in enumerate(RUBY_FORMS, start=1)]
    package = epub_package(root / "pkg", records, [_body()],
                           nav_titles=["<ruby>草<rt>くさ</rt></ruby><ruby>枕<rp>(</rp><rt>まくら</rt><rp>)</rp></ruby> <em>一</em>"])
    with BookAgent(root / "data") as agent:
        agent.init(package)
    return root / "data"


def test_the_chapter_text_is_the_printed_text() -> None:
    text, fragments, _ = extract_chapter(chapter_document(_body()))
    assert text.split("\n") == ["草枕", *RUBY_FORMS]
    assert not re.search("[(（）)]|やまみち|はたら|Tokyo|とかく|くさまくら", text)
    assert text[fragments["p-r0002"]:].startswith("智に働けば")  # offsets count only the printed text


def test_every_record_is_found_exactly_and_its_cfi_resolves_to_it(ruby_book: Path) -> None:
    with BookAgent(ruby_book) as agent:
        status = agent.status("test-book")["sidecars"]["locators"]["verification"]
        assert status["failed_count"] == 0
        for i, printed in enumerate(RUBY_FORMS, start=1):
            loc = agent.locate_source("test-book", {"record_id": f"r{i:04d}"})
            assert loc["verification"]["method"] == "exact", (printed, loc["verification"])
            shown = agent.read_source("test-book", loc)
            span = shown["span_in_text"]
            assert span is not None and shown["text"][span["start"]:span["end"]] == printed
            assert loc["verification"]["cfi"] == "verified" and loc["epub_cfi"]


@pytest.mark.parametrize("quote", ["山路を登り", "働けば角が", "棹させば", "兎角に人", "意地を通せば窮屈"])
def test_a_quote_spanning_a_ruby_word_is_found_exactly(ruby_book: Path, quote: str) -> None:
    with BookAgent(ruby_book) as agent:
        loc = agent.locate_source("test-book", quote)
        shown = agent.read_source("test-book", loc)
    assert loc["verification"]["method"] == "exact"
    assert shown["text"][loc["char_start"]:loc["char_end"]] == quote


def test_the_contents_title_leaves_the_ruby_out(ruby_book: Path) -> None:
    with BookAgent(ruby_book) as agent:
        toc = agent.get_toc("test-book")
    assert [e["title"] for e in toc["entries"]] == ["草枕 一"]


def test_cfis_around_ruby_resolve_to_the_printed_words() -> None:
    data = chapter_document(_body())
    text, _, _ = extract_chapter(data)
    chapter = ChapterCfi.build(data, text)
    resolver = Resolver(data, printed_only=True)
    for printed in RUBY_FORMS:
        start = text.index(printed)
        for a, b in ((start, start + len(printed)), (start + 1, start + len(printed) - 1), (start, start + 2)):
            out = span_cfi(chapter, PACKAGE_STEPS, text, a, b)
            assert out["cfi"] == "verified", (printed, out)
            assert resolver.text(out["epub_cfi"]) == text[a:b]
            assert chapter.offset_of(parse_cfi(out["epub_cfi"]).start, after=False) == a
