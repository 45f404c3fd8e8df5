"""Commands that read the book itself: read, markdown, skill, locate, source, render.

Each calls the BookAgent method of the same role and prints its dict (`--json`: exactly
that dict). Only typer and the standard library are imported at module level.
"""

from __future__ import annotations

import math
from typing import Any

import typer

from book_agent.cli.common import agent, emit
from book_agent.cli.output import argument_error, load_json_argument
from book_agent.domain.errors import BookAgentError
from book_agent.domain.limits import DEFAULT_DPI, DEFAULT_MAX_CHARS, DPI_RANGE, MAX_CHARS_LIMIT


def register(app: typer.Typer) -> None:
    app.command("read")(read)
    app.command("markdown")(markdown)
    app.command("skill")(skill)
    app.command("locate")(locate)
    app.command("source")(source)
    # a negative page index is bad input with its own error, not an unknown option "-1"
    app.command("render", context_settings={"ignore_unknown_options": True})(render)


def read(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    record_id: str = typer.Argument(None, help="A record id (from a search hit), or --record."),
    record: str = typer.Option(None, "--record", help="The record id (as RECORD_ID)."),
    around: int = typer.Option(None, "--around", help="Also the N records before and after it, in reading order."),
) -> None:
    """One record of the book (full text, headings, source, book.md span), or its neighbours with --around."""
    from book_agent.cli.commands.contents import render_around

    if (record_id is None) == (record is None):
        raise BookAgentError("cli.usage", "give the record id once: RECORD_ID or --record",
                             remediation="e.g. book-agent read BOOK --record r0001 --around 2")
    wanted = record_id if record_id is not None else record
    if around is not None:
        emit(ctx, agent(ctx).read_around(book, wanted, around), render_around)
        return
    emit(ctx, agent(ctx).read_entry(book, wanted), _render_record)


def markdown(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    record: str = typer.Option(None, "--record", help="Read this record's span of book.md."),
    context: int = typer.Option(500, "--context", help="Characters of context around a record (0-20000)."),
    start: int = typer.Option(None, "--start", help="Start of a character range of book.md."),
    end: int = typer.Option(None, "--end", help="End (exclusive) of a character range of book.md."),
    heading: str = typer.Option(None, "--heading", help="Read the section under this heading."),
) -> None:
    """Read book.md: a record's span with context, a character range, or a heading's section."""
    result = agent(ctx).read_markdown(book, record_id=record, start=start, end=end, heading=heading,
                                      context_chars=context)
    emit(ctx, result, _render_markdown)


def skill(ctx: typer.Context, book: str = typer.Argument(..., help="A registered book_id.")) -> None:
    """The book's SKILL.md (front matter and body)."""
    emit(ctx, agent(ctx).get_skill(book), _render_skill)


def locate(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    record: str = typer.Option(None, "--record", help="Locate this record."),
    quote: str = typer.Option(None, "--quote", help="Locate this quotation."),
    hit_json: str = typer.Option(None, "--hit-json", help="A JSON file holding a search hit ('-' for stdin)."),
    page: int = typer.Option(None, "--page", help="Hint: look on this 0-based page first."),
    href: str = typer.Option(None, "--href", help="Hint: look in this EPUB document first."),
) -> None:
    """Find a hit, record or quotation in the original and verify it (exact/normalized/fuzzy)."""
    given = [v for v in (record, quote, hit_json) if v is not None]
    if len(given) != 1:
        raise BookAgentError("cli.usage", "give exactly one of --record, --quote, --hit-json",
                             remediation="e.g. book-agent locate BOOK --record r0001")
    target: Any = quote
    if record is not None:
        target = {"record_id": record}
    elif hit_json is not None:
        target = _read_json(hit_json, "hit")
    hints = {k: v for k, v in (("page_index", page), ("href", href)) if v is not None}
    emit(ctx, agent(ctx).locate_source(book, target, hints=hints or None), _render_locator)


