"""Commands that read the book itself: read, markdown, skill, locate, source, render.

Each calls the BookAgent method of the same role and prints its dict (`--json`: exactly
that dict). Only typer and the standard library are imported at module level.
"""

from __future__ import annotations

import math
from typing import Any

import typer

from book_agent.cli.common import agent, emit
from book_agent.cli.output import load_json_argument
from book_agent.domain.errors import BookAgentError


def register(app: typer.Typer) -> None:
    app.command("read")(read)
    app.command("markdown")(markdown)
    app.command("skill")(skill)
    app.command("locate")(locate)
    app.command("source")(source)
    app.command("render")(render)


def read(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    record_id: str = typer.Argument(..., help="A record id (from a search hit)."),
) -> None:
    """One record of the book: full text, headings, source and book.md span."""
    emit(ctx, agent(ctx).read_entry(book, record_id), _render_text)


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
    emit(ctx, result, _render_text)


def skill(ctx: typer.Context, book: str = typer.Argument(..., help="A registered book_id.")) -> None:
    """The book's SKILL.md (front matter and body)."""
    emit(ctx, agent(ctx).get_skill(book), _render_text)


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
    locator_json: str = typer.Option(..., "--locator-json", help="A JSON file holding a locator ('-' for stdin)."),
    max_chars: int = typer.Option(12000, "--max-chars", help="At most this many characters (1-200000)."),
) -> None:
    """The original's own text at a locator (PDF page via PDFium, EPUB chapter via selectolax)."""
    locator = _read_json(locator_json, "locator")
    emit(ctx, agent(ctx).read_source(book, locator, max_chars=max_chars), _render_text)


def render(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    page_index: int = typer.Argument(..., help="0-based page index."),
    clip: str = typer.Option(None, "--clip", help="x0,y0,x1,y1 in PDF points (origin bottom-left)."),
    dpi: int = typer.Option(150, "--dpi", help="Resolution (18-1200)."),
) -> None:
    """Render a PDF page (or a clip of it) to a PNG in the runtime dir; prints its path."""
    result = agent(ctx).render_page(book, page_index, clip=_parse_clip(clip) if clip else None, dpi=dpi)
    emit(ctx, result, _render_render)


def _read_json(name: str, what: str) -> Any:
    try:
        value = load_json_argument(name)
    except (OSError, ValueError) as exc:
        raise BookAgentError("cli.bad_json", f"cannot read a JSON {what} from {name}: {exc}",
                             remediation=f"pass a file holding a JSON object ({what}), or - for stdin") from exc
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


def _render_text(result: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console()
    meta = {k: v for k, v in result.items() if k not in ("text", "body", "context_before", "context_after")
            and not isinstance(v, dict | list)}
    console.print(", ".join(f"{k}={v}" for k, v in meta.items()), style="dim", markup=False)
    body = result.get("text") if result.get("text") is not None else result.get("body", "")
    console.print(str(body), markup=False, highlight=False)
    if result.get("truncated"):
        console.print("(truncated: use --max-chars or a narrower locator)", style="yellow")


def _render_locator(loc: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console()
    check = loc.get("verification") or {}
    place = f"page {loc['page_index']}" if loc.get("page_index") is not None else loc.get("href") or "?"
    console.print(f"{place}  chars {loc.get('char_start')}..{loc.get('char_end')}  "
                  f"verified: {check.get('method')} (score {check.get('score')})", markup=False)
    if loc.get("bbox"):
        console.print(f"bbox {loc['bbox']}", markup=False)
    for key, change in (check.get("corrected") or {}).items():
        console.print(f"corrected {key}: {change}", style="yellow", markup=False)
    for warning in loc.get("warnings") or []:
        console.print(f"warning: {warning}", style="yellow", markup=False)


def _render_render(result: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console()
    console.print(result["path"], markup=False, highlight=False)
    console.print(f"{result['width_px']}x{result['height_px']} px at {result['dpi']} dpi"
                  + (" (cached)" if result.get("cached") else "")
                  + "".join(f"; {note}" for note in result.get("notes") or []), style="dim", markup=False)
