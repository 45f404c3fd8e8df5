"""A test identity provider: an RSA key pair, its public key as a PEM file, and JWTs it signs with
exactly the claims given (FastMCP's RSAKeyPair.create_token always adds exp; a JWT without one, or
with a claim of an odd shape, is signed here with joserfc, FastMCP's own JOSE library)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

ISSUER, AUDIENCE = "https://idp.example.org", "book-agent"
_ABSENT = object()


class TestIdp:
    __test__ = False  # not a test class

    def __init__(self, directory: Path) -> None:
        from fastmcp.server.auth.providers.jwt import RSAKeyPair

        self.keys = RSAKeyPair.generate()
        public = self.keys.public_key
        self.public_key_file = directory / "idp.pem"
        self.public_key_file.write_text(public.get_secret_value() if hasattr(public, "get_secret_value")
                                        else str(public))

    def options(self, *extra: str) -> list[str]:
        """serve's options for JWTs from this provider."""
        return ["--jwt-public-key", str(self.public_key_file), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE,
                *extra]

    def sign(self, **claims: Any) -> str:
        """A JWT with the standard claims (sub, iss, aud, iat, exp 10 minutes on) overridden by
        `claims`; a claim given as ABSENT is left out."""
        from joserfc import jwk, jwt

        now = int(time.time())
        payload = {"sub": "reader", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600, **claims}
        payload = {k: v for k, v in payload.items() if v is not _ABSENT}
        key = jwk.import_key(self.keys.private_key.get_secret_value(), "RSA")
        return str(jwt.encode({"alg": "RS256"}, payload, key, algorithms=["RS256"]))


ABSENT = _ABSENT
