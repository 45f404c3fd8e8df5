"""`book-agent plugins` (alias `rerankers`): the installed rerankers and whether they load.

JSON: {"rerankers": [{name, source, dist, version, value, builtin, loadable, error}]}.
"""

from __future__ import annotations

from typing import Any

import typer

from book_agent.cli.common import emit

HELP = "List installed rerankers (built-in and plug-ins): name, source, and whether they load."


def register(app: typer.Typer) -> None:
    app.command("plugins", help=HELP)(plugins_command)
    app.command("rerankers", help=HELP + " Same as `plugins`.", hidden=True)(plugins_command)


def plugins_command(
    ctx: typer.Context,
    no_load: bool = typer.Option(False, "--no-load", help="List only; do not import the factories."),
) -> None:
    from book_agent.bootstrap import installed_rerankers

    emit(ctx, {"rerankers": installed_rerankers(load=not no_load)}, _render)


def _render(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Rerankers (entry-point group book_agent.rerankers)")
    for column in ("name", "source", "factory", "loadable"):
        table.add_column(column)
    problems = []
    for row in data["rerankers"]:
        if row["loadable"] is None:
            state = "not checked"
        elif row["loadable"]:
            state = "yes"
        else:
            state = "no"
            problems.append(f"{row['name']} ({row['source']}): [{row['error']['code']}] {row['error']['message']}")
        table.add_row(row["name"], row["source"], row["value"], state)
    console = Console()
    console.print(table)
    for line in problems:  # full messages below the table, where rich will not wrap a code
        console.print(line, markup=False, highlight=False, soft_wrap=True)
