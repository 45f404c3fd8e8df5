"""From a hit, record or quotation to a verified locator (the body of SourceResolver.locate)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.source_results import Locator
from book_agent.domain.sources.text_match import (
    FUZZY_THRESHOLD,
    find_exact,
    find_normalized,
    normalize_key,
)
from book_agent_adapters.sources.locator_checks import MAX_QUOTE_CHARS, RecordLookup, check_book
from book_agent_adapters.sources.passage_search import find_passage

if TYPE_CHECKING:
    from book_agent.domain.sources.text_match import NormalizedText
    from book_agent_adapters.sources.epub.reader import EpubSource
    from book_agent_adapters.sources.passage_search import UnitTexts
    from book_agent_adapters.sources.pdf.reader import PdfSource


class OpenOriginal(Protocol):
    """What locating needs of an opened book (SourceResolver is one): named here, so that this
    module does not import the resolver that imports it."""

    @property
    def book_id(self) -> str | None: ...
    @property
    def kind(self) -> str | None: ...
    @property
    def records(self) -> RecordLookup: ...
    def pdf(self) -> PdfSource: ...
    def epub(self) -> EpubSource: ...
    def units(self) -> UnitTexts: ...
    def markdown_text(self) -> str | None: ...
    def markdown_normalized(self) -> NormalizedText: ...
    def record_page_label(self, page_index: int) -> str | None: ...


@dataclass
class Hit:
    text: str
    record_id: str | None = None
    source: dict[str, Any] = field(default_factory=dict)
    md_start: int | None = None
    md_end: int | None = None
    quotation: bool = False  # a plain quotation string, not a hit or record


def _quote_error(value: Any, why: str) -> BookAgentError:
    return BookAgentError(
        "source.quote_invalid",
        f"cannot locate {type(value).__name__ if not isinstance(value, str) else 'this text'}: {why}",
        remediation="pass a search hit, a record dict with record_id, or a non-empty quotation",
    )


def record_locators(resolver: OpenOriginal) -> Iterator[Locator]:
    """The verified locator of every record, in reading order (the book's records read once)."""
    for row in resolver.records.all():
        text = row["text"]
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_QUOTE_CHARS:
            yield cast(Locator, {
                "book_id": resolver.book_id, "kind": resolver.kind, **row["source"], "record_id": row["record_id"],
                "verification": {"method": "unverified", "score": None, "stage": "none"},
                "warnings": ["the record has no text to look for, or more than the 100,000 characters locate reads"]})
            continue
        hit = Hit(text, record_id=row["record_id"], source=dict(row["source"]), md_start=row["md_start"],
                  md_end=row["md_end"])
        yield cast(Locator, build_locator(resolver, hit, Claim.from_sources(resolver, hit, {})))


def read_hit(value: Any, book_id: str | None, records: RecordLookup) -> Hit:
    if isinstance(value, str):
        hit = Hit(value, quotation=True)
    elif isinstance(value, dict):
        check_book(book_id, value)
        nested = value.get("record")
        data = {**nested, **value} if isinstance(nested, dict) else value
        record: dict[str, Any] = records.get(data["record_id"]) if data.get("record_id") is not None else {}
        source = data.get("source_locator") or data.get("source") or record.get("source") or {}
        raw_span = data.get("markdown_span")
        span: dict[str, Any] = raw_span if isinstance(raw_span, dict) else {}
        hit = Hit(
            text=(record or data).get("text"),  # type: ignore[arg-type]  # checked below
            record_id=data.get("record_id"),
            source=dict(source) if isinstance(source, dict) else {},
            md_start=record.get("md_start") if record else span.get("start"),
            md_end=record.get("md_end") if record else span.get("end"),
        )
    else:
        raise _quote_error(value, "expected a hit/record dict or a string")
    if not isinstance(hit.text, str) or not hit.text.strip():
        raise _quote_error(value, "there is no text to look for")
    if len(hit.text) > MAX_QUOTE_CHARS:
        raise _quote_error(value, f"the text is longer than {MAX_QUOTE_CHARS} characters")
    return hit


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class Claim:
    """Where the hit says it is (record source, overridden by hints), before any checking."""

    unit: int | None = None
    start: int | None = None
    end: int | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_sources(cls, resolver: OpenOriginal, hit: Hit, hints: dict[str, Any]) -> Claim:
        overrides: dict[str, Any] = {k: hints[k] for k in ("page_index", "href", "spine_index", "fragment") if k in hints}
        src: dict[str, Any] = {**hit.source, **overrides}
        claim = cls(start=_int(src.get("char_start")), end=_int(src.get("char_end")))
        keep = ("page_index", "page_label", "bbox") if resolver.kind == "pdf" else ("href", "fragment", "spine_index")
        claim.fields = {k: src[k] for k in keep if src.get(k) is not None}
        try:
            claim.unit = claim._unit(resolver, src, hints)
        except BookAgentError as exc:
            if exc.code not in ("source.original_corrupt", "source.original_missing"):
                if any(k in hints for k in ("page_index", "href", "spine_index")):
                    raise  # the caller's own hint is bad input
                claim.warnings.append(f"the record's location is unusable ({exc.code}): {exc.message}")
        return claim

    def _unit(self, resolver: OpenOriginal, src: dict[str, Any], hints: dict[str, Any]) -> int | None:
        if resolver.kind == "pdf":
            if src.get("page_index") is None:
                return None
            return resolver.pdf().check_page(src["page_index"])
        if src.get("href") is not None:
            item, _ = resolver.epub().resolve_href(src["href"])
            return item.index if item.index >= 0 else None
        index = _int(src.get("spine_index"))
        return index if index is not None and 0 <= index < len(resolver.epub().spine) else None


def _markdown_span(resolver: OpenOriginal, hit: Hit, key: str) -> tuple[dict[str, int] | None, str]:
    s, e = _int(hit.md_start), _int(hit.md_end)
    given = {"start": s, "end": e} if s is not None and e is not None else None
    md = resolver.markdown_text()
    if md is None:
        return given, "unchecked"
    if s is not None and e is not None and 0 <= s <= e <= len(md) and md[s:e] == hit.text:
        return given, "verified"
    found = find_exact(md, hit.text, s)
    if found is None:
        found = find_normalized(resolver.markdown_normalized(), key, s)
    if found is not None:
        return {"start": found.start, "end": found.end}, "corrected" if given else "found"
    return given, "unverified" if given else "not_found"


def build_locator(resolver: OpenOriginal, hit: Hit, claim: Claim) -> dict[str, Any]:
    key = normalize_key(hit.text)  # once: a quotation may be 100,000 characters
    md_span, md_status = _markdown_span(resolver, hit, key)
    loc: dict[str, Any] = {"book_id": resolver.book_id, "kind": resolver.kind, "record_id": hit.record_id}
    warnings = list(claim.warnings)
    try:
        units = resolver.units()
        found = find_passage(units, hit.text, key, claim.unit, claim.start)
    except BookAgentError as exc:
        if exc.code not in ("source.original_corrupt", "source.original_missing"):
            raise
        # the original cannot be read: all we have is what the record says
        method = "record-metadata" if claim.fields else "unverified"
        loc.update(claim.fields, char_start=claim.start, char_end=claim.end, markdown_span=md_span,
                   verification={"method": method, "score": None, "stage": "none", "threshold": FUZZY_THRESHOLD,
                                 "corrected": {}, "markdown": md_status},
                   warnings=[*warnings, f"{exc.code}: {exc.message}"])
        return loc
    verification: dict[str, Any] = {"method": "unverified", "score": round(found.best_score, 4), "stage": found.stage,
                                    "threshold": FUZZY_THRESHOLD, "corrected": {}, "markdown": md_status}
    if (found.unit is None or found.match is None) and hit.quotation:
        raise _not_found(resolver, hit.text, found.best_score)
    if found.unit is None or found.match is None:
        loc.update(claim.fields, char_start=claim.start, char_end=claim.end)
        warnings.append("the passage was not found in the original's text; the location is the record's claim")
    else:
        unit, match = found.unit, found.match
        verification.update(method=match.method, score=round(match.score, 4))
        place = _place(resolver, unit, match.start, match.end, claim)
        cfi_check = place.pop("_cfi", None)
        if cfi_check is not None:  # EPUB: whether the CFI resolved back to the passage (contracts/sources.md)
            verification["cfi"] = cfi_check["cfi"]
            if cfi_check.get("why"):
                warnings.append(f"no EPUB CFI: {cfi_check['why']}")
        loc.update(place)
        loc.update(char_start=match.start, char_end=match.end)
        field_name = "page_index" if resolver.kind == "pdf" else "spine_index"
        if claim.unit is not None and unit != claim.unit:
            verification["corrected"][field_name] = {"claimed": claim.unit, "found": unit}
        if claim.start is not None and (claim.start, claim.end) != (match.start, match.end):
            verification["corrected"]["char_range"] = {"claimed": [claim.start, claim.end], "found": [match.start, match.end]}
    loc.update(markdown_span=md_span, verification=verification, warnings=warnings)
    return loc


def _not_found(resolver: OpenOriginal, text: str, best: float) -> BookAgentError:
    return BookAgentError(
        "source.quote_not_found",
        f"this quotation was not found in the original of {resolver.book_id!r}: no exact or normalised match, "
        + (f"and the closest approximate one scores {best:.2f}, below the {FUZZY_THRESHOLD} threshold" if best > 0
           else "and no approximate one"),
        details={"book_id": resolver.book_id, "quote": text[:200], "best_score": round(best, 4),
                 "threshold": FUZZY_THRESHOLD},
        remediation="check the wording against the book (quote its own words, not a paraphrase), or search first "
                    f"(`book-agent search {resolver.book_id} \"...\"` / the search tool) and locate a hit or record",
    )


def _place(resolver: OpenOriginal, unit: int, start: int, end: int, claim: Claim) -> dict[str, Any]:
    if resolver.kind == "pdf":
        pdf = resolver.pdf()
        label = pdf.page_label(unit) or (claim.fields.get("page_label") if unit == claim.unit else None)
        if label is None:
            label = resolver.record_page_label(unit)
        return {"page_index": unit, "page_label": label, "bbox": pdf.bbox(unit, start, end)}
    epub = resolver.epub()
    item = epub.spine[unit]
    chapter = epub.chapter(item)
    cfi = epub.cfi(item, start, end)
    return {"href": item.href, "spine_index": item.index,
            "fragment": nearest_fragment(chapter.fragments, chapter.anchors, start, end, claim.fields.get("fragment")),
            "epub_cfi": cfi["epub_cfi"], "epub_cfi_start": cfi["epub_cfi_start"],
            "_cfi": {k: v for k, v in cfi.items() if k in ("cfi", "why")}}


def nearest_fragment(fragments: dict[str, int], anchors: dict[str, tuple[int, int]], start: int, end: int,
                     claimed: Any) -> str | None:
    """The id to cite for the span [start, end): the record's own fragment when it is a
    block-level anchor whose block holds the whole span; else the nearest block-level anchor
    (paragraph, heading, section) at or before the span, so never a note marker when such an
    anchor exists; else the nearest id of any kind (it still positions a reader)."""
    if isinstance(claimed, str) and claimed in anchors:
        lo, hi = anchors[claimed]
        if lo <= start and end <= hi:
            return claimed
    before = [(lo, fid) for fid, (lo, _) in anchors.items() if lo <= start]
    if not before:
        before = [(offset, fid) for fid, offset in fragments.items() if offset <= start]
    if not before:
        return None
    best = max(offset for offset, _ in before)
    tied = [fid for offset, fid in before if offset == best]
    return claimed if claimed in tied else tied[-1]  # the innermost (a paragraph rather than its section)
