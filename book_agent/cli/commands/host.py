"""`book-agent host ...`: install a registered book (or a library) into Codex, Trae, WorkBuddy or Cherry Studio.

    book-agent host detect HOST
    book-agent host plan|install|verify|uninstall|instructions HOST BOOK

BOOK is a book_id, a,b or @all: a list or @all installs ONE library server (`mcp a,b`,
`mcp @all`) and one library skill (contracts/hosts.md, "Libraries").

install and uninstall are dry runs (the plan: paths and unified diffs) unless --apply is
given. The host's home is --home, else the host's own variable (CODEX_HOME), else the
user's home. The MCP server is registered with the exact argv
`[this python, -m, book_agent, --data-dir, DATA, mcp, BOOK]` and, where the host can
forward variable names (Codex `env_vars`), the book's configured auth_env: never a value
(a library forwards none: the plan's warnings name the books' variables).

`--url URL [--token-env NAME]` installs a served library instead (`book-agent serve` on a
team machine): the host connects to URL over streamable HTTP (BOOK defaults to @all); only
the NAME of the token's variable is written, where the host can read one (Codex's
`bearer_token_env_var`), never a token. Plain http only to a loopback address, unless
--allow-insecure-http. The entry has the library's usual name, so it replaces a stdio
install of the same library (and the other way round).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from book_agent.cli.common import agent, data_dir, emit

if TYPE_CHECKING:
    from book_agent.services.hosts import Hosts

# (ctx, book_id) -> BookAgent.resolve()'s dict plus "data_dir"; tests pass their own.
Resolver = Callable[[typer.Context, str], dict[str, Any]]
HostsOf = Callable[[typer.Context], "Hosts"]

HOST_HELP = "codex, trae, workbuddy or cherry-studio."
EDITION_HELP = "Trae edition: intl (Trae) or cn (Trae CN)."
HOME_HELP = "Use this folder as the user's home for the host's files (a sandbox)."

# the arguments and options the host commands share
HostArg = Annotated[str, typer.Argument(help=HOST_HELP)]
BOOK_HELP = ("A book_id, a,b or @all: a registered book, or a library of them "
             "(these books, or every registered book) served by one server with one skill.")
OptionalBookArg = Annotated[str | None, typer.Argument(
    help=BOOK_HELP + " With --url: @all (the default) or a,b, the books the skill names (the server decides "
    "what it serves).",
    show_default=False)]
UrlOpt = Annotated[str | None, typer.Option(
    "--url", metavar="URL", help="A served library's MCP endpoint (`book-agent serve`), e.g. "
    "https://books.example.org/mcp: the host connects to it over streamable HTTP instead of starting a server.")]
TokenEnvOpt = Annotated[str | None, typer.Option(
    "--token-env", metavar="NAME", help="With --url: the environment variable the host reads the bearer token "
    "from (Codex only; its value is never read or written).")]
InsecureOpt = Annotated[bool, typer.Option(
    "--allow-insecure-http", help="With --url: accept plain http to another machine (the token crosses the "
    "network in clear: a trusted network only).")]
EditionOpt = Annotated[str | None, typer.Option("--edition", help=EDITION_HELP)]
HomeOpt = Annotated[str | None, typer.Option("--home", help=HOME_HELP)]
ApplyOpt = Annotated[bool, typer.Option("--apply", help="Write the changes (else a dry run).")]
ReplaceOpt = Annotated[bool, typer.Option("--replace", help="Re-point a server of the same name installed from "
                                          "another data dir (else refused: host.server_conflict).")]
SkillDirOpt = Annotated[str | None, typer.Option("--skill-dir", help="Install skills here instead.")]
InstalledSkillDirOpt = Annotated[str | None, typer.Option("--skill-dir", help="Skills were installed here.")]


def default_hosts(ctx: typer.Context) -> Hosts:
    return agent(ctx).hosts


def resolver_hosts(resolve: Resolver) -> Callable[[typer.Context], Hosts]:
    """Host use cases over another way of resolving books (tests pass their own)."""
    from book_agent.bootstrap import host_adapter
    from book_agent.services.hosts import HostBook, Hosts

    def build(ctx: typer.Context) -> Hosts:
        def book(book_ref: str) -> HostBook:
            resolved = resolve(ctx, book_ref)
            auth_env = ((resolved.get("config") or {}).get("network") or {}).get("auth_env")
            return HostBook(resolved["package"], auth_env, resolved["data_dir"])

        return Hosts(host_adapter, book, data_dir(ctx))

    return build


def register(app: typer.Typer, resolver: Resolver | None = None) -> None:
    hosts: HostsOf = resolver_hosts(resolver) if resolver is not None else default_hosts
    group = typer.Typer(help="Install a book, or a library of books (a,b or @all), into an AI host "
                        "(MCP server + skills).", no_args_is_help=True)
    _add_change_commands(group, hosts)
    _add_check_commands(group, hosts)
    app.add_typer(group, name="host")


def _add_change_commands(group: typer.Typer, hosts: HostsOf) -> None:
    """detect, then plan, install, uninstall (dry runs unless --apply)."""

    @group.command("detect")
    def detect(ctx: typer.Context, host: HostArg, edition: EditionOpt = None,
               home: HomeOpt = None) -> None:
        """Whether the host seems installed, and where its config and skills would go."""
        from book_agent.cli.render_host import render_detect

        emit(ctx, hosts(ctx).detect(host, edition, home), render_detect)

    @group.command("plan")
    def plan(ctx: typer.Context, host: HostArg, book: OptionalBookArg = None, edition: EditionOpt = None,
             home: HomeOpt = None, skill_dir: SkillDirOpt = None, url: UrlOpt = None,
             token_env: TokenEnvOpt = None, allow_insecure_http: InsecureOpt = False,
             replace: ReplaceOpt = False) -> None:
        """Show exactly what `install` would change (paths and unified diffs). Writes nothing."""
        emit(ctx, hosts(ctx).install(host, book, False, edition, home, skill_dir, url=url, token_env=token_env,
                                     allow_insecure_http=allow_insecure_http, replace=replace), render_plan)

    @group.command("install")
    def install(ctx: typer.Context, host: HostArg, book: OptionalBookArg = None, apply: ApplyOpt = False,
                edition: EditionOpt = None, home: HomeOpt = None,
                skill_dir: SkillDirOpt = None, url: UrlOpt = None, token_env: TokenEnvOpt = None,
                allow_insecure_http: InsecureOpt = False, replace: ReplaceOpt = False) -> None:
        """Register the book's (or library's) MCP server and install its skills (a dry run without --apply).
        With --url: the served library's HTTP form."""
        emit(ctx, hosts(ctx).install(host, book, apply, edition, home, skill_dir, url=url, token_env=token_env,
                                     allow_insecure_http=allow_insecure_http, replace=replace), render_plan)

    @group.command("uninstall")
    def uninstall(ctx: typer.Context, host: HostArg, book: OptionalBookArg = None, apply: ApplyOpt = False,
                  edition: EditionOpt = None, home: HomeOpt = None,
                  skill_dir: InstalledSkillDirOpt = None, url: UrlOpt = None,
                  allow_insecure_http: InsecureOpt = False) -> None:
        """Remove our server entry (stdio or HTTP form) and exactly the skill files we installed (a dry run
        without --apply). With --url, BOOK is taken as named (not looked up here): @all by default."""
        emit(ctx, hosts(ctx).uninstall(host, book, apply, edition, home, skill_dir, url=url,
                                       allow_insecure_http=allow_insecure_http), render_plan)


