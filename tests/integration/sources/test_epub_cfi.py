"""EPUB CFIs: every span of a chapter's text gets a CFI that a reader's DOM resolves back to
exactly that text. Resolved by the tests' own resolver (tests/support/cfi_resolver.py: minidom,
its own syntax reading), over generated XHTML (nested blocks and inline elements, text split
across them, entities, CDATA, comments, whitespace, astral characters, ids or none) and random
spans; the CFI syntax (writing, reading, malformed input) and the package steps."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.epub_cfi import (
    CfiPoint,
    CfiStep,
    format_point,
    format_range,
    parse_cfi,
)
from book_agent_adapters.sources.epub.cfi import ChapterCfi, package_steps, span_cfi
from book_agent_adapters.sources.epub.chapter_text import extract_chapter_text
from book_agent_adapters.sources.epub.reader import EpubSource
from tests.support.cfi_resolver import Resolver

XHTML = "http://www.w3.org/1999/xhtml"
PACKAGE = (CfiStep(6), CfiStep(4, "ch1ref"))

# text pieces: words, entities, astral and CJK characters, no-break spaces, markup whitespace
_WORDS = st.sampled_from(["war", "Sun", "Tzu", "知己知彼", "naïve", "😀", "x", "42", "—", "’s", "a-b"])
_ENTITIES = st.sampled_from(["&amp;", "&lt;", "&gt;", "&#160;", "&#x1F600;", "&quot;", "&#x2060;"])
_SPACES = st.sampled_from([" ", "  ", "\n\t\t", "\n", " \n  "])
_piece = st.one_of(_WORDS, _ENTITIES, _SPACES, st.just("<!-- a comment -->"), st.just("<![CDATA[5 < 6 & 7]]>"))
_text = st.lists(_piece, min_size=0, max_size=6).map("".join)
_id = st.one_of(st.none(), st.from_regex(r"[a-z][a-z0-9_-]{0,6}", fullmatch=True))


def _attrs(ident: str | None) -> str:
    return f' id="{ident}"' if ident else ""


@st.composite
def _inline(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(["em", "span", "a", "b", "i", "sup", "ruby"]))
    if tag == "ruby":  # furigana: the annotation is not in the chapter text, nor in what the CFI must hold
        rp = draw(st.booleans())
        note = f"<rp>(</rp><rt>{draw(_text)}</rt><rp>)</rp>" if rp else f"<rt{_attrs(draw(_id))}>{draw(_text)}</rt>"
        return f"<ruby>{draw(_text)}w{note}</ruby>"
    inner = draw(_inline(depth + 1)) if draw(st.booleans()) and depth < 2 else ""
    if draw(st.integers(0, 5)) == 0:
        return f"<{tag}{_attrs(draw(_id))}/>"  # an empty element (a page break, an anchor)
    return f"<{tag}{_attrs(draw(_id))}>{draw(_text)}{inner}{draw(_text)}</{tag}>"


@st.composite
def _block(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(["p", "div", "section", "h2", "blockquote", "ul", "pre"]))
    ident = draw(_id)
    if tag == "ul":
        items = draw(st.lists(_text, min_size=1, max_size=3))
        return f"<ul{_attrs(ident)}>" + "".join(f"<li>{t}w</li>" for t in items) + "</ul>"
    if tag == "pre":
        return f"<pre{_attrs(ident)}>\n{draw(_text)}code  line\n  {draw(_text)}</pre>"
    if tag in ("div", "section", "blockquote") and depth < 2 and draw(st.booleans()):
        inner = draw(st.lists(_block(depth + 1), min_size=1, max_size=3))
        return f"<{tag}{_attrs(ident)}>{draw(_spaces_or_text)}" + draw(_spaces).join(inner) + f"</{tag}>"
    parts = draw(st.lists(st.one_of(_text, _inline()), min_size=1, max_size=5))
    return f"<{tag}{_attrs(ident)}>" + "".join(parts) + "word</" + tag + ">"


_spaces = _SPACES
_spaces_or_text = st.one_of(_SPACES, _text)


@st.composite
def _chapter(draw: st.DrawFn) -> bytes:
    blocks = draw(st.lists(_block(), min_size=1, max_size=5))
    body_id = draw(_id)
    doc = (f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="{XHTML}">\n<head><title>t</title>'
           f'<style>p {{ margin: 0 }}</style></head>\n<body{_attrs(body_id)}>\n\t'
           + "\n\t".join(blocks) + "\n</body>\n</html>\n")
    if draw(st.integers(0, 4)):  # CDATA (which an HTML parser drops) in one chapter of five
        doc = doc.replace("<![CDATA[5 < 6 & 7]]>", "5 &lt; 6 &amp; 7")
    return doc.encode("utf-8")


def _span(text: str, a: int, b: int) -> tuple[int, int] | None:
    """[a, b) shrunk to start and end on characters that are not whitespace."""
    a, b = min(a, b), max(a, b) + 1
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return (a, b) if a < b else None


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chapter(), st.data())
def test_every_span_resolves_back_to_its_text(data: bytes, pick: st.DataObject) -> None:
    text, _ = extract_chapter_text(data)
    if not text.strip():
        return
    chapter = ChapterCfi.build(data, text)
    resolver = Resolver(data, printed_only=True)
    for _ in range(4):
        a = pick.draw(st.integers(0, len(text) - 1))
        b = pick.draw(st.integers(0, len(text) - 1))
        span = _span(text, a, b)
        if span is None:
            continue
        start, end = span
        out = span_cfi(chapter, PACKAGE, text, start, end)
        if chapter.blocks is not None and out["cfi"] != "verified":
            # an HTML parser reads CDATA as a comment, so the chapter text lacks what the XML holds:
            # a span across it gets no CFI rather than a wrong one
            assert "<![CDATA[" in data.decode() and out["epub_cfi"] is None
            event("no CFI: the span crosses CDATA")
            continue
        assert out["cfi"] == "verified", out
        event("verified" + (" (texts aligned)" if chapter.blocks is not None else ""))
        cfi, point = out["epub_cfi"], out["epub_cfi_start"]
        assert cfi.startswith("epubcfi(/6/4[ch1ref]!/4") and point.startswith("epubcfi(/6/4[ch1ref]!/4")
        # the reader's DOM between the range's ends holds the span's characters, all and only them
        # (whitespace aside: the DOM keeps the markup's indentation the chapter text collapses)
        assert _squash(resolver.text(cfi)) == _squash(text[start:end])
        # the point is the span's first character
        assert resolver.following(point).lstrip().startswith(text[start])
        assert parse_cfi(point).start == parse_cfi(cfi).start
        # and read back (a reader's CFI given to read_source): the same offsets
        parsed = parse_cfi(cfi)
        assert parsed.end is not None
        back = (chapter.offset_of(parsed.start, after=False), chapter.offset_of(parsed.end, after=True))
        if chapter.blocks is None:
            assert back == (start, end)
        else:
            assert _squash(text[back[0] : back[1]]) == _squash(text[start:end])


def test_ids_are_asserted_and_utf16_offsets_count_astral_characters_twice() -> None:
    data = (f'<html xmlns="{XHTML}"><head><title>t</title></head><body id="b">'
            '<p id="p1">😀 one <em>two</em> three</p><p>four&#160;five</p></body></html>').encode()
    text, _ = extract_chapter_text(data)
    assert text == "😀 one two three\nfour five"  # the chapter text collapses the no-break space
    chapter = ChapterCfi.build(data, text)
    start = text.index("one")
    out = span_cfi(chapter, PACKAGE, text, start, text.index("three") + 5)
    # "one" starts after the emoji (2 UTF-16 units) and a space; "three" ends the p's third chunk
    assert out["epub_cfi"] == "epubcfi(/6/4[ch1ref]!/4[b]/2[p1],/1:3,/3:6)"
    assert out["epub_cfi_start"] == "epubcfi(/6/4[ch1ref]!/4[b]/2[p1]/1:3)"
    five = text.index("five")
    across = span_cfi(chapter, PACKAGE, text, text.index("two"), five + 4)
    assert across["epub_cfi"] == "epubcfi(/6/4[ch1ref]!/4[b],/2[p1]/2/1:0,/4/1:9)"
    assert Resolver(data).text(across["epub_cfi"]) == "two threefour\xa0five"  # the DOM's own characters


def test_named_html_entities_of_epub2_books_are_read() -> None:
    data = (f'<html xmlns="{XHTML}"><body><p>caf&eacute;&nbsp;au lait</p></body></html>').encode()
    text, _ = extract_chapter_text(data)
    out = span_cfi(ChapterCfi.build(data, text), PACKAGE, text, 0, len(text))
    assert out["cfi"] == "verified" and out["epub_cfi"] == "epubcfi(/6/4[ch1ref]!/2/2,/1:0,/1:12)"


def test_a_chapter_that_is_not_xml_has_no_cfi_and_says_why() -> None:
    data = b"<html><body><p>one<br>two</p></body></html>"  # HTML, not XHTML: <br> is never closed
    text, _ = extract_chapter_text(data)
    out = span_cfi(ChapterCfi.build(data, text), PACKAGE, text, 0, 3)
    assert out["epub_cfi"] is None and out["cfi"] == "unavailable" and "not well-formed XML" in out["why"]


def test_a_chapter_outside_the_spine_has_no_cfi() -> None:
    data = f'<html xmlns="{XHTML}"><body><p>one</p></body></html>'.encode()
    out = span_cfi(ChapterCfi.build(data, "one"), None, "one", 0, 3)
    assert out["epub_cfi"] is None and out["cfi"] == "unavailable"


def test_package_steps_count_every_child_and_assert_itemref_ids() -> None:
    opf = b"""<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0">
  <metadata/>
  <manifest>
    <item id="c1" href="text/c1.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="text/c%202.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <!-- comments are not elements -->
  <spine id="sp">
    <itemref idref="missing"/>
    <itemref idref="c1" id="c1ref"/>
    <itemref idref="c2"/>
    <itemref idref="c1"/>
  </spine>
