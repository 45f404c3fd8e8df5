"""JWTs that never expire (mcp/auth.py): real RS256 JWTs signed by a test identity provider, checked by
the verifier `serve` builds (signature, issuer, audience, expiry, then the lifetime rule)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.auth import JwtSettings, jwt_verifier
from book_agent.mcp.http.serve import jwt_settings
from tests.support.cli_support import run_cli
from tests.support.jwt_tokens import ABSENT, AUDIENCE, ISSUER, TestIdp

HOUR = 3600


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> TestIdp:
    return TestIdp(tmp_path_factory.mktemp("idp"))


def accepted(idp: TestIdp, token: str, **settings: Any) -> bool:
    verifier = jwt_verifier(JwtSettings(ISSUER, AUDIENCE, idp.public_key_file, **settings))
    return asyncio.run(verifier.verify_token(token)) is not None


NOW = int(time.time())


@pytest.mark.parametrize(("claims", "settings", "ok"), [
    ({}, {}, True),                                              # exp 10 min on: the usual token
    ({"exp": ABSENT}, {}, False),                                # never expires: refused by default
    ({"exp": None}, {}, False),                                  # exp null is no exp
    ({"exp": ABSENT, "iat": ABSENT}, {}, False),
    ({"exp": "9999999999"}, {}, False),                          # a string is not a time
    ({"exp": NOW + 10 * 365 * 24 * HOUR}, {}, False),            # past the default maximum (a day)
    ({"exp": NOW + 23 * HOUR}, {}, True),                        # within it
    ({"exp": NOW + 10 * 365 * 24 * HOUR}, {"max_lifetime_s": 366 * 24 * HOUR}, False),
    ({"exp": NOW + 300 * 24 * HOUR}, {"max_lifetime_s": 366 * 24 * HOUR}, True),  # raised on purpose
    ({"exp": 10**20}, {}, False),                                # never ends in practice
    ({"exp": 10**400}, {}, False),                               # an int no float can hold
    ({"exp": 1e308}, {}, False),
    ({"exp": float("inf")}, {}, False),                          # `Infinity` in the JSON
    ({"exp": float("-inf")}, {}, False),
    ({"exp": float("nan")}, {}, False),
    ({"iat": float("inf")}, {}, False),
    ({"iat": -1e308}, {}, False),                                # exp - iat: past any maximum
    ({"nbf": float("inf")}, {}, False),
    ({"exp": float("inf")}, {"max_lifetime_s": HOUR, "allow_no_exp": True}, False),
    ({"exp": NOW + 2 * HOUR}, {"max_lifetime_s": HOUR}, False),  # exp - iat over the maximum
    ({"exp": NOW + HOUR - 5}, {"max_lifetime_s": HOUR}, True),
    ({"exp": NOW + 2 * HOUR, "iat": ABSENT}, {"max_lifetime_s": HOUR}, False),  # no iat: measured from now
    ({"exp": NOW + 30 + HOUR - 5, "iat": NOW + 30}, {"max_lifetime_s": HOUR}, True),  # iat a little ahead: skew
    ({"exp": NOW + 11 * HOUR, "iat": NOW + 10 * HOUR}, {"max_lifetime_s": HOUR}, False),  # iat in the future
    ({"exp": ABSENT, "iat": NOW + 10 * HOUR}, {"max_lifetime_s": HOUR, "allow_no_exp": True}, False),
    ({"exp": ABSENT}, {"max_lifetime_s": HOUR, "allow_no_exp": True}, True),    # allowed: iat is recent
    ({"exp": ABSENT, "iat": NOW - 2 * HOUR}, {"max_lifetime_s": HOUR, "allow_no_exp": True}, False),  # too old
    ({"exp": ABSENT, "iat": ABSENT}, {"max_lifetime_s": HOUR, "allow_no_exp": True}, False),  # nothing to measure
    ({"exp": NOW - 60}, {"max_lifetime_s": HOUR, "allow_no_exp": True}, False),  # expired stays expired
])
def test_signed_jwts_and_their_lifetime(idp: TestIdp, claims: dict[str, Any], settings: dict[str, Any],
                                        ok: bool) -> None:
    assert accepted(idp, idp.sign(**claims), **settings) is ok


def test_a_bad_signature_stays_refused_whatever_the_lifetime_options(idp: TestIdp, tmp_path: Path) -> None:
    other = TestIdp(tmp_path)
    assert not accepted(idp, other.sign(), max_lifetime_s=HOUR, allow_no_exp=True)
    assert not accepted(idp, other.sign(exp=ABSENT), max_lifetime_s=HOUR, allow_no_exp=True)


@pytest.mark.parametrize(("max_lifetime", "allow", "code"), [
    (None, True, "http.auth_conflict"),        # allowing no exp needs a maximum lifetime
    (0, False, "http.bad_limit"),
    (-1, False, "http.bad_limit"),
    (400 * 24 * HOUR, False, "http.bad_limit"),
])
def test_lifetime_options_are_checked_at_start(max_lifetime: float | None, allow: bool, code: str) -> None:
    with pytest.raises(BookAgentError) as info:
        jwt_settings("/k.pem", None, ISSUER, AUDIENCE, max_lifetime, allow)
    assert info.value.code == code


def test_lifetime_options_without_jwts_are_a_conflict() -> None:
    with pytest.raises(BookAgentError) as info:
        jwt_settings(None, None, None, None, HOUR, False)
    assert info.value.code == "http.auth_conflict"


def test_the_cli_refuses_allow_no_exp_without_a_maximum(idp: TestIdp, tmp_path: Path) -> None:
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", *idp.options("--jwt-allow-no-exp"))
    assert out.code == 1 and out.error_code == "http.auth_conflict"
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", *idp.options("--jwt-max-lifetime", "0"))
    assert out.code == 1 and out.error_code == "http.bad_limit"


def test_the_settings_reach_worker_processes() -> None:
    from book_agent.mcp.http.serve import ServeOptions

    options = ServeOptions(jwt=JwtSettings(ISSUER, AUDIENCE, Path("/k.pem"), max_lifetime_s=HOUR, allow_no_exp=True))
    assert ServeOptions.from_json(options.to_json()).jwt == options.jwt


def _raw_signed(idp: TestIdp, payload: str) -> str:
    """A JWT whose payload is exactly `payload` (JSON text no encoder writes, e.g. 1e309)."""
    from joserfc import jwk, jws

    key = jwk.import_key(idp.keys.private_key.get_secret_value(), "RSA")
    return str(jws.serialize_compact({"alg": "RS256", "typ": "JWT"}, payload.encode(), key, algorithms=["RS256"]))


@pytest.mark.parametrize("exp", ["1e309", "-1e309", "Infinity", "NaN", "1" + "0" * 400, "1e400", "1.7976931348623157e308"])
def test_an_exp_no_clock_can_reach_is_refused_not_an_error(idp: TestIdp, exp: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    token = _raw_signed(idp, f'{{"sub":"r","iss":"{ISSUER}","aud":"{AUDIENCE}","iat":{NOW},"exp":{exp}}}')
    for settings in ({}, {"max_lifetime_s": 366 * 24 * HOUR}, {"max_lifetime_s": HOUR, "allow_no_exp": True}):
        assert not accepted(idp, token, **settings)
    assert "Traceback" not in caplog.text and all(r.exc_info is None for r in caplog.records)
