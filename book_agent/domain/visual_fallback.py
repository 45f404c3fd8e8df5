"""When should an agent look at the page image instead of (or besides) the extracted text?

Deterministic rules, no model: the query asks about something visual (figures, tables,
charts, formulas, layout; English and Chinese vocabulary), the hits' text looks poorly
extracted (tiny, U+FFFD replacement or private-use characters, mangled math), the page has
little text (a scan: hits may carry `page_text_chars`), or a hint says so
(`hints={"visual": true}`; `false` forces no). Reasons are stable codes plus a readable
detail, so a caller can explain the recommendation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

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

MIN_HIT_TEXT_CHARS = 40  # shorter hit text is suspicious
LOW_PAGE_TEXT_CHARS = 200  # fewer extracted characters on a page: likely a scan or a figure
_MATH_DEBRIS = re.compile(r"[=+\-*/^_<>≤≥∑∫√∂∞±×÷]{1}\s*[=+\-*/^_<>≤≥∑∫√∂∞±×÷]")


def _query_reasons(query: str) -> list[dict[str, str]]:
    reasons: list[dict[str, str]] = []
    words = sorted({m.group(0).lower() for m in _EN_VISUAL.finditer(query)})
    if words:
        reasons.append({"code": "query.visual_terms", "detail": "query mentions " + ", ".join(words)})
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


# Regexes rather than per-character Python loops: this runs on every search's hits.
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
_WIDE = re.compile("[\u3000-\u9fff\uac00-\ud7af]")


def _weighted_length(text: str) -> int:
    """Characters, with a CJK character worth three: it carries about a word."""
    return len(text) + 2 * len(_WIDE.findall(text))


def _text_reasons(index: int, text: str, min_chars: int) -> list[dict[str, str]]:
    label = f"hit {index}"
    stripped = text.strip()
    out: list[dict[str, str]] = []
    if _weighted_length(stripped) < min_chars:
        out.append({"code": "hit.text_too_short", "detail": f"{label} has only {len(stripped)} characters of text"})
    if "\ufffd" in text:
        out.append({"code": "hit.replacement_chars", "detail": f"{label} contains U+FFFD replacement characters"})
    if _PRIVATE_USE.search(text):
        out.append({"code": "hit.private_use_chars", "detail": f"{label} contains private-use characters (unmapped glyphs)"})
    if stripped and len(_MATH_DEBRIS.findall(stripped)) >= 3:
        out.append({"code": "hit.broken_math", "detail": f"{label} looks like mangled math"})
    return out


def _hit_text(hit: Mapping[str, Any]) -> str | None:
    text = hit.get("text")
    if text is None and isinstance(hit.get("record"), Mapping):
        text = hit["record"].get("text")
    return text if isinstance(text, str) else None


def _page_chars(hit: Mapping[str, Any]) -> int | None:
    for holder in (hit, hit.get("hints") or {}, hit.get("source_locator") or {}):
        if isinstance(holder, Mapping) and isinstance(holder.get("page_text_chars"), int):
            return int(holder["page_text_chars"])
    return None


class VisualFallback(TypedDict):
    recommended: bool
    reasons: list[dict[str, str]]  # [{code, detail}]


class VisualFallbackPolicy:
    """`evaluate(query, hits, hints)` -> `{recommended, reasons}`; see the module docstring."""

    def __init__(self, min_hit_chars: int = MIN_HIT_TEXT_CHARS, low_page_chars: int = LOW_PAGE_TEXT_CHARS) -> None:
        self.min_hit_chars = min_hit_chars
        self.low_page_chars = low_page_chars

    def evaluate(
        self,
        query: str,
        hits: Sequence[Mapping[str, Any]] | None,
        hints: Mapping[str, Any] | None = None,
    ) -> VisualFallback:
        hints = hints or {}
        if hints.get("visual") is False:
            return {"recommended": False, "reasons": [{"code": "hint.visual_off", "detail": "hints.visual is false"}]}
        reasons: list[dict[str, str]] = []
        if hints.get("visual") is True:
            reasons.append({"code": "hint.visual", "detail": "hints.visual is true"})
        reasons.extend(_query_reasons(query or ""))
        for index, hit in enumerate(hits or []):
            if not isinstance(hit, Mapping):
                continue
            text = _hit_text(hit)
            if text is not None:
                reasons.extend(_text_reasons(index, text, self.min_hit_chars))
            chars = _page_chars(hit)
            if chars is not None and chars < self.low_page_chars:
                reasons.append({"code": "page.little_text", "detail": f"hit {index}: its page has {chars} characters of text"})
        if isinstance(hints.get("page_text_chars"), int) and hints["page_text_chars"] < self.low_page_chars:
            reasons.append({"code": "page.little_text", "detail": f"the page has {hints['page_text_chars']} characters of text"})
        return {"recommended": bool(reasons), "reasons": reasons}
