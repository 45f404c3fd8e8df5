"""The search command."""

from __future__ import annotations

from typing import Any

import typer

from book_agent.cli.common import agent, emit
from book_agent.cli.search_args import parse_hints, read_vector
from book_agent.domain.limits import DEFAULT_TOP_K, MAX_TOP_K


def register(app: typer.Typer) -> None:
    app.command("search")(search)


def search(
    ctx: typer.Context,
    book: str = typer.Argument(..., metavar="BOOK", help="A registered book_id, a comma-separated list of them (a,b), or @all (every registered book)."),
    query: str = typer.Argument(..., metavar="QUERY", help="What to look for, in any language."),
    top_k: int = typer.Option(DEFAULT_TOP_K, "--top-k", "-k", metavar="N", help=f"How many hits (1-{MAX_TOP_K})."),
    strict: bool = typer.Option(False, "--strict", help="Fail instead of answering from fewer channels."),
    query_vector: str = typer.Option(None, "--query-vector", metavar="FILE", help="A JSON array file ('-' for stdin): a query vector made with the package's model."),
    hint: list[str] = typer.Option(None, "--hint", metavar="KEY=VALUE", help="key=value hints (repeatable), e.g. visual=true."),
) -> None:
    """Hybrid search: lexical (BM25) and vector channels fused; every hit cites its place in the book."""
    vector = read_vector(query_vector) if query_vector else None
    hints = parse_hints(hint or [])
    result = agent(ctx).search(book, query, top_k=top_k, strict=strict, query_vector=vector, hints=hints)
    emit(ctx, result, _render)


def _render(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    # Book text and queries are printed literally: "[/i]" in a record is text, not markup.
    console = Console(highlight=False)
    channels = result["channels"]
    ran = [name for name, info in channels.items() if info.get("ran")]
    hits = result["hits"]
    console.print(Text(result["query"], style="bold"), Text(
        f"  ({len(hits)} {'hit' if len(hits) == 1 else 'hits'}; channels: {', '.join(ran) or 'none'})"))
    for warning in result["warnings"]:
        console.print(Text("warning: ", style="yellow"), Text(str(warning)))
    for hit in hits:
        where = " > ".join(hit["headings"]) or "-"
        text = hit["text"] if len(hit["text"]) <= 600 else hit["text"][:600] + " ..."
        scores = ", ".join(f"{k} {v:.3f}" for k, v in hit["scores"].items() if isinstance(v, (int, float)))
        console.print(Panel(Text(text), title=Text(f"#{hit['rank']} {hit['evidence_id']}  [{where}]"),
                            subtitle=Text(f"{place_of(hit['source_locator'])}  ({scores})"),
                            title_align="left", subtitle_align="right"))
    tip = _visual_tip(result)
    if tip:
        console.print(Text("tip: ", style="cyan"), Text(tip))


def place_of(locator: dict[str, Any]) -> str:
    """Where a locator points, as the other commands take it: page_index is 0-based."""
    if "page_index" in locator:
        label = locator.get("page_label")
        return f"page_index {locator['page_index']}" + (f" (page label {label})" if label else "")
    fragment = locator.get("fragment")
    return str(locator.get("href", "")) + (f"#{fragment}" if fragment else "")


def _visual_tip(result: dict[str, Any]) -> str | None:
    advice = result.get("visual_fallback", {})
    if not (advice.get("recommended") or advice.get("action") == "read_source") or not result["hits"]:
        return None
    first = result["hits"][0]
    locator, book = first["source_locator"], first.get("book_id", result["book_id"])  # a library's hit names its book
    if "page_index" not in locator or not advice.get("recommended"):
        return ("this looks like a question about a figure or table, and this book has no fixed pages: "
                f"read the passage in the original with `book-agent locate {book} "
                f"--record {result['hits'][0]['record_id']}` then `book-agent source`")
    return ("this looks like a question about a figure or table: see the page with "
            f"`book-agent render {book} {locator['page_index']}`")