def _add_check_commands(group: typer.Typer, hosts: HostsOf) -> None:
    """verify, instructions: they write nothing."""

    @group.command("verify")
    def verify(ctx: typer.Context, host: HostArg, book: OptionalBookArg = None, edition: EditionOpt = None,
               home: HomeOpt = None, skill_dir: InstalledSkillDirOpt = None, url: UrlOpt = None,
               token_env: TokenEnvOpt = None, allow_insecure_http: InsecureOpt = False) -> None:
        """Read back the server entry and the skill files: missing, modified or outdated."""
        result = hosts(ctx).verify(host, book, edition, home, skill_dir, url=url, token_env=token_env,
                                   allow_insecure_http=allow_insecure_http)
        from book_agent.cli.render_host import render_verify

        emit(ctx, result, render_verify)
        if not result["ok"]:
            raise typer.Exit(1)

    @group.command("instructions")
    def instructions(ctx: typer.Context, host: HostArg, book: OptionalBookArg = None, edition: EditionOpt = None,
                     home: HomeOpt = None, url: UrlOpt = None, token_env: TokenEnvOpt = None,
                     allow_insecure_http: InsecureOpt = False) -> None:
        """How to install by hand (and Cherry Studio's deep link)."""
        text = hosts(ctx).instructions(host, book, edition, home, url=url, token_env=token_env,
                                       allow_insecure_http=allow_insecure_http)
        emit(ctx, {"host": host, "instructions": text}, lambda d: print(d["instructions"], end=""))


def render_plan(plan: dict[str, Any]) -> None:
    verb = "done" if plan.get("applied") else "dry run"
    print(f"{plan['operation']} {plan['book_id']} -> {plan['host']} (server {plan['server_name']}): {verb}")
    if plan.get("url"):
        token = f", token from ${plan['token_env']}" if plan.get("token_env") else ""
        print(f"  served library at {plan['url']} (streamable HTTP{token})")
    elif "library" in plan:
        library = plan["library"]
        books = ", ".join(library["books"]) or "none yet"
        if library["everything"]:
            print(f"  library: every registered book, now and later (registered now: {books})")
        else:
            print(f"  library: {books}")
    for change in plan["changes"]:
        print(f"  {change['action']:9} {change['path']}")
        if change["diff"] and change["kind"] == "mcp_config":
            print("    " + change["diff"].rstrip("\n").replace("\n", "\n    "))
    for warning in plan["warnings"]:
        print(f"  note: {warning['message']}")
    for item in plan["unconfirmed"]:
        print(f"  unconfirmed: {item}")
    if plan.get("manual", {}).get("deeplink"):
        print(f"  install link: {plan['manual']['deeplink']}")
    if not plan.get("applied") and plan.get("changed"):
        print("  (nothing written: add --apply)")
