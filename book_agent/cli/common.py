"""What every command shares: the global options, output, and the agent it works on.

Commands return data through `emit`: with `--json` stdout gets exactly one JSON document;
otherwise a readable rendering. Errors are not handled here: commands raise
`BookAgentError` and `main.run` turns it into output in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from book_agent.cli.argv import GlobalOptions
from book_agent.cli.output import print_json

if TYPE_CHECKING:
    from book_agent.agent import BookAgent


def options(ctx: typer.Context) -> GlobalOptions:
    root = ctx.find_root()
    obj = root.obj
    return obj if isinstance(obj, GlobalOptions) else GlobalOptions()


def data_dir(ctx: typer.Context) -> Path | None:
    value = options(ctx).data_dir
    return Path(value).expanduser() if value else None


def agent(ctx: typer.Context) -> BookAgent:
    from book_agent.agent import build_agent

    root = ctx.find_root()
    existing = getattr(root, "_book_agent", None)
    if existing is None:
        existing = build_agent(data_dir(ctx))
        root._book_agent = existing  # type: ignore[attr-defined]
        root.call_on_close(existing.close)  # close SQLite/PDF handles when the command ends
    return existing


def json_mode(ctx: typer.Context) -> bool:
    return options(ctx).json


def emit(ctx: typer.Context, data: Any, human: Callable[[Any], None]) -> None:
    """Write a command's result: JSON with --json, else `human(data)`, a rendering laid out for
    people (never JSON: tests/integration/cli/test_cli_output_forms.py)."""
    if json_mode(ctx):
        print_json(data)
    else:
        human(data)
