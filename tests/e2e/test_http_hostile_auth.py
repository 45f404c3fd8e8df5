"""`serve`'s authentication against what a careless or hostile setup hands it: token and key
files that are FIFOs or devices (a coded error at once, never a hang at start), and validly
signed JWTs whose `exp` no clock reaches (401, never a 500 or a traceback in the log)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.http_serve import MCP_HEADERS, free_port, serving
from tests.support.jwt_tokens import AUDIENCE, ISSUER, TestIdp
from tests.support.library_support import three_book_library


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_book_library(tmp_path_factory.mktemp("library"))


def _fifo(folder: Path) -> Path:
    path = folder / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(("option", "make", "code"), [
    ("--token-file", _fifo, "http.bad_token_file"),
    ("--token-file", lambda _: Path("/dev/zero"), "http.bad_token_file"),
    ("--token-file", lambda folder: folder, "http.bad_token_file"),
    ("--jwt-public-key", _fifo, "http.bad_jwt_key"),
    ("--jwt-public-key", lambda _: Path("/dev/zero"), "http.bad_jwt_key"),
    ("--access-log", _fifo, "http.bad_access_log"),  # a FIFO no process reads would block the start
])
def test_a_file_option_that_is_no_regular_file_is_refused_at_start(option: str, make: object, code: str,
                                                                    data: Path, tmp_path: Path) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    extra = ["--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE] if option == "--jwt-public-key" else []
    proc = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", "@all",
                           "--port", str(free_port()), option, str(path), *extra, "--json"],
                          capture_output=True, timeout=120, check=False)  # a hang guard, not a speed check
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == code
    assert b"Traceback" not in proc.stderr


def _raw_signed(idp: TestIdp, payload: str) -> str:
    from joserfc import jwk, jws

    key = jwk.import_key(idp.keys.private_key.get_secret_value(), "RSA")
    return str(jws.serialize_compact({"alg": "RS256", "typ": "JWT"}, payload.encode(), key, algorithms=["RS256"]))


def test_jwts_whose_exp_no_clock_reaches_get_401_and_no_traceback(data: Path, tmp_path: Path) -> None:
    idp = TestIdp(tmp_path)
    now = int(time.time())
    claims = f'"sub":"r","iss":"{ISSUER}","aud":"{AUDIENCE}","iat":{now}'
    hostile = [_raw_signed(idp, f"{{{claims},\"exp\":{exp}}}") for exp in ("Infinity", "1e309", "1e400", "NaN")]
    hostile += [idp.sign(exp=10**20), idp.sign(exp=now + 400 * 24 * 3600), idp.sign(iat=-1e308)]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    with serving(data, tmp_path, *idp.options()) as served:
        for token in hostile:
            answer = httpx.post(served.base + "/mcp", content=body, timeout=30,
                                headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
            assert answer.status_code == 401
        ok = httpx.post(served.base + "/mcp", content=body, timeout=30,
                        headers={**MCP_HEADERS, "Authorization": f"Bearer {idp.sign()}"})
        assert ok.status_code == 200
    # `serving` checked on exit: the server's whole output holds no traceback
