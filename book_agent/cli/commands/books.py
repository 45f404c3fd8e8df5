"""Commands about registered books: inspect, init, list, status, prepare, configure."""

from __future__ import annotations

from typing import Any

import typer

from book_agent.cli.common import agent, emit
from book_agent.cli.progress import phase_progress


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)
    app.command("init")(init)
    app.command("list")(list_books)
    app.command("status")(status)
    app.command("prepare")(prepare)
    app.command("configure")(configure)
    app.command("remove")(remove)


def inspect(ctx: typer.Context, path: str = typer.Argument(..., metavar="PATH", help="Package folder, its book-package.json, or a .zip/.tar/.tar.gz archive.")) -> None:
    """Check a package without registering it: files, hashes, schema, database, vectors.

    Exits 1 when the package has errors (the report is printed either way)."""
    report = agent(ctx).inspect(path)
    emit(ctx, report, _render_inspection)
    if any(d["severity"] == "error" for d in report["diagnostics"]):
        raise typer.Exit(1)


def init(
    ctx: typer.Context,
    path: str = typer.Argument(..., metavar="PATH", help="Package folder (registered in place, read-only) or archive (imported safely)."),
    replace: bool = typer.Option(False, "--replace", help="Take this package under a book_id registered from another package."),
    reranker: str = typer.Option("none", "--reranker", metavar="PROVIDER", help="Reranker provider for this book (none, siliconflow, local, custom)."),
) -> None:
    """Verify a package in full, register it under its own book_id, and build its search index."""
    with phase_progress() as phases:
        result = agent(ctx).init(path, reranker=reranker, replace=replace, phases=phases)
    # a library's indexes are rebuilt when its books change: say how to pay for that now, not at a search
    in_library = len(agent(ctx).list_books()) > 1
    emit(ctx, result, lambda r: print(f"registered {r['book_id']} ({r['title']})\n  package: {r['package_root']}\n"
                                      f"  runtime: {r['runtime_dir']}\nnext: book-agent search {r['book_id']} \"your question\""
                                      + ("\n      book-agent prepare @all   (the library index, now rather than at the "
                                         "first @all search)" if in_library else "")))


def list_books(ctx: typer.Context) -> None:
    """List the registered books."""
    books = agent(ctx).list_books()
    emit(ctx, {"books": books}, _render_list)


def status(
    ctx: typer.Context,
    book: str = typer.Argument(..., metavar="BOOK", help="A registered book_id."),
    verify: bool = typer.Option(False, "--verify", help="Re-hash every package file (slower)."),
) -> None:
    """Package health, sidecar freshness, what each capability needs, and the runtime config (never a key)."""
    from book_agent.cli.render_books import render_status

    emit(ctx, agent(ctx).status(book, verify=verify), render_status)


def prepare(ctx: typer.Context, book: str = typer.Argument(..., metavar="BOOK", help="A registered book_id, a,b or @all."),
            full: bool = typer.Option(False, "--full", help="For a,b or @all: the exact rebuild of the library index (compacts it).")) -> None:
    """Rebuild the book's runtime sidecars that are missing, corrupt or stale (idempotent); for a,b or
    @all, each book's and then the library's index (else built at the first library search)."""
    from book_agent.cli.render_books import render_prepare

    with phase_progress() as phases:
        result = agent(ctx).prepare(book, phases=phases, full=full)
    emit(ctx, result, render_prepare)


def configure(
    ctx: typer.Context,
    book: str = typer.Argument(..., metavar="BOOK", help="A registered book_id."),
    allow_remote: bool = typer.Option(None, "--allow-remote/--no-allow-remote", help="Allow requests to the allowed endpoints (off by default)."),
    allowed_endpoint: list[str] = typer.Option(None, "--allowed-endpoint", metavar="URL", help="An exact URL that may be requested (repeatable; replaces the list)."),
    auth_env: str = typer.Option(None, "--auth-env", metavar="NAME", help="NAME of the environment variable holding the API key (the key itself is never stored)."),
    query_endpoint: str = typer.Option(None, "--query-endpoint", metavar="URL", help="Embeddings endpoint for query encoding."),
    model_dir: str = typer.Option(None, "--model-dir", metavar="DIR", help="Folder with the package's embedding model files, for local encoding."),
    reranker: str = typer.Option(None, "--reranker", metavar="PROVIDER", help="none, siliconflow, local, custom, or an installed plug-in name."),
    reranker_model: str = typer.Option(None, "--reranker-model"),
    reranker_endpoint: str = typer.Option(None, "--reranker-endpoint"),
    reranker_factory: str = typer.Option(None, "--reranker-factory", help="module:factory of a custom reranker."),
    reset: bool = typer.Option(False, "--reset", help="Start from the defaults (offline, no endpoints, no reranker) before applying the other options."),
) -> None:
    """Write the book's runtime config: network policy, query encoding, reranker."""
    settings: dict[str, Any] = {
        "allow_remote_requests": allow_remote,
        "allowed_endpoints": list(allowed_endpoint) if allowed_endpoint else None,
        "auth_env": auth_env,
        "query_endpoint": query_endpoint,
        "model_dir": model_dir,
        "reranker": reranker,
        "reranker_model": reranker_model,
        "reranker_endpoint": reranker_endpoint,
        "reranker_factory": reranker_factory,
        "reset": reset,
    }
    from book_agent.cli.render_books import render_configure

    emit(ctx, agent(ctx).configure(book, **settings), render_configure)


def remove(ctx: typer.Context, book: str = typer.Argument(..., metavar="BOOK", help="A registered book_id.")) -> None:
    """Unregister a book: its runtime data goes, and its imported copy if it came from an archive.
    A package folder registered in place is never touched."""
    emit(ctx, agent(ctx).remove(book), lambda r: print(f"removed {r['book_id']}"
                                                       + (" and its imported copy" if r["imported_copy_removed"] else "")))


def _render_inspection(info: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    errors = [d for d in info["diagnostics"] if d["severity"] == "error"]
    console.print(f"[bold]{info.get('title')}[/bold] ({info.get('book_id')}) at {info['root']}")
    console.print("[green]valid[/green]" if not errors else f"[red]{len(errors)} error(s)[/red]")
    if info["diagnostics"]:
        table = Table("severity", "code", "message")
        for d in info["diagnostics"]:
            table.add_row(d["severity"], d["code"], d["message"])
        console.print(table)


def _render_list(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    if not data["books"]:
        print("no books registered yet: book-agent init PACKAGE")
        return
    table = Table("book_id", "title", "package")
    table.columns[2].overflow = "fold"  # a path cut short is a path you cannot use
    for book in data["books"]:
        table.add_row(book["book_id"], str(book.get("title")), str(book["package_root"]))
    Console().print(table)
