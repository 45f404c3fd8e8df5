"""Static tokens for a small team: `serve --token-file FILE`.

The file holds one token per line as its SHA-256 hex digest, optionally followed by the book ids
that token may use (spaces or commas); `#` starts a comment. A digest on two lines is refused at
start (naming both lines): which scope would hold must not depend on line order. The token itself
is never stored, logged or echoed: a request's bearer token is hashed and compared with every
digest in constant time (hmac.compare_digest, without stopping at the first match).

A token's books are read from its claims by `token_books`, the one reader for static tokens and
JWTs, which fails closed: a `books` claim of any shape but a list of book ids means no book. They
are held on every surface by mcp/book_scope.py.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import time
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


class NotARegularFile(ValueError):
    pass


def read_regular_file(path: Path, limit: int) -> bytes:
    """A key or token file's bytes: a regular file only (a FIFO's open would block the server's
    start, a device never ends), at most `limit` bytes. Raises OSError or ValueError."""
    import os
    import stat

    from book_agent.input_files import InputTooLarge

    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotARegularFile(f"{path} is not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO swapped in after the check does not block
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(str(path), limit)
    return data


def read_token_file(path: Path) -> list[TokenEntry]:
    """Parse the token file; a bad line is named by its number, never its content."""
    try:
        text = read_regular_file(path, MAX_TOKEN_FILE_BYTES).decode("utf-8")
    except NotARegularFile as exc:
        raise _bad(path, "it is not a regular file (a FIFO, a device or a folder)") from exc
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and InputTooLarge are ValueErrors
        raise _bad(path, f"cannot read it: {type(exc).__name__}") from exc
    entries = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = [w for w in re.split(r"[\s,]+", line.split("#", 1)[0].strip()) if w]
        if not words:
            continue
        digest, books = words[0].lower(), words[1:]
        if not DIGEST.match(digest):
            raise _bad(path, f"line {number} does not start with a SHA-256 hex digest (64 hex digits)")
        if any(not BOOK_ID.match(b) for b in books):
            raise _bad(path, f"line {number} names something that is not a book id")
        if digest in first_line:
            raise _bad(path, f"lines {first_line[digest]} and {number} hold the same digest (one token, one line: "
                             "which line's books would hold must not depend on their order)",
                       lines=[first_line[digest], number])
        first_line[digest] = number
        entries.append(TokenEntry(digest, tuple(books) if books else None))
    if not entries:
        raise _bad(path, "it holds no token digest")
    return entries


def _bad(path: Path, why: str, **details: Any) -> BookAgentError:
    return BookAgentError("http.bad_token_file", f"the token file {path} is unusable: {why}",
                          details={"path": str(path), **details},
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
        # No `books` claim: every book (as a JWT without one); a limited line's books as a list.
        claims: dict[str, Any] = {"books": list(found.books)} if found.books is not None else {}
        return AccessToken(token="(withheld)", client_id=f"{STATIC_PREFIX}{digest_label(found.digest)}", scopes=[],
                           expires_at=None, claims=claims)


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


def token_books(claims: Any) -> list[str] | None:
    """The books a token's claims allow: None (every book) when there is no `books` claim; the
    ids when it is a list of book ids; else none at all (`[]`). A string (`"a b"`, `"*"`), null,
    a number, an object or a list holding anything but book ids is a shape this server does not
    understand, and an identity provider's surprise must never widen a token to every book."""
    if not isinstance(claims, dict) or "books" not in claims:
        return None
    books = claims["books"]
    if isinstance(books, list) and all(isinstance(b, str) and BOOK_ID.match(b) for b in books):
        return list(dict.fromkeys(books))
    return []


def allowed_books() -> list[str] | None:
    """The books the current request's token may use (None: no limit, or no authentication).
    Call it in the request's own coroutine: the request context does not reach the worker lanes."""
    from fastmcp.server.dependencies import get_access_token

    token: Any = get_access_token()
    if token is None:
        return None
    return token_books(token.claims)


def not_served(books: list[str], allowed: list[str]) -> BookAgentError:
    return BookAgentError("mcp.book_not_served", f"this token may not use {', '.join(books)}",
                          details={"not_served": books, "served": allowed},
                          remediation="call list_books and name only the books it lists")


MAX_JWT_LIFETIME_S = 366 * 24 * 3600  # --jwt-max-lifetime's upper bound: a year (and a day)
# Without --jwt-max-lifetime: a day. Identity providers issue access tokens for minutes to hours
# (Auth0's default is 24 h); an `exp` of 10**20 is a token that never ends, refused unless asked for.
DEFAULT_JWT_MAX_LIFETIME_S = 24 * 3600