</package>"""
    steps = package_steps(opf, "OEBPS")
    # an itemref naming no manifest item still takes its place in the count
    assert steps == {"OEBPS/text/c1.xhtml": (CfiStep(6, "sp"), CfiStep(4, "c1ref")),
                     "OEBPS/text/c 2.xhtml": (CfiStep(6, "sp"), CfiStep(6))}
    assert package_steps(b"<package><metadata/>", "") == {}  # broken: no CFIs, no traceback
    assert package_steps(b"<package><metadata/><manifest/></package>", "") == {}  # no spine at all


def test_writing_and_reading_round_trip() -> None:
    start = CfiPoint(PACKAGE, (CfiStep(4, "body01"), CfiStep(10, "para05"), CfiStep(3)), 10)
    end = CfiPoint(PACKAGE, (CfiStep(4, "body01"), CfiStep(12), CfiStep(2, "a,b"), CfiStep(1)), 0)
    text = format_range(start, end)
    assert text == "epubcfi(/6/4[ch1ref]!/4[body01],/10[para05]/3:10,/12/2[a^,b]/1:0)"
    assert parse_cfi(text).start == start and parse_cfi(text).end == end
    assert parse_cfi(format_point(start)).start == start and not parse_cfi(format_point(start)).is_range
    # the spec's own examples read, with a text location assertion and a side bias
    spec = parse_cfi("book.epub#epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/2/1:3[yyy;s=b])")
    assert spec.start.document[-1] == CfiStep(1) and spec.start.offset == 3
    assert parse_cfi("epubcfi(/6/14[chap05ref]!/4[body01]/10/2/1:3[2^[1^]])").start.offset == 3


@pytest.mark.parametrize("bad", [
    "", "   ", "/6/4!/4/2/1:0", "epubcfi(/6/4!/4/2/1:0", "epubcfi()", "epubcfi(/06/4!/4/1:0)",
    "epubcfi(/6/4!/4/1:01)", "epubcfi(/6/4/4/1:0)", "epubcfi(/6/4!/4!/2/1:0)", "epubcfi(/6/4!/4/2[p1/1:0)",
    "epubcfi(/6/4!/4/2[a^b]/1:0)", "epubcfi(/6/4!/4/2/1~2.5)", "epubcfi(/6/4!/4/2@50:50)",
    "epubcfi(/6/4!/4/2,/1:0)", "epubcfi(/6/4!/4/2,/1:0,/1:3,/1:4)", "epubcfi(/6/4!/4/2/1:0)x",
    "xepubcfi(/6/4!/4/1:0)", "epubcfi(/6/4!/4/2:3,/1:0,/1:2)", "epubcfi(/6/4!/-4/1:0)",
    "epubcfi(/6/4!/4/2/1:" + "9" * 5000 + ")",
])
def test_malformed_cfis_are_coded_errors(bad: str) -> None:
    with pytest.raises(BookAgentError) as caught:
        parse_cfi(bad)
    assert caught.value.code == "source.cfi_invalid" and caught.value.remediation


@given(st.text(max_size=60))
def test_any_string_parses_or_is_a_coded_error(value: str) -> None:
    try:
        parse_cfi(value)
    except BookAgentError as exc:
        assert exc.code == "source.cfi_invalid"
    try:
        parse_cfi(f"epubcfi(/6/4!/4/2{value})")
    except BookAgentError as exc:
        assert exc.code == "source.cfi_invalid"


def _epub(path: Path, opf: str, chapters: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:'
                   'xmlns:container" version="1.0"><rootfiles><rootfile full-path="OPS/book.opf" '
                   'media-type="application/oebps-package+xml"/></rootfiles></container>')
        z.writestr("OPS/book.opf", opf)
        for name, data in chapters.items():
            z.writestr(f"OPS/{name}", data)
    return path


_MANIFEST = ('<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>'
             '<item id="c2" href="c2.xhtml" media-type="application/xhtml+xml"/></manifest>')
_GOOD = f'<html xmlns="{XHTML}"><body><p id="p">Good text here.</p></body></html>'.encode()
_HTML = b"<html><body><p>Loose <br> HTML text.</p></body></html>"


def test_a_broken_spine_or_chapter_gives_coded_errors_and_honest_nones(tmp_path: Path) -> None:
    opf = (f'<package xmlns="http://www.idpf.org/2007/opf"><metadata/>{_MANIFEST}'
           '<spine><itemref idref="gone"/><itemref idref="c1"/><itemref idref="c2"/></spine></package>')
    source = EpubSource(_epub(tmp_path / "a.epub", opf, {"c1.xhtml": _GOOD, "c2.xhtml": _HTML}))
    first, second = source.spine  # the itemref naming nothing is skipped, but still counted
    good = source.cfi(first, 0, 4)
    assert good["epub_cfi"] == "epubcfi(/6/4!/2/2[p],/1:0,/1:4)" and good["cfi"] == "verified"
    assert source.resolve_cfi(good["epub_cfi"])[1:] == (0, 4)
    loose = source.cfi(second, 0, 5)
    assert loose["epub_cfi"] is None and loose["cfi"] == "unavailable"
    for bad in ("epubcfi(/6/6!/4/2/1:0)", "epubcfi(/6/2!/4/2/1:0)", "epubcfi(/4/4!/4/2/1:0)"):
        with pytest.raises(BookAgentError) as caught:
            source.resolve_cfi(bad)  # a chapter without CFI positions, an itemref naming nothing, not the spine
        assert caught.value.code == "source.cfi_not_found" and caught.value.remediation
    source.close()


def test_an_epub_without_a_spine_or_package_document(tmp_path: Path) -> None:
    no_spine = EpubSource(_epub(tmp_path / "b.epub", f'<package xmlns="http://www.idpf.org/2007/opf">{_MANIFEST}'
                                '</package>', {"c1.xhtml": _GOOD}))
    with pytest.raises(BookAgentError) as caught:
        no_spine.resolve_cfi("epubcfi(/6/2!/4/2/1:0)")
    assert caught.value.code == "source.cfi_not_found"
    broken = EpubSource(_epub(tmp_path / "c.epub", "<package><spine>", {"c1.xhtml": _GOOD}))
    with pytest.raises(BookAgentError) as caught:
        broken.resolve_cfi("epubcfi(/6/2!/4/2/1:0)")
    assert caught.value.code == "source.original_corrupt"
