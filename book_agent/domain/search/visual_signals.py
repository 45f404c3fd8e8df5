"""What a hit's extracted text says about the page it came from: code, broken maths, a table,
a figure. Deterministic, regexes only (this runs on every search's hits).

Tuned on half of a labelled set of real pages (tools/eval/eval_visual_fallback.py,
eval/visual_fallback/README.md: precision and recall on the other half). What the set taught:

- Code is not maths. Source code and REPL sessions are full of ASCII operators (`6**2 + 6`,
  `i++`, `a // b`, `>>>`), so ASCII operators are never evidence of maths; typeset maths
  is. A TeX page's formulas come out of PDFium as Unicode mathematical symbols (−, √, ∑ or
  its Computer Modern stand-in, ∞, ≤, Greek letters) scattered over many lines of one or two
  characters (each sub- and superscript, each stacked part of a fraction on a line of its own).
- A table or figure usually has its caption in the text: `表 3.2: ...`, `Figure 1: ...` (the
  colon tells a caption from a reference such as "见表 3.2" or "see Figure 1").
- A table without a caption is lines of cells, several of them bare numbers.
- A diagram drawn by TeX leaves arrow and dingbat glyphs (✲ ❄ ➝) behind.
"""

from __future__ import annotations

import re

from book_agent.lazy import LazyPattern

# Most hits are plain text: the patterns that only a non-ASCII text, a caption word or a line
# of numbers reaches are compiled when one first does (book_agent/lazy.py).

# Unicode maths: the mathematical operators blocks, arrows used in formulas, Greek letters,
# the mathematical alphanumerics, and the few Latin-1 operators. Not ⟨ ⟩ (a manual's meta
# arguments) and nothing ASCII.
_MATH = LazyPattern("[\u2200-\u22ff\u2a00-\u2aff\u0391-\u03a9\u03b1-\u03c9\u03d1\u03d5\u03f5\u00b1\u00d7\u00f7\u2032\u2033"
                   "\u221a\U0001d400-\U0001d7ff]")
_TINY_LINE = LazyPattern(r"^[ \t]*\S{1,3}[ \t]*$", re.MULTILINE)  # a sub/superscript or a stacked part
_CAPTION = LazyPattern(r"(?:^|\s)(表|图|圖|Table|TABLE|Figure|FIGURE|Fig\.)\s?[0-9０-９]+(?:[.\-][0-9]+)*\s?[:：]")
_FIGURE_GLYPHS = LazyPattern("[\u2190-\u21ff\u2700-\u27bf\u25a0-\u25ff]")
_NUMBER_BODY = r"[-+]?(?:\d+(?:[.,]\d+)*|\d*\.\d+)(?:%|pt|mm|cm|ms|s|h|KB|MB|GB)?"
# every whitespace-delimited cell that is a bare number, in one scan (str.split and \s agree on
# whitespace: both are str.isspace), instead of one match call per word
_NUMBER_CELLS = re.compile(f"(?<!\\S){_NUMBER_BODY}(?!\\S)")
# a caption names one of these words: texts without any (nearly all) skip the regex's scan
_CAPTION_WORDS = ("表", "图", "圖", "Table", "TABLE", "Figure", "FIGURE", "Fig.")
# marks of code: prompts, keywords, braces and statement ends, calls, TeX commands
_CODE_LINE = LazyPattern(
    r"^\s*(?:>>>|\.\.\.\s|\$\s|#\s?include|#!|%|//|/\*|\*/|In \[\d+\]:)"
    r"|\b(?:def|return|import|class|lambda|elif|int|void|char|printf|malloc|sizeof|struct|for|while|if)\b.*[(:{;]"
    r"|[{};]\s*$|\w\(.*\)|\\[a-zA-Z]+[{\[]|\b\w+\s*(?:\+=|-=|\*=|==|!=|->|<<|>>|\*\*|//)\s*\w",
    re.MULTILINE,
)
_CODE_PUNCT = LazyPattern(r"[(){};=\[\]$\\]")
# a contents line: dot leaders (`. . .`, `....`, `…`), or a dotted section number, a title and
# a page number (`4.3.2 Exponents 41`)
_LEADERS = LazyPattern(r"(?:\.\s){2,}|\.{4,}|(?:\u2026|\u00b7\s?){2,}|^\s*\d+(?:\.\d+)+\s+\D.*\s\d{1,4}\s*$")
# an index's page references: `, 35`, `, 72, 90` after a term or on a line of their own
# (a coordinate pair `(0, 1)` or a number list `1, 2, 3;` is not one: the number is followed by a
# comma, the line's end or a word)
_PAGE_REFS = LazyPattern(r",\s+\d{1,4}(?![\d.])(?=\s*,|[ \t]*$|\s+[^\d\s),;:=+*/-])", re.MULTILINE)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def code_share(text: str) -> float:
    """The share of the text's lines that look like code (0 for text without line breaks
    that shows no code at all)."""
    lines = _lines(text)
    if len(lines) <= 1:
        return 1.0 if _CODE_LINE.search(text) and len(_CODE_PUNCT.findall(text)) >= 2 else 0.0
    return sum(bool(_CODE_LINE.search(line)) for line in lines) / len(lines)