@dataclass(frozen=True)
class JwtSettings:
    """JWTs checked against a public key (PEM file) or a JWKS URL, with issuer and audience.
    A `books` claim (a list of book ids) limits the token as a token file's line does.

    Lifetime: a JWT must carry `exp` (a token that never expires is refused). `max_lifetime_s`
    (`--jwt-max-lifetime`, default DEFAULT_JWT_MAX_LIFETIME_S) also refuses one whose `exp` lies
    further than that past its `iat` (or, without `iat`, past now). `allow_no_exp` (`--jwt-allow-no-exp`, which needs a maximum
    lifetime) accepts a JWT without `exp` that has an `iat` no older than the maximum."""

    issuer: str
    audience: str
    public_key_file: Path | None = None
    jwks_url: str | None = None
    max_lifetime_s: float | None = None
    allow_no_exp: bool = False

    def checked(self) -> JwtSettings:
        limit = self.max_lifetime_s
        if limit is not None and (isinstance(limit, bool) or not 0 < limit <= MAX_JWT_LIFETIME_S):
            raise BookAgentError("http.bad_limit", f"--jwt-max-lifetime {limit!r} is outside 1..{MAX_JWT_LIFETIME_S} "
                                 "seconds", details={"option": "--jwt-max-lifetime", "value": limit,
                                                     "range": [1, MAX_JWT_LIFETIME_S]},
                                 remediation="your identity provider's token lifetime, e.g. 3600")
        if self.allow_no_exp and limit is None:
            raise BookAgentError("http.auth_conflict", "--jwt-allow-no-exp needs --jwt-max-lifetime",
                                 remediation="give the longest a JWT without `exp` may live after its `iat`, e.g. "
                                             "--jwt-max-lifetime 3600")
        return self


CLOCK_SKEW_S = 60  # an `iat` this far ahead of our clock is still taken as now (FastMCP allows nbf the same)


def lifetime_problem(claims: dict[str, Any], settings: JwtSettings, now: float) -> str | None:
    """Why a validly signed JWT's lifetime is refused (None: it is not). Expiry itself (exp in
    the past) and `nbf` are FastMCP's checks; this one is about tokens that live too long. An
    `iat` in the future is refused too: with it, `exp - iat` would say nothing of how long the
    token is good for from now."""
    exp, iat, limit = claims.get("exp"), claims.get("iat"), settings.max_lifetime_s
    if exp is not None and not _is_time(exp) or iat is not None and not _is_time(iat):
        return "exp or iat is not a finite number of seconds"
    if limit is None:
        limit = DEFAULT_JWT_MAX_LIFETIME_S
    if iat is not None and iat > now + CLOCK_SKEW_S:
        return "its iat is in the future"
    if exp is None:
        if not settings.allow_no_exp:
            return "it has no exp (it would never expire)"
        if iat is None or settings.max_lifetime_s is None or now - iat > limit:
            return "it has no exp, and no iat within the maximum lifetime"
        return None
    if exp - (iat if iat is not None else now) > limit:
        return f"it would live longer than the maximum lifetime ({limit:g} s)"
    return None


def _is_time(value: Any) -> bool:
    """A number of seconds: not a bool, NaN or an infinity (`1e309` in the JSON parses as one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) if isinstance(value, float) else True


def jwt_verifier(settings: JwtSettings) -> Any:
    from fastmcp.server.auth.providers.jwt import JWTVerifier

    settings = settings.checked()
    if (settings.public_key_file is None) == (settings.jwks_url is None):
        raise BookAgentError("http.auth_conflict", "give exactly one of --jwt-public-key and --jwks-url",
                             remediation="a PEM public key file, or the identity provider's JWKS URL")
    key = None
    if settings.public_key_file is not None:
        try:
            key = read_regular_file(settings.public_key_file, 1 << 20).decode("ascii")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise BookAgentError("http.bad_jwt_key", f"cannot read the public key {settings.public_key_file}: "
                                 f"{type(exc).__name__}", remediation="a PEM-encoded public key file") from exc
    else:
        from book_agent.domain.network import check_endpoint

        check_endpoint(settings.jwks_url)  # https (or loopback http), no credentials in the URL

    class LifetimeCheckedJWTVerifier(JWTVerifier):
        """FastMCP's checks (signature, expiry, nbf, issuer, audience), then the lifetime's."""

        async def load_access_token(self, token: str) -> AccessToken | None:
            try:
                access = await super().load_access_token(token)
            except Exception as exc:  # noqa: BLE001 - e.g. OverflowError on exp Infinity: a 401, not a 500
                self.logger.info("Bearer token rejected: its claims cannot be checked (%s)", type(exc).__name__)
                return None
            if access is None:
                return None
            problem = lifetime_problem(access.claims or {}, settings, time.time())
            if problem is not None:
                self.logger.info("Bearer token rejected for client %s: %s", access.client_id, problem)
                return None
            return access

    return LifetimeCheckedJWTVerifier(public_key=key, jwks_uri=settings.jwks_url, issuer=settings.issuer,
                                      audience=settings.audience)
