"""`book-agent serve`: the library (or one book) over MCP's streamable HTTP transport.

The same server as `mcp` (tools, results, lanes, warm-up), served by FastMCP's HTTP transport
in stateless mode: each request stands alone, so several processes (or machines) can serve
one read-only data dir behind a load balancer, and `--workers N` runs N processes on one port
(book_agent/mcp/http/uvicorn_run.py). `/health` answers load balancers without MCP. Answers are plain JSON
(FastMCP's `json_response`): a stateless call's answer is one message, and an SSE stream per
request cost a quarter of the server's time per call.

Without authentication only a loopback address may be bound: any other is refused before
anything listens (`http.auth_required`). `--token-file` turns on static-token authentication
(mcp/auth.py): a missing or unknown token gets 401 with `WWW-Authenticate`.

Every request to `/mcp` must name a Host the server answers and, from a browser, an allowed
Origin (book_agent/mcp/http/origin.py: DNS-rebinding protection; 403 `http.bad_host` / `http.bad_origin`).
Limits (book_agent/mcp/http/limits.py: body size, time to send, calls per client with a short queue, requests
without a valid token and connections per address)
and the access log (book_agent/mcp/http/access_log.py) are ASGI middleware in front of FastMCP's app; uvicorn's
own settings come from the same limits. SIGTERM or Ctrl-C: uvicorn stops accepting, lets the
requests in flight finish (up to `shutdown_timeout` seconds), then re-raises the signal.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from book_agent.domain.book.book_refs import ALL_BOOKS
from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import is_loopback_host
from book_agent.mcp.http.limits import HttpLimits
from book_agent.mcp.session import BookSession

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from starlette.requests import Request
    from starlette.responses import Response

    from book_agent.mcp.auth import JwtSettings
    from book_agent.mcp.http.origin import HostPolicy

Announce = Callable[[str], None]  # hears "listening", "stopping", "stopped"
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


def add_health_route(server: FastMCP, session: BookSession, authenticated: bool = False) -> None:
    """`/health` asks no token, so with tokens it says nothing of the books (a list's ids)."""
    from starlette.responses import JSONResponse

    body = {"status": "ok"} if authenticated else {"status": "ok", "serving": session.book_id}

    @server.custom_route(HEALTH_PATH, methods=["GET"], include_in_schema=False)
    async def health(request: Request) -> Response:
        return JSONResponse(body)


MAX_WORKERS = 64


@dataclass(frozen=True)
class ServeOptions:
    """What `serve` is told, as plain data: each `--workers` process builds the same server
    from it (`to_json`, `worker_app`)."""

    book_ref: str = ALL_BOOKS
    data_dir: str | None = None
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token_file: str | None = None
    jwt: JwtSettings | None = None
    limits: HttpLimits = field(default_factory=HttpLimits)
    access_log: str | None = None
    log_queries: bool = False
    allowed_hosts: tuple[str, ...] | None = None
    allowed_origins: tuple[str, ...] = ()
    workers: int = 1

    def host_policy(self) -> HostPolicy:
        from book_agent.mcp.http.origin import HostPolicy

        return HostPolicy.of(self.host, self.allowed_hosts, self.allowed_origins)

    def checked(self) -> ServeOptions:
        """These options, each checked (start-up errors, before anything listens)."""
        if not isinstance(self.workers, int) or not 1 <= self.workers <= MAX_WORKERS:
            raise BookAgentError("http.bad_limit", f"--workers {self.workers!r} is outside 1..{MAX_WORKERS}",
                                 details={"option": "--workers", "value": self.workers, "range": [1, MAX_WORKERS]},
                                 remediation="one worker per core is plenty (`nproc`); leave it out for one process")
        self.host_policy()
        return replace(self, limits=self.limits.checked())

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str)

    @classmethod
    def from_json(cls, text: str) -> ServeOptions:
        from book_agent.mcp.auth import JwtSettings

        raw = json.loads(text)
        jwt = raw.pop("jwt")
        if jwt is not None:
            key = jwt.get("public_key_file")
            jwt = JwtSettings(**{**jwt, "public_key_file": Path(key) if key else None})
        hosts = raw.pop("allowed_hosts")
        return cls(**{**raw, "jwt": jwt, "limits": HttpLimits(**raw["limits"]),
                      "allowed_hosts": tuple(hosts) if hosts is not None else None,
                      "allowed_origins": tuple(raw["allowed_origins"])})


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


