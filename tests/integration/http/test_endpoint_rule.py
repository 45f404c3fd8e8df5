"""Issue 13, findings 3 and 12: one rule for every URL book-agent may request.

Plain http only to a literal loopback host (one helper, `is_loopback_host`, for `configure`
and for the local reranker alike), and never a credential inside the URL (user:password@ or
a key-like query parameter), wherever a URL is accepted: allowed endpoints, the query
endpoint, reranker endpoints, a hand-edited config.json, a package's vectors.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import NetworkPolicy, endpoint_problem, is_loopback_host
from book_agent_adapters.package.inspector import PackageInspector
from book_agent_adapters.rerankers import create_reranker
from tests.support.cli_support import run_cli
from tests.support.package_builder import rehash

SECRET = "s3cr3t-pw"

# host as written in a URL -> loopback? (the decisions documented in contracts/query-runtime.md)
HOSTS = {
    "127.0.0.1": True, "127.1.2.3": True, "127.255.255.254": True, "localhost": True, "LOCALHOST": True,
    "[::1]": True, "[0:0:0:0:0:0:0:1]": True,
    "127.evil.example": False, "127.0.0.1.nip.io": False, "localhost.": False, "LOCALHOST.": False,
    "a.localhost": False, "0x7f.1": False, "0x7f000001": False, "2130706433": False, "127.1": False,
    "0177.0.0.1": False, "[::ffff:127.0.0.1]": False, "0.0.0.0": False, "10.0.0.5": False,
    "[::]": False, "example.com": False,
}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, pdf_package_template: Path) -> Path:
    folder = tmp_path_factory.mktemp("endpoints") / "data"
    assert run_cli("--data-dir", str(folder), "init", str(pdf_package_template), "--json").code == 0
    return folder


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_loopback_is_decided_by_one_helper(host: str) -> None:
    assert is_loopback_host(host.strip("[]")) is HOSTS[host]
    assert is_loopback_host(host) is HOSTS[host]  # with brackets too


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_configure_and_the_local_reranker_agree(data: Path, tmp_path: Path, host: str) -> None:
    url = f"http://{host}:8080/rerank"
    configured = run_cli("--data-dir", str(data), "configure", "test-book", "--reset", "--allowed-endpoint", url,
                         "--json")
    try:
        create_reranker({"provider": "local", "endpoint": url}, tmp_path)
        local_ok = True
    except BookAgentError as exc:
        assert exc.code == "rerank.endpoint_not_loopback"
        local_ok = False
    assert (configured.code == 0) is local_ok is HOSTS[host], configured.stdout
    if not HOSTS[host]:
        assert configured.error_code == "config.insecure_endpoint"
        assert run_cli("--data-dir", str(data), "configure", "test-book", "--reset", "--allowed-endpoint",
                       f"https://{host.strip('[]') if ':' not in host else host}:8080/rerank", "--json").code == 0


CREDENTIALS = [
    f"https://user:{SECRET}@api.siliconflow.cn/v1/embeddings",
    f"https://{SECRET}@api.siliconflow.cn/v1/embeddings",
    f"http://user:{SECRET}@127.0.0.1:8080/rerank",
    f"https://api.example.com/v1/embeddings?api_key={SECRET}",
    f"https://api.example.com/v1/embeddings?model=x&token={SECRET}",
    f"https://api.example.com/v1/embeddings?X-Api-Key={SECRET}",
]


@pytest.mark.parametrize("url", CREDENTIALS)
@pytest.mark.parametrize("option", ["--allowed-endpoint", "--query-endpoint", "--reranker-endpoint"])
def test_credentials_in_a_url_are_refused_and_never_stored(data: Path, url: str, option: str) -> None:
    config = data / "books" / "test-book" / "config.json"
    before = config.read_bytes()
    result = run_cli("--data-dir", str(data), "configure", "test-book", option, url, "--json")
    assert result.code == 1 and result.error_code == "config.endpoint_credentials"
    assert "--auth-env" in result.json["error"]["remediation"]
    assert SECRET.encode() not in result.stdout and SECRET not in result.stderr
    assert config.read_bytes() == before


@pytest.mark.parametrize("url", CREDENTIALS)
def test_rerankers_refuse_credentials_in_their_endpoint(tmp_path: Path, url: str) -> None:
    provider = "local" if "127.0.0.1" in url else "siliconflow"
    with pytest.raises(BookAgentError) as info:
        create_reranker({"provider": provider, "endpoint": url}, tmp_path)
    assert info.value.code == "config.endpoint_credentials" and SECRET not in str(info.value.to_dict())


@pytest.mark.parametrize("url", CREDENTIALS)
def test_the_network_policy_refuses_them_even_when_listed(url: str) -> None:
    with pytest.raises(BookAgentError) as info:
        NetworkPolicy(True, (url,), "KEY").check(url)
    assert info.value.code == "config.endpoint_credentials" and SECRET not in str(info.value.to_dict())


def test_a_hand_edited_config_is_held_to_the_same_rule(tmp_path: Path, pdf_package: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init", str(pdf_package), "--json").code == 0
    config = data / "books" / "test-book" / "config.json"
    settings = json.loads(config.read_text(encoding="utf-8"))
    settings["network"]["allowed_endpoints"] = [CREDENTIALS[0]]
    config.write_text(json.dumps(settings), encoding="utf-8")
    result = run_cli("--data-dir", str(data), "search", "test-book", "rivers", "--json")
    assert result.error_code == "config.endpoint_credentials" and SECRET.encode() not in result.stdout
    fixed = run_cli("--data-dir", str(data), "configure", "test-book", "--reset", "--json")
    assert fixed.code == 0 and SECRET not in config.read_text(encoding="utf-8")


def test_a_package_may_not_carry_credentials_in_its_endpoint(pdf_package: Path) -> None:
    vectors = json.loads((pdf_package / "vectors.json").read_text(encoding="utf-8"))
    (pdf_package / "vectors.json").write_text(json.dumps({**vectors, "endpoint": CREDENTIALS[3]}), encoding="utf-8")
    rehash(pdf_package)
    info = PackageInspector().diagnose(pdf_package)
    found = [d for d in info.diagnostics if d.code == "package.vectors_manifest_invalid"]
    assert found and found[0].details["key"] == "endpoint"
    assert SECRET not in json.dumps([d.to_dict() for d in info.diagnostics])
    with pytest.raises(BookAgentError) as refused:  # the contract's inspect refuses it, naming no secret
        PackageInspector().inspect(pdf_package)
    assert SECRET not in json.dumps(refused.value.to_dict())


@pytest.mark.parametrize("url", ["https://api.example.com/v1/embeddings", "http://localhost:8080/v1/embeddings",
                                 "http://[::1]:9000/rerank", "https://api.siliconflow.cn/v1/rerank"])
def test_ordinary_urls_pass(url: str) -> None:
    assert endpoint_problem(url) is None


@pytest.mark.parametrize("url", ["ftp://x.example/", "https://", "https://a b.example/", "https://x.example:99999/",
                                 "http://127.0.0.1\\@evil.example/", "https://x.example/\n", 42, None])
def test_malformed_urls_are_bad_endpoints(url: object) -> None:
    problem = endpoint_problem(url)
    assert problem is not None and problem[0] == "config.bad_endpoint"
