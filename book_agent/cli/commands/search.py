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

    # Book text and queries are printed literally: "[/i]" in a record is text, not markup. Nothing
    # is cut at the terminal's width (80 columns when piped): every line wraps instead.
    console = Console(highlight=False, soft_wrap=False)
    for line in render_lines(result):
        console.print(line, overflow="fold")


def render_lines(result: dict[str, Any]) -> list[Any]:
    """The human layout, line by line (rich Texts): a header, each hit's place and scores on
    lines of their own (never in a panel's border, where the width would cut them), its text."""
    from rich.rule import Rule
    from rich.text import Text

    hits = result["hits"]
    lines: list[Any] = [Text.assemble((result["query"], "bold"), f"  ({len(hits)} {'hit' if len(hits) == 1 else 'hits'}; "
                                      f"channels: {channel_summary(result['channels'])})")]
    lines += [Text.assemble(("warning: ", "yellow"), str(warning)) for warning in result["warnings"]]
    for hit in hits:
        where = " > ".join(hit["headings"]) or "-"
        text = hit["text"] if len(hit["text"]) <= 600 else hit["text"][:600] + " ..."
        scores = ", ".join(f"{k} {v:.3f}" for k, v in hit["scores"].items() if isinstance(v, (int, float)))
        lines.append(Rule(style="dim"))
        lines.append(Text.assemble((f"#{hit['rank']} {hit['evidence_id']}", "bold"), f"  [{where}]"))
        lines.append(Text.assemble(("   at ", "dim"), place_of(hit["source_locator"]), ("   scores ", "dim"), scores))
        lines.append(Text(text))
    tip = _visual_tip(result)
    if tip:
        lines.append(Text.assemble(("tip: ", "cyan"), tip))
    return lines


def channel_summary(channels: dict[str, Any]) -> str:
    """The channels that weigh in the fusion; one that ran with weight 0 is named as such
    (a vector channel a Chinese query gives no weight is not an answer's source)."""
    weighed = [n for n, info in channels.items() if info.get("ran") and info.get("weight", 1) != 0]
    idle = [n for n, info in channels.items() if info.get("ran") and info.get("weight", 1) == 0]
    return (", ".join(weighed) or "none") + "".join(f" ({name} ran, weight 0)" for name in idle)


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
