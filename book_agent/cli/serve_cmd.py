"""`book-agent serve [BOOKS]`: the library (default @all) over MCP streamable HTTP.

Only typer is imported here; fastmcp, uvicorn and the core load inside the command.
"""

from __future__ import annotations

import typer

from book_agent.cli import common

LOOPBACK = "127.0.0.1"


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        ctx: typer.Context,
        books: str = typer.Argument("@all", metavar="BOOKS",
                                    help="@all (the default: every registered book, also those registered later), "
                                         "a,b, or one book_id."),
        host: str = typer.Option(LOOPBACK, "--host", help="Address to bind: a loopback address (others need "
                                                           "authentication, not available yet)."),
        port: int = typer.Option(8765, "--port", help="TCP port."),
    ) -> None:
        """Serve the library over MCP streamable HTTP at http://HOST:PORT/mcp (health: /health).
        Stateless: several processes may serve one data dir behind a load balancer."""
        from book_agent.mcp.http import serve_http

        # A start-up failure (a bad address, an unknown book) is a BookAgentError: cli.main
        # prints it and exits 1 before anything listens.
        serve_http(books, common.data_dir(ctx), host, port)
