"""`book-agent mcp BOOK`: serve one book, or a library (`a,b`, `@all`), over MCP (stdio) for an
agent host (`book-agent serve` serves over streamable HTTP).

Hosts start it as `[python, -m, book_agent, --data-dir, DATA, mcp, BOOK_ID]`. Only typer is
imported here; fastmcp and the core load inside the command.
"""

from __future__ import annotations

import typer

from book_agent.cli import common


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        ctx: typer.Context,
        book_id: str = typer.Argument(..., metavar="BOOK", help="The registered book to serve; a,b or @all serves a library (list_books, search across books, book_id on the other tools)."),
    ) -> None:
        """Serve a book (or a library: a,b or @all) to an agent host over MCP on stdin/stdout (logs go to stderr)."""
        from book_agent.mcp.server import serve

        # A start-up failure (unknown or broken book) is a BookAgentError: cli.main prints it
        # on stderr and exits 1 before any protocol is spoken.
        serve(book_id, data_dir=common.data_dir(ctx))
