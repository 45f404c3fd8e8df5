"""VisualFallbackPolicy: deterministic rules for recommending the page image."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain.search.visual_fallback import VisualFallbackPolicy

GOOD_HIT = {"text": "The general who wins a battle makes many calculations in his temple before the battle is fought."}


def codes(result: dict[str, object]) -> list[str]:
    return [r["code"] for r in result["reasons"]]  # type: ignore[attr-defined, index]


@pytest.mark.parametrize("query", ["What does Figure 3 show?", "see fig. 2", "the tax table", "a bar chart of grain",
                                   "Which equation gives the rate?", "page layout of chapter 2", "draw the diagram"])
def test_visual_english_queries(query: str) -> None:
    result = VisualFallbackPolicy().evaluate(query, [GOOD_HIT])
    assert result["recommended"] and "query.visual_terms" in codes(result)


@pytest.mark.parametrize("query", ["vegetable soup", "a stable government", "configure the paragraph",
                                   "who wins the battle?", "tablespoon of salt"])
def test_word_boundaries_keep_ordinary_words_out(query: str) -> None:
    result = VisualFallbackPolicy().evaluate(query, [GOOD_HIT])
    assert not result["recommended"], result


@pytest.mark.parametrize("query", ["图3展示了什么", "税率表", "这个公式是什么意思", "供应链示意图", "方程的解", "图表中的数据"])
def test_visual_chinese_queries(query: str) -> None:
    result = VisualFallbackPolicy().evaluate(query, [GOOD_HIT])
    assert result["recommended"] and "query.visual_terms_zh" in codes(result)


@pytest.mark.parametrize("query", ["这表示什么意思", "他试图说服国王", "代表团的意图"])
def test_chinese_false_friends_do_not_trigger(query: str) -> None:
    assert not VisualFallbackPolicy().evaluate(query, [GOOD_HIT])["recommended"]


def test_poorly_extracted_hits() -> None:
    policy = VisualFallbackPolicy()
    assert "hit.text_too_short" in codes(policy.evaluate("rates", [{"text": "x = √3"}]))
    assert not policy.evaluate("rates", [{"text": "x = 3"}])["recommended"]  # short ASCII is code or output
    assert "hit.replacement_chars" in codes(policy.evaluate("rates", [{"text": GOOD_HIT["text"] + "\ufffd\ufffd"}]))
    assert "hit.private_use_chars" in codes(policy.evaluate("rates", [{"text": GOOD_HIT["text"] + "\ue000"}]))
    # typeset maths as PDFium extracts it from a TeX page: symbols, sub/superscripts on lines of their own
    math_soup = "The roots of ax2 + bx + c = 0 are\nx =\n−b ±\n√\nb\n2 − 4ac\n2a\n.\nZ ∞\n−∞\ne\n−x\n2\ndx =\n√\nπ."
    assert "hit.broken_math" in codes(policy.evaluate("rates", [{"text": math_soup}]))
    # ASCII operators are code's, never maths
    ascii_soup = "a long line of extracted text where =+ and -= and ^_ and */ are scattered about the page"
    assert not policy.evaluate("rates", [{"text": ascii_soup}])["recommended"]
    # a normal Chinese sentence is not "too short": a CJK character carries about a word
    assert not policy.evaluate("用兵", [{"text": "知己知彼，百戰不殆；不知彼而知己，一勝一負。"}])["recommended"]


def test_pages_with_little_text_and_hints() -> None:
    policy = VisualFallbackPolicy()
    assert "page.little_text" in codes(policy.evaluate("rates", [{**GOOD_HIT, "page_text_chars": 12}]))
    assert "page.little_text" in codes(policy.evaluate("rates", [GOOD_HIT], hints={"page_text_chars": 0}))
    assert not policy.evaluate("rates", [{**GOOD_HIT, "page_text_chars": 3000}])["recommended"]
    assert codes(policy.evaluate("rates", [GOOD_HIT], hints={"visual": True})) == ["hint.visual"]
    off = policy.evaluate("Figure 3", [{"text": "\ufffd"}], hints={"visual": False})
    assert not off["recommended"]


def test_deterministic_and_tolerant_of_odd_hits() -> None:
    policy = VisualFallbackPolicy()
    hits = [GOOD_HIT, {"record": {"text": "x ≤ 3"}}, "not a dict", {"text": None}]
    first = policy.evaluate("table of rates", hits)  # type: ignore[arg-type]
    assert first == policy.evaluate("table of rates", hits)  # type: ignore[arg-type]
    assert codes(first) == ["query.visual_terms", "hit.text_too_short"]
    assert policy.evaluate("", None) == {"recommended": False, "reasons": [], "action": None}


# --- issue 24: code is not maths, tables and figures by their traces, never a render an EPUB cannot give

CODE = {
    "python-repl": ">>> 6**2 + 6\n42\n>>> 7 // 2, 7 % 2, -7 // 2\n(3, 1, -4)\n>>> x += [4]; x * 2\n[1, 2, 3, 4, 1, 2, 3, 4]\n"
                   ">>> 2 ** 10 == 1 << 10\nTrue\n>>> a*b - a**2 + b/2\n8.5",
    "python": "def variance(values):\n    m = mean(values)\n    return sum((v - m) ** 2 for v in values) / (len(values) - 1)\n"
              "if __name__ == \"__main__\":\n    print(mean(data), variance(data) ** 0.5)",
    "c": "#include <stdio.h>\nint gcd(int a, int b) {\n    while (b != 0) {\n        int t = a % b;\n        a = b; b = t;\n"
         "    }\n    return a;\n}\nfor (int i = 1; i <= 10; i++) printf(\"%d\\n\", i << 2);\n/* p->next == NULL */",
    "shell": "$ cc -O2 -Wall -o gcd gcd.c\n$ ./gcd | head -n 3\n$ ls -l *.c | wc -l\n4\n"
             "$ for f in *.txt; do wc -w \"$f\"; done > counts.log 2>&1\n$ echo $((6 * 7)) && test -f a || cp a.example a",
    "latex": "\\begin{tabular}{|l|c|}\n\\hline\na & b \\\\\n\\end{tabular}\n\\[ x^2 + y^2 = z^2 \\]\n\\frac{1}{2} + \\sqrt{2}",
}


@pytest.mark.parametrize("kind", list(CODE))
@pytest.mark.parametrize("form", ["lines", "joined"])
def test_code_listings_and_repl_sessions_are_not_maths(kind: str, form: str) -> None:
    text = CODE[kind] if form == "lines" else " ".join(CODE[kind].split())
    result = VisualFallbackPolicy().evaluate("what does this code print", [{"text": text}])
    assert not result["recommended"], result
    for line in CODE[kind].splitlines():  # each line alone: a short code line is text enough
        assert not VisualFallbackPolicy().evaluate("what is printed", [{"text": line}])["recommended"], line


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([">>> ", "$ ", "x", "y1", "total", "42", "0.5", "**", "//", "+=", "-", "*", "/", "==",
                                 "!=", "<<", ">>", "->", "%", "(", ")", "[", "]", "{", "}", ";", ",", " ", "\n", "= "]),
                min_size=1, max_size=60))
def test_ascii_operators_in_any_arrangement_are_never_broken_maths(tokens: list[str]) -> None:
    text = "".join(tokens)
    assert "hit.broken_math" not in codes(VisualFallbackPolicy().evaluate("q", [{"text": text}]))


TEX_MATH = ("16 Linear algebra\nA 2 × 2 system and its solution by Cramer’s rule:\n \na b\nc d! x\ny\n!\n=\n \ne\nf\n!\n"
            ", x =\ned − bf\nad − bc , y =\naf − ec\nad − bc .\nThe determinant of a product: det(AB) = det A · det B, and\n"
            "A\n−1 =\n1\nad − bc \nd −b\n−c a !\n.\n16")


def test_maths_as_tex_and_pdfium_leave_it_is_broken_maths() -> None:
    assert "hit.broken_math" in codes(VisualFallbackPolicy().evaluate("q", [{"text": TEX_MATH}]))
    joined = " ".join(TEX_MATH.split()) + " ∑ ∫ √ π"  # a pipeline that joined the lines: the symbols still show
    assert "hit.broken_math" in codes(VisualFallbackPolicy().evaluate("q", [{"text": joined}]))
    # a page of prose mentioning one formula in passing is not broken maths
    prose = "The result holds for every n ≥ 1, as the proof in the previous section shows. " * 5
    assert not VisualFallbackPolicy().evaluate("q", [{"text": prose}])["recommended"]


@pytest.mark.parametrize(("text", "code"), [
    ("表 3.2: 各种编译方式支持的主流图片格式\n格式 矢量图 位图\npdflatex .pdf .jpg .png", "hit.table_caption"),
    ("Table 4: Running times\nAlgorithm n=1000", "hit.table_caption"),
    ("the model of the page\n图 5.1: 本文档的页面参数示意图（奇数页）。", "hit.figure_caption"),
    ("source compiler binary Figure 1: From source text to a running program.", "hit.figure_caption"),
    ("Algorithm n = 103 n = 105\nLinear scan 0.01 ms 1.2 ms 118 ms\nBinary search 0.001 ms 0.002 ms 0.003 ms\n"
     "Merge sort 0.2 ms 31 ms 4.1 s\nInsertion sort 1.9 ms 19 s 53 h", "hit.table_rows"),
    ("8 A pipeline\nsource ✲ compiler ✲ binary\n❄\nerrors\n✻ done", "hit.figure_glyphs"),
])
def test_tables_and_figures_by_their_traces(text: str, code: str) -> None:
    assert code in codes(VisualFallbackPolicy().evaluate("q", [{"text": text}]))


@pytest.mark.parametrize("text", [
    "如表 3.2 所示，不同的编译命令支持的图片格式不同。",  # a reference to a table, not its caption
    "see Figure 1 for the pipeline; the compiler reads the source text.",
    "article 文档类, 5, 16, 72\n\\alpha (数学符号), 46, 47\nbook 文档类, 5, 16\n\\beta (数学符号), 46",  # an index
    ">>> 10 / 3, 10 // 3, 10 ** -2\n(3.3333333333333335, 3, 0.01)\n>>> 2 ** 10\n1024\n>>> 7 * 6\n42",
])
def test_references_indexes_and_repl_numbers_are_not_tables(text: str) -> None:
    assert not VisualFallbackPolicy().evaluate("q", [{"text": text}])["recommended"]


EPUB_HIT = {"text": "表 1: 税率\n一 二 三", "source_locator": {"kind": "epub", "href": "text/ch01.xhtml", "spine_index": 3}}
PDF_HIT = {"text": GOOD_HIT["text"], "source_locator": {"kind": "pdf", "page_index": 4}}


def test_an_epub_is_never_told_to_render_a_page() -> None:
    for query, hints in (("What does Figure 3 show?", None), ("税率表", None), ("rates", {"visual": True})):
        result = VisualFallbackPolicy().evaluate(query, [EPUB_HIT], hints=hints)
        assert not result["recommended"] and result["reasons"], result
        assert result["action"] == "read_source" and "images" in result["detail"] and "EPUB" in result["detail"]
    # a library's hits from a PDF and an EPUB: the PDF can be rendered
    mixed = VisualFallbackPolicy().evaluate("What does Figure 3 show?", [EPUB_HIT, PDF_HIT])
    assert mixed["recommended"] and mixed["action"] == "render_page"
    assert VisualFallbackPolicy().evaluate("rates", [PDF_HIT]) == {"recommended": False, "reasons": [], "action": None}
