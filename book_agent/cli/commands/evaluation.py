"""The eval command: how well each channel and the fusion find the relevant records."""

from __future__ import annotations

from typing import Any

import typer

from book_agent.cli.common import agent, emit


def register(app: typer.Typer) -> None:
    app.command("eval")(evaluate)


def evaluate(
    ctx: typer.Context,
    book: str = typer.Argument(..., metavar="BOOK", help="A registered book_id, a comma-separated list of them (a,b), or @all (every registered book)."),
    questions: str = typer.Argument(..., metavar="QUESTIONS.jsonl", help='JSON Lines: {"query": ..., "relevant": [record_id, ...] or {record_id: grade}}'),
    k: int = typer.Option(10, "--k", metavar="K", help="The k of recall@k."),
) -> None:
    """Report recall@k, MRR@10 and nDCG@10 for lexical only, vector only, plain RRF, RAGFlow's rule and hybrid, side by side."""
    emit(ctx, agent(ctx).evaluate(book, questions, k=k), _render)


def _render(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("channel", f"recall@{result['k']}", "MRR@10", "nDCG@10",
                  title=f"{result['book_id']}: {result['questions']} questions")
    for channel, scores in result["summary"].items():
        table.add_row(channel, f"{scores['recall@k']:.3f}", f"{scores['mrr@10']:.3f}", f"{scores['ndcg@10']:.3f}")
    console = Console()
    console.print(table)
    for warning in result.get("warnings") or []:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
    if result["vector_channel_ran"] < result["questions"]:
        console.print(f"[yellow]the vector channel ran for {result['vector_channel_ran']} of "
                      f"{result['questions']} questions[/yellow]")
