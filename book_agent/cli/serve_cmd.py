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
        host: str = typer.Option(LOOPBACK, "--host", help="Address to bind; any but a loopback address needs "
                                                           "--token-file."),
        port: int = typer.Option(8765, "--port", help="TCP port."),
        token_file: str = typer.Option(None, "--token-file", metavar="FILE",
                                       help="Require a bearer token: one line per token, its SHA-256 hex digest, "
                                            "optionally followed by the book ids it may use."),
        jwt_public_key: str = typer.Option(None, "--jwt-public-key", metavar="FILE",
                                           help="Require JWTs signed by this PEM public key (with --jwt-issuer "
                                                "and --jwt-audience); a `books` claim limits a token."),
        jwks_url: str = typer.Option(None, "--jwks-url", metavar="URL", help="Or the identity provider's JWKS URL."),
        jwt_issuer: str = typer.Option(None, "--jwt-issuer", metavar="ISS", help="The JWTs' expected issuer."),
        jwt_audience: str = typer.Option(None, "--jwt-audience", metavar="AUD", help="The JWTs' expected audience."),
    ) -> None:
        """Serve the library over MCP streamable HTTP at http://HOST:PORT/mcp (health: /health).
        Stateless: several processes may serve one data dir behind a load balancer."""
        # A start-up failure (a bad address, an unknown book) is a BookAgentError: cli.main
        # prints it and exits 1 before anything listens.
        from pathlib import Path

        from book_agent.mcp.http import jwt_settings, serve_http

        jwt = jwt_settings(jwt_public_key, jwks_url, jwt_issuer, jwt_audience)
        serve_http(books, common.data_dir(ctx), host, port, Path(token_file) if token_file else None, jwt)
