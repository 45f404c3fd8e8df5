"""When should an agent look at the page image instead of (or besides) the extracted text?

Deterministic rules, no model: the query asks about something visual (figures, tables,
charts, formulas, layout; English and Chinese vocabulary), the hits' text shows a page whose
text is not enough (a table or figure caption, rows of numbers, typeset maths broken up by
extraction, a diagram's glyphs, U+FFFD replacement or private-use characters, a tiny text
that is not code; visual_signals.py), the page has little text (a scan: hits may carry
`page_text_chars`), or a hint says so (`hints={"visual": true}`; `false` forces no). Code is
never taken for maths. Reasons are stable codes plus a readable detail, so a caller can
explain the recommendation.

A page image is recommended only when a hit's book can render one (a PDF): for an EPUB the
reasons are kept, `recommended` is false and `action` says what to do instead (read the
passage in the original, whose `images` lists the chapter's pictures). Measured on a labelled
set of real pages: tools/eval/eval_visual_fallback.py (contracts/search.md, "Visual fallback").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, cast

from book_agent.domain.search import visual_signals as signals
from book_agent.domain.search.page_profile import PageProfile, page_signals
from book_agent.lazy import LazyPattern

# English words match on word boundaries ("table" but not "vegetable" or "stable").
_EN_VISUAL = re.compile(
    r"(?<![a-z])(?:figures?|figs?\.|fig\b|tables?|diagrams?|charts?|graphs?|plots?|"
    r"equations?|formulas?|formulae|layouts?|illustrations?|images?|pictures?|"
    r"maps?|schematics?|flowcharts?|histograms?|photos?|photographs?|drawings?|sketch(?:es)?)"
    r"(?![a-z])",
    re.IGNORECASE,
)
# CJK has no word boundaries; these are specific enough on their own.
_ZH_VISUAL = (
    "示意图", "示意圖", "图表", "圖表", "插图", "插圖", "图片", "圖片", "图像", "圖像",
    "公式", "方程", "表格", "流程图", "流程圖", "版式", "排版", "布局", "佈局", "曲线", "曲線",
    "附图", "附圖", "图示", "圖示", "图", "圖", "表",
)
# single characters that are far more often part of ordinary words than visuals
_ZH_FALSE_FRIENDS = ("表示", "表达", "表達", "代表", "发表", "發表", "表现", "表現", "意图", "意圖", "试图", "試圖", "企图", "企圖", "地图", "地圖", "版图", "版圖", "图书", "圖書", "外表", "表面")

MIN_HIT_TEXT_CHARS = 40  # shorter hit text is suspicious when it holds maths or a diagram's glyphs
LOW_PAGE_TEXT_CHARS = 200  # fewer extracted characters on a page: likely a scan or a figure
TABLE_ROWS = 3  # lines of numeric cells that make a table
FIGURE_GLYPHS = 3  # arrows and dingbats a drawn diagram leaves in the text
EPUB_INSTEAD = ("this book is an EPUB: it has no page images to render; read the passage in the original "
                "(read_source with the hit's locator, or `book-agent source`), whose `images` lists the chapter's pictures")


def _query_reasons(query: str) -> list[dict[str, str]]:
    reasons: list[dict[str, str]] = []
    words = sorted({m.group(0).lower() for m in _EN_VISUAL.finditer(query)})
    if words:
        reasons.append({"code": "query.visual_terms", "detail": "query mentions " + ", ".join(words)})
    if query.isascii():  # every Chinese term and false friend is outside ASCII: none can be in it
        return reasons
    # multi-character terms are unambiguous; single characters only count once the common
    # words that contain them (表示, 意图 ...) are taken out
    found = [t for t in _ZH_VISUAL if len(t) > 1 and t in query]
    stripped = query
    for friend in _ZH_FALSE_FRIENDS:
        stripped = stripped.replace(friend, "")
    found += [t for t in _ZH_VISUAL if len(t) == 1 and t in stripped]
    if found:
        reasons.append({"code": "query.visual_terms_zh", "detail": "query mentions " + "、".join(found[:5])})
    return reasons


# isinstance(x, Mapping) with a dict answered first, without the ABC's check (~0.3 us; asked
# four times a hit of every search)
_MAPPINGS = (dict, Mapping)
# Regexes rather than per-character Python loops: this runs on every search's hits (only on
# a non-ASCII text: compiled when one first comes).
_PRIVATE_USE = LazyPattern("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
_WIDE = LazyPattern("[\u3000-\u9fff\uac00-\ud7af]")


def _weighted_length(text: str) -> int:
    """Characters, with a CJK character worth three: it carries about a word."""
    return len(text) + 2 * len(_WIDE.findall(text))


def _text_reasons(index: int, text: str, min_chars: int) -> list[dict[str, str]]:
    found = _text_signals(text, min_chars)
    return [{"code": code, "detail": f"hit {index} {detail}"} for code, detail in found] if found else []


@functools.lru_cache(maxsize=1024)
def _text_signals(text: str, min_chars: int) -> tuple[tuple[str, str], ...]:
    """(code, detail after the hit's label) of each signal in one hit's text. A pure function of
    the text, kept for the texts seen last: a server's searches return the same records again
    and again, and these scans were a sixth of a warm one-book search (issue 29)."""
    stripped = text.strip()
    out: list[tuple[str, str]] = []
    # the weighted length is never below the plain one: count wide characters only when short.
    # A short line of code (`>>> 6**2 + 6`, `}`), output (`42`) or plain words (a heading) is
    # text enough; a short text with a maths symbol or a diagram's glyph is a formula or a label.
    # maths symbols, diagram glyphs, U+FFFD and private-use characters are all outside ASCII,
    # and str.isascii() answers at once: most hits skip those four scans
    glyphs = not text.isascii()
    if glyphs and len(stripped) < min_chars and _weighted_length(stripped) < min_chars \
            and signals.has_visual_glyph(stripped):
        out.append(("hit.text_too_short", f"has only {len(stripped)} characters of text"))
    if glyphs and "\ufffd" in text:
        out.append(("hit.replacement_chars", "contains U+FFFD replacement characters"))
    if glyphs and _PRIVATE_USE.search(text):
        out.append(("hit.private_use_chars", "contains private-use characters (unmapped glyphs)"))
    if glyphs and stripped and signals.broken_math(stripped):
        out.append(("hit.broken_math", "looks like typeset maths broken up by extraction"))
    elif "\n" in stripped and signals.broken_scripts(stripped):
        out.append(("hit.broken_scripts", "has sub- or superscripts broken onto lines of their own (maths)"))
    kind = signals.caption(text)
    if kind is not None:
        out.append((f"hit.{kind}_caption", f"holds a {kind} caption: the {kind} is on its page"))
    elif signals.numeric_rows(text) >= TABLE_ROWS:
        out.append(("hit.table_rows", "has rows of numeric cells (a table)"))
    if glyphs and signals.figure_glyphs(text) >= FIGURE_GLYPHS:
        out.append(("hit.figure_glyphs", "holds a drawn diagram's arrows and symbols"))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _reference_list(text: str) -> bool:
    return signals.reference_list(text)


def _hit_text(hit: Mapping[str, Any]) -> str | None:
    text = hit.get("text")
    if text is None and isinstance(hit.get("record"), _MAPPINGS):
        text = hit["record"].get("text")
    return text if isinstance(text, str) else None


def _page_chars(hit: Mapping[str, Any]) -> int | None:
    for holder in (hit, hit.get("hints") or {}, hit.get("source_locator") or {}):
        if isinstance(holder, _MAPPINGS) and isinstance(holder.get("page_text_chars"), int):
            return int(holder["page_text_chars"])
    return None


class VisualFallback(TypedDict, total=False):
    recommended: bool  # a page image (render_page) is advised, for a book that has pages
    reasons: list[dict[str, str]]  # [{code, detail}]
    action: str | None  # render_page | read_source (the book cannot render: what to do instead) | None
    detail: str  # why read_source instead of render_page
    hits_needing_page: list[int]  # the result's summary: indexes of the hits whose own advice is a render


def _renderable(hit: Mapping[str, Any]) -> bool | None:
    """Whether the hit's book has page images: PDF yes, EPUB no, unknown None."""
    locator = hit.get("source_locator")
    if not isinstance(locator, _MAPPINGS):
        return None
    kind = locator.get("kind")
    if kind in ("pdf", "epub"):
        return bool(kind == "pdf")
    if "page_index" in locator:
        return True
    return False if "href" in locator or "spine_index" in locator else None


_NO_ADVICE: VisualFallback = {"recommended": False, "reasons": [], "action": None}


class VisualFallbackPolicy:
    """`evaluate_hits(query, hits, hints)`: each hit's own advice, judged on that hit;
    `evaluate(query, hits, hints)`: the result's summary (see the module docstring)."""

    def __init__(self, min_hit_chars: int = MIN_HIT_TEXT_CHARS, low_page_chars: int = LOW_PAGE_TEXT_CHARS) -> None:
        self.min_hit_chars = min_hit_chars
        self.low_page_chars = low_page_chars

    def evaluate_hits(self, query: str, hits: Sequence[Mapping[str, Any]] | None,
                      hints: Mapping[str, Any] | None = None,
                      pages: Callable[[Mapping[str, Any]], PageProfile | None] | None = None) -> list[VisualFallback]:
        """One advice per hit, from that hit's text and page alone (and the hints); no hit's
        advice depends on the others. The query's visual words are listed among the reasons but
        never send a hit to its page on their own: on the labelled set, a hit that merely refers
        to a table (见表 5.1) is code or prose as often as not (the table is on another page).
        `pages`: the profile of a hit's page (page_profile.py), or None when its book has no
        pages or cannot read them; asked only for a PDF hit whose text says nothing itself."""
        hints = hints or {}
        if hints.get("visual") is False:
            off = {"recommended": False, "reasons": [{"code": "hint.visual_off", "detail": "hints.visual is false"}],
                   "action": None}
            return [cast(VisualFallback, dict(off)) for _ in hits or []]
        shared = _shared_reasons(query or "", hints, self.low_page_chars)
        forced = hints.get("visual") is True or any(r["code"] == "page.little_text" for r in shared)
        out: list[VisualFallback] = []
        for index, hit in enumerate(hits or []):
            if not isinstance(hit, _MAPPINGS):
                out.append(cast(VisualFallback, dict(_NO_ADVICE)))
                continue
            own = self._hit_reasons(index, hit, pages)
            reasons = [*shared, *own]
            out.append(_advice(reasons, [hit], needed=bool(own) or forced))
        return out

    def _hit_reasons(self, index: int, hit: Mapping[str, Any],
                     pages: Callable[[Mapping[str, Any]], PageProfile | None] | None) -> list[dict[str, str]]:
        reasons: list[dict[str, str]] = []
        text = _hit_text(hit)
        if text is not None and _reference_list(text):
            return reasons  # a contents or index page: its symbols and numbers point elsewhere
        if text is not None:
            reasons.extend(_text_reasons(index, text, self.min_hit_chars))
        chars = _page_chars(hit)
        if chars is not None and chars < self.low_page_chars:
            reasons.append({"code": "page.little_text", "detail": f"hit {index}: its page has {chars} characters of text"})
        if not reasons and pages is not None and _renderable(hit):
            # the page's own objects, read only when the text says nothing (a page read costs
            # milliseconds the first time; the adapter keeps what it read)
            profile = pages(hit)
            if profile is not None:
                reasons.extend({"code": code, "detail": f"hit {index}: {detail}"} for code, detail in page_signals(profile))
        return reasons

    def evaluate(self, query: str, hits: Sequence[Mapping[str, Any]] | None,
                 hints: Mapping[str, Any] | None = None,
                 per_hit: Sequence[VisualFallback] | None = None) -> VisualFallback:
        """The result's summary: the first hit's advice (the hit an answer cites first: it does
        not change with top_k) and `hits_needing_page`, every hit whose own advice is a render.
        `per_hit`: evaluate_hits' answer, when the caller has it already."""
        advice = list(per_hit) if per_hit is not None else self.evaluate_hits(query, hits, hints)
        needing = [i for i, a in enumerate(advice) if a.get("recommended")]
        if advice:
            summary = cast(VisualFallback, dict(advice[0]))
        elif (hints or {}).get("visual") is False:
            summary = {"recommended": False, "reasons": [{"code": "hint.visual_off", "detail": "hints.visual is false"}],
                       "action": None}
        else:
            summary = {"recommended": False, "reasons": _shared_reasons(query or "", hints or {}, self.low_page_chars),
                       "action": None}
        summary["hits_needing_page"] = needing
        return summary


def _shared_reasons(query: str, hints: Mapping[str, Any], low_page_chars: int) -> list[dict[str, str]]:
    """What holds for every hit of a search: the hints and the query's visual words."""
    reasons: list[dict[str, str]] = []
    if hints.get("visual") is True:
        reasons.append({"code": "hint.visual", "detail": "hints.visual is true"})
    reasons.extend(_query_reasons(query))
    if isinstance(hints.get("page_text_chars"), int) and hints["page_text_chars"] < low_page_chars:
        reasons.append({"code": "page.little_text", "detail": f"the page has {hints['page_text_chars']} characters of text"})
    return reasons


def _advice(reasons: list[dict[str, str]], given: Sequence[Mapping[str, Any]], needed: bool) -> VisualFallback:
    """A render only when the hit needs its page and its book has pages: an EPUB's hit gets
    read_source instead. Reasons that do not make the page needed (the query's words on a
    prose hit) are kept for the caller to see."""
    if not needed:
        return {"recommended": False, "reasons": reasons, "action": None}
    hits = [h for h in given if isinstance(h, _MAPPINGS)]
    kinds = {_renderable(h) for h in hits}
    if hits and True not in kinds and None not in kinds:
        return {"recommended": False, "reasons": reasons, "action": "read_source", "detail": EPUB_INSTEAD}
    return {"recommended": True, "reasons": reasons, "action": "render_page"}
