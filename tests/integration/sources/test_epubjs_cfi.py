"""Issue 43, item 6 (CFIs): the EPUB CFIs we write resolve in epub.js, the library most web
reading systems run, to the same passage as in the spec's own counting.

epub.js counts a step's text nodes among the parent's text nodes (its n-th is /2n-1), where the
spec counts the chunks between elements (/2k+1 after the k-th element, even when a chunk is
empty). They disagree after an element that no text precedes: a paragraph that opens with
<abbr> or <ruby>. Our points are chosen where both count alike (adapters/book_agent_adapters/sources/epub/cfi.py).

Real parts: epub.js 0.3.93 and jsdom in node (tools/dev/install_epubjs.sh, `make test`), chapters
generated with a fixed seed (ruby, abbreviations and emphasis opening paragraphs, elements side
by side, pretty-printed and minified markup, ids or none), and the tests' own DOM resolver.
"""

from __future__ import annotations

import random
import re

from book_agent.domain.sources.epub_cfi import CfiStep
from book_agent_adapters.sources.epub.cfi import ChapterCfi, span_cfi
from book_agent_adapters.sources.epub.chapter_text import extract_chapter
from tests.support.epub_originals import chapter_document
from tests.support.epubjs import require_epubjs, resolve

PACKAGE = (CfiStep(6), CfiStep(4, "c1"))
WORDS = ["Holmes", "Watson", "山路", "登り", "考えた", "street", "知己知彼", "the", "case", "lamp"]


def _inline(rng: random.Random, depth: int = 0) -> str:
    kind = rng.choice(["abbr", "em", "ruby", "ruby-rp", "span", "a", "text"])
    word = rng.choice(WORDS)
    if kind == "text":
        return word
    if kind == "ruby":
        return f"<ruby>{word}<rt>よみ</rt></ruby>"
    if kind == "ruby-rp":
        return f"<ruby><rb>{word}</rb><rp>(</rp><rt>かな</rt><rp>)</rp></ruby>"
    inner = _inline(rng, depth + 1) if depth < 2 and rng.random() < 0.3 else word
    ident = f' id="i{rng.randrange(10**6)}"' if rng.random() < 0.3 else ""
    return f"<{kind}{ident}>{inner}</{kind}>"


def _paragraph(rng: random.Random, n: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 6)):
        parts.append(_inline(rng))
        if rng.random() < 0.6:  # else two elements side by side, no text between
            parts.append(rng.choice([" ", "、", ". ", " and ", "。"]) + rng.choice(WORDS))
    ident = f' id="p{n}"' if rng.random() < 0.5 else ""
    return f"<p{ident}>{''.join(parts)}</p>"


def _chapter(rng: random.Random) -> bytes:
    paragraphs = [_paragraph(rng, n) for n in range(rng.randint(1, 6))]
    glue = rng.choice(["", "\n", "\n  "])
    if rng.random() < 0.3:
        paragraphs = [f"<section>{glue}{glue.join(paragraphs)}{glue}</section>"]
    return chapter_document(glue.join(paragraphs), lang="en")


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_epubjs_resolves_every_paragraph_as_we_do() -> None:
    require_epubjs()
    rng = random.Random(43)
    items, wanted = [], []
    for _ in range(150):
        data = _chapter(rng)
        text, _, _ = extract_chapter(data)
        chapter = ChapterCfi.build(data, text)
        pos = 0
        for line in text.split("\n"):  # each paragraph, as a record holds it
            start, end = pos, pos + len(line)
            pos = end + 1
            if not line.strip():
                continue
            out = span_cfi(chapter, PACKAGE, text, start, end)
            assert out["cfi"] == "verified", (data, line, out)
            items += [(data, out["epub_cfi"]), (data, out["epub_cfi_start"])]
            wanted.append((line, out))
    answers = resolve(items)
    ranges, points = answers[0::2], answers[1::2]
    same = [_squash(got.get("printed") or "") == _squash(line) for (line, _), got in zip(wanted, ranges, strict=True)]
    said = [out["epubjs"] for _, out in wanted]
    # what the locator says (verification.cfi_epubjs) is what epub.js does, paragraph by paragraph
    assert said == same, [(line, out) for (line, out), s, g in zip(wanted, said, same, strict=True) if s != g][:3]
    # and nearly every paragraph is one epub.js resolves (312 of 504 were not, before the points were chosen)
    assert sum(same) >= 0.93 * len(same), f"{sum(same)} of {len(same)}"
    print(f"epub.js resolved {sum(same)} of {len(same)} paragraphs as the spec does")
    assert all("error" not in p for p, ok in zip(points, same, strict=True) if ok)


def test_the_two_cases_real_books_showed() -> None:
    """A Sherlock Holmes paragraph opening with <abbr>; a Japanese paragraph opening with ruby."""
    require_epubjs()
    cases = ['<p id="a"><abbr>Mr.</abbr> Sherlock Holmes, who was usually very late in the mornings.</p>\n'
             '<p><abbr class="name">Dr.</abbr> <abbr>Watson</abbr> sat down.</p>',
             '<p><ruby>山路<rt>やまみち</rt></ruby>を登りながら、こう考えた。</p>\n'
             '<p><ruby>智<rp>(</rp><rt>ち</rt><rp>)</rp></ruby>に<ruby>働<rt>はたら</rt></ruby>けば角が立つ。</p>']
    for body in cases:
        data = chapter_document(body)
        text, _, _ = extract_chapter(data)
        chapter = ChapterCfi.build(data, text)
        lines = text.split("\n")
        spans = [(text.index(line), text.index(line) + len(line)) for line in lines]
        outs = [span_cfi(chapter, PACKAGE, text, a, b) for a, b in spans]
        got = resolve([(data, o["epub_cfi"]) for o in outs])
        assert [_squash(g.get("printed") or "") for g in got] == [_squash(line) for line in lines], outs
        assert all(o["epubjs"] for o in outs)


def test_where_no_point_is_counted_alike_the_locator_says_so() -> None:
    """Why the rest of the generated paragraphs are not resolved by epub.js (issue 43): a
    paragraph whose last text follows an element no text precedes (its /2k+1 chunk is epub.js's
    /2n-1 with n < k+1), in a chapter with no text between its paragraphs, and no later point
    either: the body's closing whitespace is counted apart as well (the spec counts the empty
    chunks between the paragraphs, epub.js does not), and so is the html element's when none
    precedes <head>. epub.js resolves a text step by XPath `text()[n]`; a missing node leaves the
    range collapsed at its start. No point at or after the passage's end is counted alike, so the
    CFI keeps the spec's point and `cfi_epubjs` is false; with whitespace between the paragraphs
    the end moves to a point both count alike and epub.js resolves it."""
    require_epubjs()
    last = "<p><ruby>山路<rt>やまみち</rt></ruby><em>を</em>登りながら</p>"
    for glue, alike in (("", False), ("\n", True)):
        data = chapter_document(glue.join(["<p><abbr>Mr.</abbr> Holmes</p>", last]))
        text, _, _ = extract_chapter(data)
        chapter = ChapterCfi.build(data, text)
        start = text.index("山路を登りながら")
        out = span_cfi(chapter, PACKAGE, text, start, start + len("山路を登りながら"))
        assert out["cfi"] == "verified" and out["epubjs"] is alike, (glue, out)
        got = resolve([(data, out["epub_cfi"])])[0]
        assert (_squash(got.get("printed") or "") == "山路を登りながら") is alike, (glue, out, got)
