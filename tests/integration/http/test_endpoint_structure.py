"""Issue 23, class 6: a secret in an endpoint URL is refused by the URL's structure, not by a
list of parameter names.

An allowed endpoint carries no userinfo, query, fragment, `;params` or percent-encoded
delimiter at all. Generated URLs put a generated secret in each such place, under any name
(`client_secret`, `X-Amz-Signature`, `access_token`, percent-encoded names, made-up ones): every
one is `config.endpoint_credentials` (`host.url_credentials` / `host.bad_url` for a host
install), nothing is written, and the secret is in no error, output or log line. Bare URLs
(scheme, host, port, path) still pass.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import NetworkPolicy, check_endpoint, endpoint_problem
from book_agent.domain.remote_server import remote_server
from tests.support.cli_support import run_cli

SAFE = "abcdefghijklmnopqrstuvwxyz0123456789-"
labels = st.text(SAFE, min_size=1, max_size=12).filter(lambda s: not s.startswith("-") and not s.endswith("-"))
hosts = st.one_of(st.builds(lambda a, b: f"{a}.{b}", labels, st.sampled_from(["com", "cn", "org", "example"])),
                  st.just("127.0.0.1"), st.just("localhost"), st.just("[::1]"))
paths = st.lists(st.text(SAFE + "_.~", min_size=1, max_size=10), max_size=4).map(lambda p: "/" + "/".join(p))
ports = st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}"))
secrets_ = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=16, max_size=40)
NAMES = ["client_secret", "X-Amz-Signature", "access_token", "token", "api_key", "sig", "key", "password",
         "X-Goog-Credential", "code", "session", "model", "lang", "q", "x"]
names = st.one_of(st.sampled_from(NAMES), st.text(SAFE + "_", min_size=1, max_size=12),
                  st.sampled_from(NAMES).map(lambda n: "".join(f"%{ord(c):02X}" for c in n)),  # fully encoded
                  st.sampled_from(NAMES).map(lambda n: quote(n[0], safe="") + n[1:]))  # ?%74oken=


def with_secret(where: str, name: str, secret: str, base: str, path: str) -> str:
    scheme, rest = base.split("://", 1)
    if where == "userinfo":
        return f"{scheme}://{name}:{secret}@{rest}{path}"
    if where == "userinfo-only":
        return f"{scheme}://{secret}@{rest}{path}"
    if where == "query":
        return f"{base}{path}?{name}={secret}"
    if where == "query-later":
        return f"{base}{path}?model=bge&{name}={secret}"
    if where == "fragment":
        return f"{base}{path}#{name}={secret}"
    if where == "params":
        return f"{base}{path or '/'};{name}={secret}"
    if where == "encoded-query":  # a server that decodes before routing reads ?name=secret
        return f"{base}{path}%3F{name}%3D{secret}"
    return f"{base}{path}%253F{name}%253D{secret}"  # encoded twice


PLACES = ["userinfo", "userinfo-only", "query", "query-later", "fragment", "params", "encoded-query", "double"]


def secret_urls() -> st.SearchStrategy[tuple[str, str]]:
    return st.builds(lambda scheme, host, port, path, where, name, secret:
                     (with_secret(where, name, secret, f"{scheme}://{host}{port}", path), secret),
                     st.sampled_from(["https", "http"]), hosts, ports, paths, st.sampled_from(PLACES), names,
                     secrets_)


@settings(max_examples=300, deadline=None)
@given(secret_urls())
@example(("https://api.example.com/v1/embeddings?client_secret=Zq8vT1u0PjR5wLx2", "Zq8vT1u0PjR5wLx2"))
@example(("https://bucket.s3.amazonaws.com/o?X-Amz-Signature=Zq8vT1u0PjR5wLx2", "Zq8vT1u0PjR5wLx2"))
@example(("https://api.example.com/v1/embeddings#access_token=Zq8vT1u0PjR5wLx2", "Zq8vT1u0PjR5wLx2"))
@example(("https://api.example.com/v1/embeddings;token=Zq8vT1u0PjR5wLx2", "Zq8vT1u0PjR5wLx2"))
@example(("https://api.example.com/v1/embeddings?%74oken=Zq8vT1u0PjR5wLx2", "Zq8vT1u0PjR5wLx2"))
def test_any_secret_anywhere_but_the_path_is_refused_and_never_echoed(case: tuple[str, str]) -> None:
    url, secret = case
    problem = endpoint_problem(url)
    assert problem is not None and problem[0] == "config.endpoint_credentials", (url, problem)
    assert secret not in "".join(problem)
    for check in (lambda: check_endpoint(url), lambda: NetworkPolicy(True, (url,), "KEY").check(url)):
        with pytest.raises(BookAgentError) as info:
            check()
        assert info.value.code == "config.endpoint_credentials"
        assert secret not in json.dumps(info.value.to_dict()) and secret not in str(info.value)
        assert "--auth-env" in (info.value.remediation or "") and "environment variable" in (info.value.remediation or "")
    with pytest.raises(BookAgentError) as host_info:
        remote_server(url)
    assert host_info.value.code in {"host.url_credentials", "host.bad_url"}
    assert secret not in json.dumps(host_info.value.to_dict())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.one_of(secret_urls(), st.builds(lambda junk, s: (f"https://{junk}?token={s}", s),
                                               st.text(min_size=1, max_size=30), secrets_)))
def test_a_reranker_refuses_them_too_without_echoing(tmp_path: Path, case: tuple[str, str]) -> None:
    from book_agent_adapters.rerankers import create_reranker

    url, secret = case
    with pytest.raises(BookAgentError) as info:
        create_reranker({"provider": "siliconflow", "endpoint": url}, tmp_path)
    assert info.value.code in {"config.endpoint_credentials", "rerank.config_invalid"}, info.value.code
    assert secret not in json.dumps(info.value.to_dict())


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["https", "http"]), hosts, ports, paths)
def test_a_bare_endpoint_passes(scheme: str, host: str, port: str, path: str) -> None:
    url = f"{scheme}://{host}{port}{path}"
    problem = endpoint_problem(url)
    loopback = host in ("127.0.0.1", "localhost", "[::1]")
    assert problem is None if scheme == "https" or loopback else problem is not None and \
        problem[0] == "config.insecure_endpoint"


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=60), secrets_)
def test_a_malformed_url_with_a_secret_never_echoes_it(junk: str, secret: str) -> None:
    url = f"https://{junk}?token={secret}"
    problem = endpoint_problem(url)
    assert problem is not None and secret not in "".join(problem)
    with pytest.raises(BookAgentError) as info:
        check_endpoint(url)
    assert secret not in json.dumps(info.value.to_dict())


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, pdf_package_template: Path) -> Path:
    folder = tmp_path_factory.mktemp("structure") / "data"
    assert run_cli("--data-dir", str(folder), "init", str(pdf_package_template), "--json").code == 0
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=secret_urls(), option=st.sampled_from(["--allowed-endpoint", "--query-endpoint", "--reranker-endpoint"]))
def test_configure_writes_nothing_and_logs_no_secret(data: Path, case: tuple[str, str], option: str) -> None:
    url, secret = case
    before = snapshot(data)
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    keep = Keep(logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(keep)
    level = root.level
    root.setLevel(logging.DEBUG)
    try:
        result = run_cli("--data-dir", str(data), "configure", "test-book", "--allow-remote", option, url,
                         "--auth-env", "BOOK_AGENT_TEST_KEY", "--json")
    finally:
        root.removeHandler(keep)
        root.setLevel(level)
    assert result.code == 1 and result.error_code == "config.endpoint_credentials", result.stdout
    assert "--auth-env" in result.json["error"]["remediation"]
    assert secret.encode() not in result.stdout and secret not in result.stderr
    assert not any(secret in line for line in records)
    assert snapshot(data) == before  # nothing written: config.json byte for byte, no file added


def test_a_hand_edited_config_with_a_fragment_secret_is_refused_and_repaired(tmp_path: Path,
                                                                              pdf_package: Path) -> None:
    secret = "Zq8vT1u0PjR5wLx2hand"
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init", str(pdf_package), "--json").code == 0
    config = data / "books" / "test-book" / "config.json"
    settings_ = json.loads(config.read_text(encoding="utf-8"))
    settings_["network"]["allowed_endpoints"] = [f"https://api.example.com/v1/embeddings#access_token={secret}"]
    config.write_text(json.dumps(settings_), encoding="utf-8")
    result = run_cli("--data-dir", str(data), "search", "test-book", "rivers", "--json")
    assert result.error_code == "config.endpoint_credentials" and secret.encode() not in result.stdout
    assert secret not in result.stderr
    fixed = run_cli("--data-dir", str(data), "configure", "test-book", "--reset", "--json")
    assert fixed.code == 0 and secret not in config.read_text(encoding="utf-8")
