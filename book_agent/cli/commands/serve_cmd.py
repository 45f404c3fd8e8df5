"""`book-agent serve [BOOKS]`: the library (default @all) over MCP streamable HTTP.

Only typer (and the limits' plain constants) is imported here; fastmcp, uvicorn and the core load
inside the command.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import typer

from book_agent.cli import common
from book_agent.mcp.http import limits as L  # plain constants: no fastmcp, no uvicorn

if TYPE_CHECKING:
    from book_agent.mcp.http.serve import ServeOptions

LOOPBACK = "127.0.0.1"

MAX_BODY_BYTES = typer.Option(L.MAX_BODY_BYTES, "--max-body-bytes", metavar="N",
                              help="Refuse a larger request body (413).")
MAX_CONNECTIONS = typer.Option(L.MAX_CONNECTIONS, "--max-connections", metavar="N",
                               help="Open connections for everyone; past it idle ones of the biggest holders make "
                                    "room, else 503.")
MAX_CONCURRENT_PER_CLIENT = typer.Option(
    L.MAX_CONCURRENT_PER_CLIENT, "--max-concurrent-per-client", metavar="N",
    help="Calls in flight per token (or per client address without authentication); more wait in the queue. "
         "initialize, ping and the lists count toward nothing.")
READ_TIMEOUT = typer.Option(L.READ_TIMEOUT_S, "--read-timeout", metavar="SECONDS",
                            help="A request's head and its body must each arrive within this (a late body gets 408).")
SHUTDOWN_TIMEOUT = typer.Option(L.SHUTDOWN_TIMEOUT_S, "--shutdown-timeout", metavar="SECONDS",
                                help="On SIGTERM or Ctrl-C, let the requests in flight finish for at most this long.")
QUEUE_PER_CLIENT = typer.Option(
    L.QUEUE_PER_CLIENT, "--queue-per-client", metavar="N",
    help="Calls past --max-concurrent-per-client that wait for a slot, per client; more get 429 with Retry-After.")
QUEUE_WAIT = typer.Option(L.QUEUE_WAIT_S, "--queue-wait", metavar="SECONDS",
                          help="How long a queued call waits for a slot before its 429.")
MAX_CONNECTIONS_PER_ADDRESS = typer.Option(
    L.MAX_CONNECTIONS_PER_ADDRESS, "--max-connections-per-address", metavar="N",
    help="Open connections from one client address (429 past it); raise it behind a proxy.")
MAX_UNAUTHENTICATED_PER_ADDRESS = typer.Option(
    L.MAX_UNAUTHENTICATED_PER_ADDRESS, "--max-unauthenticated-per-address", metavar="N",
    help="Requests without a valid token in flight from one address (429 past it).")
UNAUTHENTICATED_RATE = typer.Option(
    L.UNAUTHENTICATED_RATE, "--unauthenticated-rate", metavar="PER_S",
    help="Requests without a valid token a second from one address, bursts of twice that (429 past it).")

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

JWT_MAX_LIFETIME = typer.Option(None, "--jwt-max-lifetime", metavar="SECONDS",
                                help="Refuse a JWT whose exp lies more than this past its iat.")
JWT_ALLOW_NO_EXP = typer.Option(False, "--jwt-allow-no-exp",
                                help="Accept a JWT without exp (refused by default) while its iat is within "
                                     "--jwt-max-lifetime (required with it).")


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
        jwt_max_lifetime: float = JWT_MAX_LIFETIME,
        jwt_allow_no_exp: bool = JWT_ALLOW_NO_EXP,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_concurrent_per_client: int = MAX_CONCURRENT_PER_CLIENT,
        queue_per_client: int = QUEUE_PER_CLIENT,
        queue_wait: float = QUEUE_WAIT,
        read_timeout: float = READ_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        max_connections_per_address: int = MAX_CONNECTIONS_PER_ADDRESS,
        max_unauthenticated_per_address: int = MAX_UNAUTHENTICATED_PER_ADDRESS,
        unauthenticated_rate: float = UNAUTHENTICATED_RATE,
        shutdown_timeout: float = SHUTDOWN_TIMEOUT,
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
        from book_agent.mcp.http.origin import split_list
        from book_agent.mcp.http.serve import ServeOptions, jwt_settings, serve_http

        data_dir = common.data_dir(ctx)
        # The limit options carry HttpLimits' field names: read them from the parsed parameters
        # rather than listing every one a second time.
        limits = L.HttpLimits(**{f.name: ctx.params[f.name] for f in dataclasses.fields(L.HttpLimits)})
        jwt = jwt_settings(jwt_public_key, jwks_url, jwt_issuer, jwt_audience, jwt_max_lifetime, jwt_allow_no_exp)
        options = ServeOptions(
            books, str(data_dir) if data_dir is not None else None, host, port, token_file, jwt, limits, access_log,
            log_queries,
            tuple(split_list(allowed_hosts)) if allowed_hosts else None, tuple(split_list(allowed_origins)), workers)
        serve_http(options, announcer(options, lambda: common.agent(ctx).list_books()))


def announcer(options: ServeOptions, registered: Callable[[], Sequence[Mapping[str, Any]]]) -> Callable[[str], None]:
    """What `serve` says on stderr when it listens (where, what, which authentication) and stops."""
    def say(event: str) -> None:
        if event == "listening":
            text = serving_lines(options, registered())
        else:
            text = ["book-agent serve: stopping (finishing the requests in flight)" if event == "stopping"
                    else "book-agent serve: stopped"]
        sys.stderr.write("\n".join(text) + "\n")
        sys.stderr.flush()

    return say


def serving_lines(options: ServeOptions, registered: Sequence[Mapping[str, Any]]) -> list[str]:
    from book_agent.mcp.http.serve import HEALTH_PATH, MCP_PATH

    address = f"[{options.host}]" if ":" in options.host else options.host
    base = f"http://{address}:{options.port}"
    ids = [str(b["book_id"]) for b in registered]
    if options.book_ref == "@all":
        what = f"@all: every registered book, also those registered later (now {len(ids)}: {', '.join(ids) or 'none'})"
    else:
        what = options.book_ref
    workers = f", {options.workers} worker processes" if options.workers > 1 else ""
    return [f"book-agent serve: listening on {base}{MCP_PATH} (MCP streamable HTTP{workers}; health: {base}{HEALTH_PATH})",
            f"  serving         {what}",
            f"  authentication  {authentication_text(options)}",
            f"  access log      {options.access_log or 'stderr'}" + (" (with query text)" if options.log_queries else ""),
            "  stop with Ctrl-C or SIGTERM (requests in flight finish first)"]


def authentication_text(options: ServeOptions) -> str:
    if options.token_file:
        return f"bearer tokens (SHA-256 digests in {options.token_file})"
    jwt = options.jwt
    if jwt is not None:
        key = jwt.public_key_file or jwt.jwks_url
        lifetime = f", at most {jwt.max_lifetime_s:g} s" if jwt.max_lifetime_s is not None else ""
        no_exp = ", no exp allowed" if jwt.allow_no_exp else ", exp required"
        return f"JWT signed by {key} (issuer {jwt.issuer}, audience {jwt.audience}{no_exp}{lifetime})"
    return "none: loopback clients only (no token asked)"
