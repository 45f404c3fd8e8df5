"""`book-agent serve [BOOKS]`: the library (default @all) over MCP streamable HTTP.

Only typer (and the limits' plain constants) is imported here; fastmcp, uvicorn and the core load
inside the command.
"""

from __future__ import annotations

import typer

from book_agent.cli import common
from book_agent.mcp import http_limits as L  # plain constants: no fastmcp, no uvicorn

LOOPBACK = "127.0.0.1"

WORKERS = typer.Option(
    1, "--workers", metavar="N",
    help="Worker processes accepting on the one port (stateless: any answers any request); one per core "
         "multiplies throughput. Limits apply per worker.")
ALLOWED_HOSTS = typer.Option(
    None, "--allowed-hosts", metavar="HOSTS",
    help="Host names (a,b; *.example.org; IP addresses) requests may name besides the loopback ones and the "
         "bound address (DNS-rebinding protection). Default: loopback names on a loopback address, any elsewhere.")
ALLOWED_ORIGINS = typer.Option(
    None, "--allowed-origins", metavar="ORIGINS",
    help="Browser origins (https://app.example.org,...; * for any) allowed besides the server's own (and loopback "
         "pages on a loopback address); a request without Origin is not a browser's and is not checked.")


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
        max_body_bytes: int = typer.Option(L.MAX_BODY_BYTES, "--max-body-bytes", metavar="N",
                                           help="Refuse a larger request body (413)."),
        max_concurrent_per_client: int = typer.Option(L.MAX_CONCURRENT_PER_CLIENT, "--max-concurrent-per-client", metavar="N",
                                                      help="Requests in flight per token (or per client address "
                                                           "without authentication); more get 429."),
        read_timeout: float = typer.Option(L.READ_TIMEOUT_S, "--read-timeout", metavar="SECONDS",
                                           help="A request's head and its body must each arrive within this "
                                                "(a late body gets 408)."),
        max_connections: int = typer.Option(L.MAX_CONNECTIONS, "--max-connections", metavar="N",
                                            help="Open connections for everyone (503 past it)."),
        shutdown_timeout: float = typer.Option(L.SHUTDOWN_TIMEOUT_S, "--shutdown-timeout", metavar="SECONDS",
                                               help="On SIGTERM or Ctrl-C, let the requests in flight finish "
                                                    "for at most this long."),
        access_log: str = typer.Option(None, "--access-log", metavar="FILE",
                                       help="Append the access log (one JSON line per request) to FILE "
                                            "instead of stderr."),
        log_queries: bool = typer.Option(False, "--log-queries",
                                         help="Put the query text in the access log (left out by default)."),
        allowed_hosts: str = ALLOWED_HOSTS,
        allowed_origins: str = ALLOWED_ORIGINS,
        workers: int = WORKERS,
    ) -> None:
        """Serve the library over MCP streamable HTTP at http://HOST:PORT/mcp (health: /health).
        Stateless: several processes (--workers N on one port) may serve one data dir."""
        # A start-up failure (a bad address, an unknown book) is a BookAgentError: cli.main
        # prints it and exits 1 before anything listens.
        from book_agent.mcp.http import ServeOptions, jwt_settings, serve_http
        from book_agent.mcp.http_origin import split_list

        data_dir = common.data_dir(ctx)
        limits = L.HttpLimits(max_body_bytes=max_body_bytes, max_concurrent_per_client=max_concurrent_per_client,
                              read_timeout=read_timeout, max_connections=max_connections,
                              shutdown_timeout=shutdown_timeout)
        serve_http(ServeOptions(
            books, str(data_dir) if data_dir is not None else None, host, port, token_file,
            jwt_settings(jwt_public_key, jwks_url, jwt_issuer, jwt_audience), limits, access_log, log_queries,
            tuple(split_list(allowed_hosts)) if allowed_hosts else None, tuple(split_list(allowed_origins)), workers))