def looks_like_code(text: str) -> bool:
    return code_share(text) >= 0.5


def broken_math(text: str) -> bool:
    """Typeset maths as PDFium extracts it: Unicode maths symbols, and (when the line breaks
    survive) one line in eight or more of one to three characters; in text whose lines were
    joined, a denser run of maths symbols. ASCII operators never count: they are code's."""
    symbols = len(_MATH.findall(text))
    if symbols < 4:
        return False
    lines = _lines(text)
    if len(lines) >= 8:
        tiny = len(_TINY_LINE.findall(text))
        return tiny >= 6 and tiny >= 0.12 * len(lines)
    return symbols >= 6 and symbols >= 0.004 * len(text)


def caption(text: str) -> str | None:
    """`table` or `figure` when the text holds a caption (`表 3.2: ...`, `Figure 1: ...`)."""
    if not any(word in text for word in _CAPTION_WORDS):
        return None
    found = _CAPTION.search(text)
    if found is None:
        return None
    return "table" if found.group(1) in ("表", "Table", "TABLE") else "figure"


def numeric_rows(text: str) -> int:
    """Lines that read as table rows: three or more cells, two or more of them bare numbers,
    and no code (an index's `name, 12, 45` has its numbers after commas; a REPL line is code;
    a contents line `1.2 Title . . . . 14` has dot leaders).
    A text whose lines were joined counts one row per three bare numbers when they are 40%
    of its words or more (an index, 30%, is not a table)."""
    numbers = len(_NUMBER_CELLS.findall(text))
    if numbers < 2:  # a row needs two, and a line's cells are the text's (line breaks are whitespace)
        return 0
    lines = _lines(text)
    if len(lines) <= 2:
        cells = len(text.split())
        return numbers // 3 if numbers >= 0.4 * cells and not looks_like_code(text) else 0
    rows = 0
    for line in lines:
        if len(line.split()) < 3 or len(_NUMBER_CELLS.findall(line)) < 2 or _LEADERS.search(line):
            continue
        if not (_CODE_PUNCT.search(line) or _CODE_LINE.search(line)):
            rows += 1
    return rows


def reference_list(text: str) -> bool:
    """A contents or index page: most lines are entries pointing at pages (dot leaders, a
    section number and a page, `term, 35, 72`). Its maths symbols and numbers are entries'
    samples and page numbers, not a formula or a table (the labelled set's contents and
    index pages). Joined text: one page reference (`, 35`) per six words or more."""
    if "," not in text and "." not in text and "\u2026" not in text:
        return False
    lines = _lines(text)
    if len(lines) >= 8:
        entries = sum(bool(_LEADERS.search(line) or _PAGE_REFS.search(line)) for line in lines)
        return entries >= 0.4 * len(lines)
    return len(_PAGE_REFS.findall(text)) * 6 >= max(len(text.split()), 12)


def has_visual_glyph(text: str) -> bool:
    """A Unicode maths symbol or a diagram's glyph (never an ASCII operator: those are code's)."""
    return bool(_MATH.search(text) or _FIGURE_GLYPHS.search(text))


def figure_glyphs(text: str) -> int:
    return len(_FIGURE_GLYPHS.findall(text))


# sub- and superscripts PDFium puts on lines of their own: two or more lines in a row holding a
# single letter or digit (`‖x‖\n2\n2`, `r2x\n2\n2`)
_SCRIPT_RUN = LazyPattern(r"(?:^[ \t]*[0-9A-Za-z][ \t]*\n){2,}", re.MULTILINE)


def broken_scripts(text: str) -> bool:
    """Sub- and superscripts broken onto lines of their own, in text that shows no code (a
    REPL printing 0, 1, 2 a line is code's output, not maths)."""
    return bool(_SCRIPT_RUN.search(text + "\n")) and not _CODE_LINE.search(text)
