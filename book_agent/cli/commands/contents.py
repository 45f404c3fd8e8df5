"""Commands that navigate the book: `toc BOOK` (its table of contents) and the human output
of `read BOOK --record ID --around N` (the records before and after one, in reading order).

Only typer and the standard library are imported at module level (cli/main.py).
"""

from __future__ import annotations

from typing import Any

import typer

from book_agent.cli.common import agent, emit


def register(app: typer.Typer) -> None:
    app.command("toc")(toc)


def toc(ctx: typer.Context, book: str = typer.Argument(..., help="A registered book_id.")) -> None:
    """The book's table of contents (PDF outline or EPUB navigation), with the first record of each entry."""
    emit(ctx, agent(ctx).get_toc(book), render_toc)


def _console() -> Any:
    from rich.console import Console

    return Console(markup=False, highlight=False, emoji=False, soft_wrap=True)


def _where(entry: dict[str, Any]) -> str:
    if entry.get("target") == "none":
        return "(points nowhere)"
    if entry.get("page_index") is not None:
        label = entry.get("page_label")
        return f"page_index {entry['page_index']}" + (f" (page label {label})" if label else "")
    href = str(entry.get("href") or "")
    return href + (f"#{entry['fragment']}" if entry.get("fragment") else "")


def render_toc(result: dict[str, Any]) -> None:
    console = _console()
    if result.get("source") == "none":
        console.print(str(result.get("note") or "this book has no table of contents"))
        return
    console.print(f"{result.get('book_id')}: {result.get('entry_count')} entries ({result.get('source')})", style="dim")
    for entry in result.get("entries") or []:
        indent = "  " * (max(int(entry.get("level") or 1), 1) - 1)
        first = f"  first record {entry['first_record_id']}" if entry.get("first_record_id") else ""
        console.print(f"{indent}{entry.get('title')}  — {_where(entry)}{first}")


def render_around(result: dict[str, Any]) -> None:
    console = _console()
    console.print(f"{result.get('book_id')}: record {result.get('record_id')} (position {result.get('position')} of "
                  f"{result.get('record_count')}), {result.get('before')} before, {result.get('after')} after",
                  style="dim")
    for neighbour in result.get("records") or []:
        loc = neighbour.get("source_locator") or {}
        where = (f"page_index {loc['page_index']}" if loc.get("page_index") is not None
                 else f"{loc.get('href')}#{loc.get('fragment')}" if loc.get("href") else "?")
        marker = ">>" if neighbour.get("offset") == 0 else "  "
        console.print(f"\n{marker} [{neighbour.get('offset'):+d}] {neighbour.get('evidence_id')}  {where}", style="bold")
        console.print(str(neighbour.get("text") or ""))
