"""The search command."""

from __future__ import annotations

from typing import Any

import typer

from book_agent.cli.common import agent, emit
from book_agent.cli.search_args import parse_hints, read_vector


def register(app: typer.Typer) -> None:
    app.command("search")(search)


def search(
    ctx: typer.Context,
    book: str = typer.Argument(..., help="A registered book_id."),
    query: str = typer.Argument(..., help="What to look for, in any language."),
    top_k: int = typer.Option(6, "--top-k", "-k", help="How many hits (1-100)."),
    strict: bool = typer.Option(False, "--strict", help="Fail instead of answering from fewer channels."),
    query_vector: str = typer.Option(None, "--query-vector", help="A JSON array file ('-' for stdin): a query vector made with the package's model."),
    hint: list[str] = typer.Option(None, "--hint", help="key=value hints (repeatable), e.g. visual=true."),
) -> None:
    """Hybrid search: lexical (BM25) and vector channels fused; every hit cites its place in the book."""
    vector = read_vector(query_vector) if query_vector else None
    hints = parse_hints(hint or [])
    result = agent(ctx).search(book, query, top_k=top_k, strict=strict, query_vector=vector, hints=hints)
    emit(ctx, result, _render)


def _render(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.panel import Panel

    console = Console()
    channels = result["channels"]
    ran = [name for name, info in channels.items() if info.get("ran")]
    console.print(f"[bold]{result['query']}[/bold]  ({len(result['hits'])} hits; channels: {', '.join(ran) or 'none'})")
    for warning in result["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    for hit in result["hits"]:
        where = " > ".join(hit["headings"]) or "-"
        loc = hit["source_locator"]
        place = f"page {loc['page_index'] + 1}" if "page_index" in loc else loc.get("href", "")
        text = hit["text"] if len(hit["text"]) <= 600 else hit["text"][:600] + " ..."
        scores = ", ".join(f"{k} {v:.3f}" for k, v in hit["scores"].items() if isinstance(v, (int, float)))
        console.print(Panel(text, title=f"#{hit['rank']} {hit['evidence_id']}  [{where}]",
                            subtitle=f"{place}  ({scores})", title_align="left", subtitle_align="right"))
    if result.get("visual_fallback", {}).get("recommended"):
        console.print("[cyan]tip:[/cyan] this looks like a question about a figure or table: "
                      "`book-agent render BOOK PAGE_INDEX` shows the page")
