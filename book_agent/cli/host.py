"""`book-agent host ...`: install a registered book into Codex, Trae, WorkBuddy or Cherry Studio.

    book-agent host detect HOST
    book-agent host plan|install|verify|uninstall|instructions HOST BOOK

install and uninstall are dry runs (the plan: paths and unified diffs) unless --apply is
given. The host's home is --home, else the host's own variable (CODEX_HOME), else the
user's home. The MCP server is registered with the exact argv
`[this python, -m, book_agent, --data-dir, DATA, mcp, BOOK_ID]` and, where the host can
forward variable names (Codex `env_vars`), the book's configured auth_env: never a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from book_agent.cli.common import agent, emit

# (ctx, book_id) -> BookAgent.resolve()'s dict plus "data_dir"; tests pass their own.
Resolver = Callable[[typer.Context, str], dict[str, Any]]

HOST_HELP = "codex, trae, workbuddy or cherry-studio."
EDITION_HELP = "Trae edition: intl (Trae) or cn (Trae CN)."
HOME_HELP = "Use this folder as the user's home for the host's files (a sandbox)."

# the arguments and options the host commands share
HostArg = Annotated[str, typer.Argument(help=HOST_HELP)]
BookArg = Annotated[str, typer.Argument(help="A registered book_id.")]
EditionOpt = Annotated[str | None, typer.Option("--edition", help=EDITION_HELP)]
HomeOpt = Annotated[str | None, typer.Option("--home", help=HOME_HELP)]
ApplyOpt = Annotated[bool, typer.Option("--apply", help="Write the changes (else a dry run).")]
SkillDirOpt = Annotated[str | None, typer.Option("--skill-dir", help="Install skills here instead.")]
InstalledSkillDirOpt = Annotated[str | None, typer.Option("--skill-dir", help="Skills were installed here.")]


def default_resolver(ctx: typer.Context, book: str) -> dict[str, Any]:
    book_agent = agent(ctx)
    return {**book_agent.resolve(book), "data_dir": str(book_agent.data_dir)}


def host_adapter(host: str, edition: str | None, home: str | None, data_dir: str | None) -> Any:
    from book_agent.adapters.hosts import HostAdapter

    return HostAdapter(host, home=home, data_dir=data_dir, edition=edition)


class _Book:
    """What the host commands need of a registered book: its package, auth_env and data dir."""

    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve

    def parts(self, ctx: typer.Context, book: str) -> tuple[dict[str, Any], str | None, str]:
        resolved = self.resolve(ctx, book)
        auth_env = ((resolved.get("config") or {}).get("network") or {}).get("auth_env")
        return resolved["package"], auth_env, resolved["data_dir"]

    def plan_or_apply(self, ctx: typer.Context, operation: str, host: str, book: str, edition: str | None,
                      home: str | None, skill_dir: str | None, apply: bool) -> None:
        from pathlib import Path

        package, auth_env, data_dir = self.parts(ctx, book)
        target = host_adapter(host, edition, home, data_dir)
        folder = Path(skill_dir) if skill_dir else None
        if operation == "uninstall":
            result = target.uninstall(package, folder, apply=apply)
        else:
            result = target.install(package, None, apply=apply, skill_dir=folder, auth_env=auth_env)
        emit(ctx, result, render_plan)


def register(app: typer.Typer, resolver: Resolver | None = None) -> None:
    books = _Book(resolver or default_resolver)
    group = typer.Typer(help="Install a book into an AI host (MCP server + skills).", no_args_is_help=True)
    _add_change_commands(group, books)
    _add_check_commands(group, books)
    app.add_typer(group, name="host")


def _add_change_commands(group: typer.Typer, books: _Book) -> None:
    """detect, then plan, install, uninstall (dry runs unless --apply)."""

    @group.command("detect")
    def detect(ctx: typer.Context, host: HostArg, edition: EditionOpt = None,
               home: HomeOpt = None) -> None:
        """Whether the host seems installed, and where its config and skills would go."""
        emit(ctx, host_adapter(host, edition, home, None).inspect())

    @group.command("plan")
    def plan(ctx: typer.Context, host: HostArg, book: BookArg, edition: EditionOpt = None,
             home: HomeOpt = None, skill_dir: SkillDirOpt = None) -> None:
        """Show exactly what `install` would change (paths and unified diffs). Writes nothing."""
        books.plan_or_apply(ctx, "install", host, book, edition, home, skill_dir, False)

    @group.command("install")
    def install(ctx: typer.Context, host: HostArg, book: BookArg, apply: ApplyOpt = False,
                edition: EditionOpt = None, home: HomeOpt = None,
                skill_dir: SkillDirOpt = None) -> None:
        """Register the book's MCP server and install its skills (a dry run without --apply)."""
        books.plan_or_apply(ctx, "install", host, book, edition, home, skill_dir, apply)

    @group.command("uninstall")
    def uninstall(ctx: typer.Context, host: HostArg, book: BookArg, apply: ApplyOpt = False,
                  edition: EditionOpt = None, home: HomeOpt = None,
                  skill_dir: InstalledSkillDirOpt = None) -> None:
        """Remove our server entry and exactly the skill files we installed (a dry run without --apply)."""
        books.plan_or_apply(ctx, "uninstall", host, book, edition, home, skill_dir, apply)


def _add_check_commands(group: typer.Typer, books: _Book) -> None:
    """verify, instructions: they write nothing."""

    @group.command("verify")
    def verify(ctx: typer.Context, host: HostArg, book: BookArg, edition: EditionOpt = None,
               home: HomeOpt = None, skill_dir: InstalledSkillDirOpt = None) -> None:
        """Read back the server entry and the skill files: missing, modified or outdated."""
        from pathlib import Path

        package, auth_env, data_dir = books.parts(ctx, book)
        target = host_adapter(host, edition, home, data_dir)
        result = target.verify(package, None, Path(skill_dir) if skill_dir else None, auth_env=auth_env)
        emit(ctx, result)
        if not result["ok"]:
            raise typer.Exit(1)

    @group.command("instructions")
    def instructions(ctx: typer.Context, host: HostArg, book: BookArg, edition: EditionOpt = None,
                     home: HomeOpt = None) -> None:
        """How to install by hand (and Cherry Studio's deep link)."""
        package, auth_env, data_dir = books.parts(ctx, book)
        text = host_adapter(host, edition, home, data_dir).render_manual_instructions(package, auth_env=auth_env)
        emit(ctx, {"host": host, "instructions": text}, lambda d: print(d["instructions"], end=""))


def render_plan(plan: dict[str, Any]) -> None:
    verb = "done" if plan.get("applied") else "dry run"
    print(f"{plan['operation']} {plan['book_id']} -> {plan['host']} (server {plan['server_name']}): {verb}")
    for change in plan["changes"]:
        print(f"  {change['action']:9} {change['path']}")
        if change["diff"] and change["kind"] == "mcp_config":
            print("    " + change["diff"].rstrip("\n").replace("\n", "\n    "))
    for warning in plan["warnings"]:
        print(f"  note: {warning['message']}")
    for item in plan["unconfirmed"]:
        print(f"  unconfirmed: {item}")
    if plan.get("manual", {}).get("deeplink"):
        print(f"  deep link: {plan['manual']['deeplink']}")
    if not plan.get("applied") and plan.get("changed"):
        print("  (nothing written: add --apply)")