def serve_http(options: ServeOptions, announce: Announce | None = None) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM finish the calls in flight, then stop). Every
    start-up error (an option, the token file, the access log, an unknown book) is raised here,
    before anything listens. `announce` hears "listening", "stopping" and "stopped" (the CLI
    says them on stderr)."""
    from book_agent.mcp.http.access_log import line_writer
    from book_agent.mcp.http.uvicorn_run import run_one, run_workers

    options = options.checked()
    auth = authentication(_path(options.token_file), options.jwt)
    check_bind(options.host, options.port, authenticated=auth is not None)
    write_log = line_writer(_path(options.access_log))
    if options.workers > 1:
        from book_agent.mcp.server import checked_start

        session = BookSession(options.book_ref, data_dir=options.data_dir)
        try:
            checked_start(session, options.book_ref)  # each worker builds its own server
        finally:
            session.close()
        run_workers(options.to_json(), options.host, options.port, options.limits, options.workers, announce)
        return
    session, app = build_app(options, auth, write_log)
    try:
        run_one(app, options.host, options.port, options.limits, announce)
    finally:
        session.close()


def worker_app() -> Any:
    """uvicorn's app factory in a `--workers` process: the app of the options in the environment."""
    import anyio

    from book_agent import settings
    from book_agent.mcp.http.access_log import line_writer
    from book_agent.mcp.http.uvicorn_run import uvicorn_settings
    from book_agent.mcp.internals import finish_streams_on_shutdown

    options = ServeOptions.from_json(settings.worker_serve_options())
    uvicorn_settings(options.limits)  # this process's head deadline
    finish_streams_on_shutdown()
    session, app = build_app(options, authentication(_path(options.token_file), options.jwt),
                             line_writer(_path(options.access_log)))
    serving = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(started: Any) -> AsyncIterator[Any]:
        async with serving(started) as state:
            yield state
        await anyio.to_thread.run_sync(session.close)  # the calls are done: close the books

    app.router.lifespan_context = lifespan
    return app


def build_app(options: ServeOptions, auth: Any, write_log: Any) -> tuple[BookSession, Any]:
    """The session and the ASGI app serving it: FastMCP's streamable-HTTP app, stateless, with
    plain JSON answers, `/health`, and the access log, Host/Origin check and limits in front."""
    from book_agent.mcp.http.access_log import tool_outcome_middleware
    from book_agent.mcp.server import build_server, checked_start

    session = BookSession(options.book_ref, data_dir=options.data_dir)
    try:
        resolved = checked_start(session, options.book_ref)
        server = build_server(options.book_ref, session=session, resolved=resolved, warm_up=True, auth=auth)
        server.middleware.insert(0, tool_outcome_middleware())  # outermost: sees every refusal
        add_health_route(server, session, authenticated=auth is not None)
        middleware = http_middleware(auth, options.limits, write_log, options.log_queries, options.host_policy())
        app = server.http_app(path=MCP_PATH, transport="http", middleware=middleware, stateless_http=True,
                              json_response=True,
                              host_origin_protection=False)  # ours decides: book_agent/mcp/http/origin.py
    except BaseException:
        session.close()
        raise
    return session, app


def _path(value: str | Path | None) -> Path | None:
    return Path(value) if value else None


def http_middleware(auth: Any, limits: HttpLimits, write_log: Any, log_queries: bool,
                    hosts: HostPolicy) -> list[Any]:
    """The access log, the Host/Origin check, then the limits: inside FastMCP's authentication
    (so they know the token), outside its MCP endpoint (so they see every refusal; a wrong Host
    or Origin is refused before a token is asked for, and counts toward no client's calls)."""
    from starlette.middleware import Middleware

    from book_agent.mcp.auth import token_labeler
    from book_agent.mcp.http.access_log import AccessLog
    from book_agent.mcp.http.limits import RequestLimits
    from book_agent.mcp.http.origin import HostOriginGuard

    label = token_labeler(auth) if auth is not None else None
    return [Middleware(AccessLog, write=write_log, label=label, log_queries=log_queries),
            Middleware(HostOriginGuard, policy=hosts, unchecked_paths=[HEALTH_PATH]),
            Middleware(RequestLimits, limits=limits, label=label,
                       unlimited_paths=[HEALTH_PATH])]


def jwt_settings(public_key: str | None, jwks_url: str | None, issuer: str | None,
                 audience: str | None, max_lifetime_s: float | None = None,
                 allow_no_exp: bool = False) -> JwtSettings | None:
    """The JWT options as settings (None when none is given); issuer and audience are required,
    the lifetime options are checked (JwtSettings.checked)."""
    from book_agent.mcp.auth import JwtSettings

    if not any((public_key, jwks_url, issuer, audience)):
        if max_lifetime_s is not None or allow_no_exp:
            raise BookAgentError("http.auth_conflict", "--jwt-max-lifetime and --jwt-allow-no-exp apply to JWTs only",
                                 remediation="add --jwt-public-key (or --jwks-url), --jwt-issuer and --jwt-audience")
        return None
    if not issuer or not audience:
        raise BookAgentError("http.auth_conflict", "JWTs need --jwt-issuer and --jwt-audience",
                             remediation="the issuer and audience your identity provider puts in its tokens")
    return JwtSettings(issuer, audience, Path(public_key) if public_key else None, jwks_url,
                       max_lifetime_s, allow_no_exp).checked()
