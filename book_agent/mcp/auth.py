"""Static tokens for a small team: `serve --token-file FILE`.

The file holds one token per line as its SHA-256 hex digest, optionally followed by the book ids
that token may use (spaces or commas); `#` starts a comment. The token itself is never stored,
logged or echoed: a request's bearer token is hashed and compared with every digest in constant
time (hmac.compare_digest, without stopping at the first match). A token limited to some books
sees only those, in every tool (the library tools ask `allowed_books()`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp.server.auth import AccessToken, TokenVerifier

from book_agent.domain.errors import BookAgentError

DIGEST = re.compile(r"^[0-9a-f]{64}$")
BOOK_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_TOKEN_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class TokenEntry:
    digest: str
    books: tuple[str, ...] | None  # None: every book the server serves


def read_token_file(path: Path) -> list[TokenEntry]:
    """Parse the token file; a bad line is named by its number, never its content."""
    from book_agent.input_files import InputTooLarge, read_limited

    try:
        text = read_limited(path, MAX_TOKEN_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError, InputTooLarge) as exc:
        raise _bad(path, f"cannot read it: {type(exc).__name__}") from exc
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = [w for w in re.split(r"[\s,]+", line.split("#", 1)[0].strip()) if w]
        if not words:
            continue
        digest, books = words[0].lower(), words[1:]
        if not DIGEST.match(digest):
            raise _bad(path, f"line {number} does not start with a SHA-256 hex digest (64 hex digits)")
        if any(not BOOK_ID.match(b) for b in books):
            raise _bad(path, f"line {number} names something that is not a book id")
        entries.append(TokenEntry(digest, tuple(books) if books else None))
    if not entries:
        raise _bad(path, "it holds no token digest")
    return entries


def _bad(path: Path, why: str) -> BookAgentError:
    return BookAgentError("http.bad_token_file", f"the token file {path} is unusable: {why}",
                          details={"path": str(path)},
                          remediation="one line per token: its SHA-256 hex digest (e.g. `printf %s TOKEN | "
                                      "sha256sum`), then optionally the book ids it may use")


class DigestTokenVerifier(TokenVerifier):
    def __init__(self, entries: list[TokenEntry]) -> None:
        super().__init__()
        self.entries = entries

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()
        found: TokenEntry | None = None
        for entry in self.entries:  # every entry, match or not: the time says nothing
            if hmac.compare_digest(entry.digest, digest):
                found = entry
        if found is None:
            return None
        books = list(found.books) if found.books is not None else None
        return AccessToken(token="(withheld)", client_id=f"{STATIC_PREFIX}{digest_label(found.digest)}", scopes=[],
                           expires_at=None, claims={"books": books})


STATIC_PREFIX = "token-"


def digest_label(digest: str) -> str:
    """A static token's name in logs: 8 hex digits of the SHA-256 of its digest (neither the token
    nor the digest; `printf %s DIGEST | sha256sum | cut -c1-8` finds a token file line's label)."""
    return hashlib.sha256(digest.encode("ascii")).hexdigest()[:8]


def token_labeler(auth: Any) -> Any:
    """How the access log and the per-client limit name a request's token: a short label that
    cannot be turned back into the token. Static tokens: `digest_label`; JWTs: 8 hex digits of
    the SHA-256 of the issuer, a space and the subject (`sub`, else the client id)."""
    if isinstance(auth, DigestTokenVerifier):
        return lambda access: str(access.client_id).removeprefix(STATIC_PREFIX)

    def jwt_label(access: Any) -> str:
        claims = access.claims or {}
        who = f"{claims.get('iss') or ''} {claims.get('sub') or access.client_id}"
        return hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()[:8]

    return jwt_label


def allowed_books() -> list[str] | None:
    """The books the current request's token may use (None: no limit, or no authentication).
    Call it in the tool's own coroutine: the request context does not reach the worker lanes."""
    from fastmcp.server.dependencies import get_access_token

    token: Any = get_access_token()
    if token is None:
        return None
    books = (token.claims or {}).get("books")
    return list(books) if isinstance(books, list) else None


def not_served(books: list[str], allowed: list[str]) -> BookAgentError:
    return BookAgentError("mcp.book_not_served", f"this token may not use {', '.join(books)}",
                          details={"not_served": books, "served": allowed},
                          remediation="call list_books and name only the books it lists")


def token_books_middleware(served_ref: str, library: bool) -> Any:
    """A FastMCP middleware: a token limited to some books may name no other (`book_id`,
    `books`), and on a one-book server may call nothing when that book is not among them."""
    from fastmcp.server.middleware import Middleware

    from book_agent.mcp.errors import error_result

    class TokenBooks(Middleware):
        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            allowed = allowed_books()
            if allowed is not None:
                arguments = context.message.arguments or {}
                named = [served_ref] if not library else [
                    *([arguments["book_id"]] if isinstance(arguments.get("book_id"), str) else []),
                    *[b for b in arguments.get("books") or [] if isinstance(b, str)]]
                refused = [b for b in named if b not in allowed]
                if refused:
                    return error_result(not_served(refused, allowed))
            return await call_next(context)

    return TokenBooks()


@dataclass(frozen=True)
class JwtSettings:
    """JWTs checked against a public key (PEM file) or a JWKS URL, with issuer and audience.
    A `books` claim (a list of book ids) limits the token as a token file's line does."""

    issuer: str
    audience: str
    public_key_file: Path | None = None
    jwks_url: str | None = None


def jwt_verifier(settings: JwtSettings) -> Any:
    from fastmcp.server.auth.providers.jwt import JWTVerifier

    if (settings.public_key_file is None) == (settings.jwks_url is None):
        raise BookAgentError("http.auth_conflict", "give exactly one of --jwt-public-key and --jwks-url",
                             remediation="a PEM public key file, or the identity provider's JWKS URL")
    key = None
    if settings.public_key_file is not None:
        from book_agent.input_files import read_limited

        try:
            key = read_limited(settings.public_key_file, 1 << 20).decode("ascii")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise BookAgentError("http.bad_jwt_key", f"cannot read the public key {settings.public_key_file}: "
                                 f"{type(exc).__name__}", remediation="a PEM-encoded public key file") from exc
    else:
        from book_agent.domain.network import check_endpoint

        check_endpoint(settings.jwks_url)  # https (or loopback http), no credentials in the URL
    return JWTVerifier(public_key=key, jwks_uri=settings.jwks_url, issuer=settings.issuer,
                       audience=settings.audience)