def source(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    locator_json: str = typer.Option(None, "--locator-json", help="A JSON file holding a locator ('-' for stdin)."),
    max_chars: int = typer.Option(DEFAULT_MAX_CHARS, "--max-chars", help=f"At most this many characters (1-{MAX_CHARS_LIMIT})."),
    page_label: str = typer.Option(None, "--page-label", help="A PDF page by its printed label (e.g. 55, iv)."),
    cfi: str = typer.Option(None, "--cfi", help="An EPUB position as a reader app gives it: epubcfi(...)."),
) -> None:
    """The original's own text at a locator (PDF page via PDFium, EPUB chapter via selectolax)."""
    given = [v for v in (locator_json, page_label, cfi) if v is not None]
    if len(given) != 1:
        raise BookAgentError("cli.usage", "give exactly one of --locator-json, --page-label, --cfi",
                             remediation="e.g. book-agent source BOOK --page-label 55, or --cfi 'epubcfi(/6/4!/4/2/1:0)'")
    if locator_json is not None:
        locator = _read_json(locator_json, "locator")
    else:
        locator = {"page_label": page_label} if page_label is not None else {"epub_cfi": cfi}
    emit(ctx, agent(ctx).read_source(book, locator, max_chars=max_chars), _render_source)


def render(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    page_index: int = typer.Argument(None, help="0-based page index (or --page-label)."),
    clip: str = typer.Option(None, "--clip", help="x0,y0,x1,y1 in PDF points (origin bottom-left)."),
    dpi: int = typer.Option(DEFAULT_DPI, "--dpi", help=f"Resolution ({DPI_RANGE[0]}-{DPI_RANGE[1]})."),
    page_label: str = typer.Option(None, "--page-label", help="The page by its printed label (e.g. 55, iv)."),
    record: list[str] = typer.Option(None, "--record", help="Highlight this record's passage (repeatable)."),
    quote: list[str] = typer.Option(None, "--quote", help="Highlight this quotation (repeatable)."),
) -> None:
    """Render a PDF page (or a clip of it) to a PNG in the runtime dir, passages highlighted; prints its path."""
    if page_index is None and page_label is None and not record and not quote:
        raise BookAgentError("cli.usage", "give a PAGE_INDEX, --page-label, or passages to highlight (--record/--quote)",
                             remediation="e.g. book-agent render BOOK 0, or book-agent render BOOK --record r0001")
    result = agent(ctx).render_page(book, page_index, clip=_parse_clip(clip) if clip else None, dpi=dpi,
                                    page_label=page_label, record_ids=record or None, quotes=quote or None)
    emit(ctx, result, _render_render)


def _read_json(name: str, what: str) -> Any:
    try:
        value = load_json_argument(name)
    except (OSError, ValueError) as exc:
        raise argument_error(exc, name, "cli.bad_json", f"cannot read a JSON {what} from {name}",
                             f"pass a file holding a JSON object ({what}), or - for stdin") from exc
    if not isinstance(value, dict):
        raise BookAgentError("cli.bad_json", f"the {what} must be a JSON object",
                             remediation=f"pass the {what} object as printed by --json")
    return value


