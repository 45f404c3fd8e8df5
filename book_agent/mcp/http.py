"""`book-agent serve`: the library (or one book) over MCP's streamable HTTP transport.

The same server as `mcp` (tools, results, lanes, warm-up), served by FastMCP's HTTP transport
in stateless mode: each request stands alone, so several processes (or machines) can serve
one read-only data dir behind a load balancer. `/health` answers load balancers without MCP.

Without authentication only a loopback address may be bound: any other is refused before
anything listens (`http.auth_required`). `--token-file` turns on static-token authentication
(mcp/auth.py): a missing or unknown token gets 401 with `WWW-Authenticate`.

Limits (mcp/http_limits.py: body size, time to send, concurrent calls per client, connections)
and the access log (mcp/access_log.py) are ASGI middleware in front of FastMCP's app; uvicorn's
own settings come from the same limits. SIGTERM or Ctrl-C: uvicorn stops accepting, lets the
requests in flight finish (up to `shutdown_timeout` seconds), then re-raises the signal.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import is_loopback_host
from book_agent.mcp.session import BookSession

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from starlette.requests import Request
    from starlette.responses import Response

    from book_agent.mcp.auth import JwtSettings
    from book_agent.mcp.http_limits import HttpLimits

MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
DEFAULT_PORT = 8765


def check_bind(host: str, port: int, authenticated: bool = False) -> None:
    if not authenticated and not is_loopback_host(host):
        raise BookAgentError(
            "http.auth_required", f"refusing to serve on {host}: only a loopback address may be served without "
            "authentication",
            details={"host": host},
            remediation="pass --token-file FILE (SHA-256 digests of the team's tokens), or serve on "
                        "127.0.0.1 (the default) behind an authenticating proxy")
    if not 0 < int(port) < 65536:
        raise BookAgentError("http.bad_port", f"{port} is not a TCP port", details={"port": port},
                             remediation="pass --port between 1 and 65535")


def add_health_route(server: FastMCP, session: BookSession) -> None:
    from starlette.responses import JSONResponse

    @server.custom_route(HEALTH_PATH, methods=["GET"], include_in_schema=False)
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "serving": session.book_id})


def authentication(token_file: Path | None, jwt: JwtSettings | None) -> Any:
    """The token verifier asked for (None: no authentication); one method at a time."""
    if token_file is not None and jwt is not None:
        raise BookAgentError("http.auth_conflict", "give either --token-file or the JWT options, not both",
                             remediation="static tokens for a small team, JWTs with an identity provider")
    if token_file is not None:
        from book_agent.mcp.auth import DigestTokenVerifier, read_token_file

        return DigestTokenVerifier(read_token_file(token_file))
    if jwt is not None:
        from book_agent.mcp.auth import jwt_verifier

        return jwt_verifier(jwt)
    return None


def serve_http(book_ref: str, data_dir: Path | str | None, host: str, port: int,
               token_file: Path | None = None, jwt: JwtSettings | None = None,
               limits: HttpLimits | None = None, access_log: Path | None = None,
               log_queries: bool = False) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM finish the calls in flight, then stop)."""
    import anyio

    from book_agent.mcp.access_log import line_writer, tool_outcome_middleware
    from book_agent.mcp.http_limits import HttpLimits, uvicorn_settings
    from book_agent.mcp.server import build_server, checked_start

    limits = (limits or HttpLimits()).checked()
    auth = authentication(token_file, jwt)
    check_bind(host, port, authenticated=auth is not None)
    write_log = line_writer(access_log)
    session = BookSession(book_ref, data_dir=data_dir)
    try:
        resolved = checked_start(session, book_ref)
        server = build_server(book_ref, session=session, resolved=resolved, warm_up=True, auth=auth)
        server.middleware.insert(0, tool_outcome_middleware())  # outermost: sees every refusal
        add_health_route(server, session)
        middleware = http_middleware(auth, limits, write_log, log_queries)

        async def run() -> None:
            finish_streams_on_shutdown()
            await server.run_http_async(transport="http", host=host, port=int(port), path=MCP_PATH,
                                        stateless_http=True, show_banner=False, log_level="warning",
                                        middleware=middleware, uvicorn_config=uvicorn_settings(limits))

        anyio.run(run)
    finally:
        session.close()


def finish_streams_on_shutdown() -> None:
    """sse-starlette ends every SSE answer as soon as uvicorn is told to stop, so a call in
    flight at SIGTERM would lose its result. Stateless answers end by themselves once the result
    is sent, and uvicorn's graceful-shutdown timeout bounds the wait: let them finish."""
    from sse_starlette.sse import AppStatus

    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]


def http_middleware(auth: Any, limits: HttpLimits, write_log: Any, log_queries: bool) -> list[Any]:
    """The access log, then the limits: inside FastMCP's authentication (so both know the
    token), outside its MCP endpoint (so both see every refusal)."""
    from starlette.middleware import Middleware

    from book_agent.mcp.access_log import AccessLog
    from book_agent.mcp.auth import token_labeler
    from book_agent.mcp.http_limits import RequestLimits

    label = token_labeler(auth) if auth is not None else None
    return [Middleware(AccessLog, write=write_log, label=label, log_queries=log_queries),
            Middleware(RequestLimits, limits=limits, label=label,
                       unlimited_paths=[HEALTH_PATH])]


def jwt_settings(public_key: str | None, jwks_url: str | None, issuer: str | None,
                 audience: str | None) -> JwtSettings | None:
    """The JWT options as settings (None when none is given); issuer and audience are required."""
    from book_agent.mcp.auth import JwtSettings

    if not any((public_key, jwks_url, issuer, audience)):
        return None
    if not issuer or not audience:
        raise BookAgentError("http.auth_conflict", "JWTs need --jwt-issuer and --jwt-audience",
                             remediation="the issuer and audience your identity provider puts in its tokens")
    return JwtSettings(issuer, audience, Path(public_key) if public_key else None, jwks_url)