def _parse_clip(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 4 or not all(math.isfinite(v) for v in values):
        raise BookAgentError("source.clip_invalid", f"--clip {text!r} is not four numbers x0,y0,x1,y1",
                             remediation="e.g. --clip 72,600,540,720 (PDF points, origin bottom-left)")
    return values


# -- human output -------------------------------------------------------------------------
# Book text is printed literally: no rich markup, highlighting or emoji codes (a record may
# hold "[/i]" or ":warning:"), and no re-wrapping (soft_wrap), so what is printed is the book's.


def _console() -> Any:
    from rich.console import Console

    return Console(markup=False, highlight=False, emoji=False, soft_wrap=True)


def _dim(console: Any, line: str) -> None:
    console.print(line, style="dim")


def _marked(before: str, span: str, after: str, around: str = "", cut: bool = False) -> Any:
    """before »span« after, the span in bold (the markers survive plain, unstyled output);
    `cut`: the span goes on past what is shown, so it ends in "…" instead of "«"."""
    from rich.text import Text

    text = Text(before, style=around)
    text.append("»")
    text.append(span, style="bold")
    text.append("…" if cut else "«")
    text.append(after, style=around)
    return text


def _place(loc: dict[str, Any]) -> str:
    """Where a locator/record source points: `page_index N (page label L)` or `href#fragment`."""
    if loc.get("page_index") is not None:
        label = loc.get("page_label")
        return f"page_index {loc['page_index']}" + (f" (page label {label})" if label not in (None, "") else "")
    href = loc.get("href")
    if href is None:
        return "?"
    place = str(href) + (f"#{loc['fragment']}" if loc.get("fragment") and "#" not in str(href) else "")
    return place + (f" (spine_index {loc['spine_index']})" if loc.get("spine_index") is not None else "")


def _chars(data: dict[str, Any]) -> str:
    if data.get("char_start") is None:
        return ""
    return f"  chars {data['char_start']}..{data.get('char_end')}"


def _render_record(rec: dict[str, Any]) -> None:
    console = _console()
    console.print(f"{rec.get('evidence_id') or rec.get('record_id')}", style="bold")
    if rec.get("headings"):
        console.print("headings: " + " > ".join(str(h) for h in rec["headings"]))
    src = rec.get("source_locator") or rec.get("source") or {}
    if src:
        console.print(f"source: {_place(src)}{_chars(src)}")
    span = rec.get("markdown_span") or {}
    if span.get("start") is not None:
        console.print(f"book.md: chars {span['start']}..{span.get('end')}")
    console.print("")
    console.print(str(rec.get("text") or ""))


def _render_markdown(result: dict[str, Any]) -> None:
    console = _console()
    span = result.get("markdown_span") or {}
    where = f"book.md chars {span.get('start')}..{span.get('end')} of {result.get('markdown_chars')}"
    if result.get("mode") == "heading":
        _dim(console, f"heading {result.get('heading')!r} (level {result.get('level')}), {where}")
    elif result.get("mode") == "record":
        _dim(console, f"record {result.get('record_id')}, {where}, context {result.get('context_chars')} chars")
    else:
        _dim(console, where)
    if result.get("headings"):
        _dim(console, "headings: " + " > ".join(str(h) for h in result["headings"]))
    text = str(result.get("text") or "")
    if result.get("mode") == "record":
        console.print(_marked(str(result.get("context_before") or ""), text, str(result.get("context_after") or ""),
                              around="dim"))
    else:
        console.print(text)
    if result.get("truncated"):
        console.print("(truncated: the section is longer than shown; read the rest with --start/--end)", style="yellow")
    for other in result.get("other_matches") or []:
        _dim(console, f"also matches: {other.get('heading')!r} at {other.get('start')}")


def _render_skill(result: dict[str, Any]) -> None:
    import sys

    text = str(result.get("text") or "")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def _render_source(result: dict[str, Any]) -> None:
    console = _console()
    lo, hi, total = result.get("window_start"), result.get("window_end"), result.get("text_chars")
    _dim(console, f"{_place(result)}{_chars(result)}  (text chars {lo}..{hi} of {total}, extracted by "
                  f"{result.get('extracted_by')})")
    text = str(result.get("text") or "")
    span = result.get("span_in_text")
    if isinstance(span, dict) and 0 <= span.get("start", -1) <= span.get("end", -1) <= len(text):
        cut = isinstance(result.get("char_end"), int) and isinstance(hi, int) and result["char_end"] > hi
        console.print(_marked(text[: span["start"]], text[span["start"] : span["end"]], text[span["end"] :], cut=cut))
    else:
        console.print(text)
    if result.get("truncated"):
        console.print(f"(truncated: showing characters {lo}..{hi} of {total}; use --max-chars for more)",
                      style="yellow")
    if result.get("note"):
        console.print(f"note: {result['note']}", style="yellow")
    for image in result.get("images") or []:
        _dim(console, f"image: {image}")


def _render_locator(loc: dict[str, Any]) -> None:
    console = _console()
    check = loc.get("verification") or {}
    console.print(f"{_place(loc)}{_chars(loc)}  verified: {check.get('method')} (score {check.get('score')})")
    span = loc.get("markdown_span") or {}
    if span.get("start") is not None:
        _dim(console, f"book.md chars {span['start']}..{span.get('end')} ({check.get('markdown')})")
    if loc.get("bbox"):
        _dim(console, f"bbox {loc['bbox']} (a render --clip)")
    for key, change in (check.get("corrected") or {}).items():
        console.print(f"corrected {key}: {change}", style="yellow")
    for warning in loc.get("warnings") or []:
        console.print(f"warning: {warning}", style="yellow")
    book = loc.get("book_id")
    _dim(console, f"read it: book-agent --json locate {book} ... > loc.json; book-agent source {book} --locator-json loc.json")


def _render_render(result: dict[str, Any]) -> None:
    console = _console()
    console.print(str(result["path"]))
    _dim(console, f"{_place(result)}: {result['width_px']}x{result['height_px']} px at {result['dpi']} dpi"
                  + (" (cached)" if result.get("cached") else "")
                  + "".join(f"; {note}" for note in result.get("notes") or []))
    for mark in result.get("highlights") or []:
        _dim(console, f"highlighted {mark.get('record_id') or repr(mark.get('quote'))}: {len(mark['boxes'])} line box(es)")
    for mark in result.get("highlights_elsewhere") or []:
        _dim(console, f"on another page: {mark.get('record_id') or repr(mark.get('quote'))} (page_index {mark.get('page_index')})")
