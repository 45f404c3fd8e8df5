"""Remote query encoding against a real HTTP server on 127.0.0.1 (tests/support/loopback.py)."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest

from book_agent.domain.errors import QueryRuntimeError
from book_agent.domain.network import NetworkPolicy
from book_agent_adapters.encoders.http_encoder import HttpQueryEncoder, _retry_after_seconds
from book_agent_adapters.encoders.query_runtime import QueryRuntime
from tests.support.loopback import LoopbackServer, Reply

KEY = "sk-test-SECRET-4242-do-not-leak"
DIMS = 8
PATH = "/v1/embeddings"


def embedding_reply(values: list[float] | None = None) -> Reply:
    values = values if values is not None else [float(i + 1) for i in range(DIMS)]
    return Reply(200, {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": values}],
                       "model": "BAAI/bge-m3"})


def make_encoder(server: LoopbackServer, sleeps: list[float] | None = None, **kw: Any) -> HttpQueryEncoder:
    url = server.url(PATH)
    policy = kw.pop("policy", NetworkPolicy(True, (url,), "BOOK_KEY"))
    return HttpQueryEncoder(
        url, "BAAI/bge-m3", DIMS, policy, provider="siliconflow",
        client=httpx.Client(trust_env=False), environ=kw.pop("environ", {"BOOK_KEY": KEY}),
        backoff=0.001, max_retry_after=0.01,
        sleep=(sleeps.append if sleeps is not None else lambda s: None), **kw,
    )


def assert_no_key(error: QueryRuntimeError) -> None:
    for text in (str(error), repr(error), repr(error.to_dict())):
        assert KEY not in text


def test_success_sends_model_input_and_key(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(embedding_reply())
    encoder = make_encoder(loopback_server, query_instruction="query: ")
    vector = encoder.encode("rivers and floods")
    assert vector.dtype == np.float32
    np.testing.assert_allclose(vector, np.arange(1, DIMS + 1, dtype=np.float32))
    (request,) = loopback_server.requests
    assert request.method == "POST" and request.path == PATH
    assert request.json == {"model": "BAAI/bge-m3", "input": "query: rivers and floods",
                            "encoding_format": "float"}
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(encoder) and KEY not in encoder.route


def test_401_is_auth_failed_and_key_is_redacted(loopback_server: LoopbackServer) -> None:
    # a hostile provider that echoes the key back in its error body
    loopback_server.queue(Reply(401, {"error": f"invalid key {KEY}"}))
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server).encode("q")
    assert info.value.code == "query.auth_failed"
    assert "***" in info.value.details["body_excerpt"]
    assert_no_key(info.value)
    assert len(loopback_server.requests) == 1  # 401 is not retried


def test_missing_key_makes_no_request(loopback_server: LoopbackServer) -> None:
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server, environ={}).encode("q")
    assert info.value.code == "query.auth_missing"
    assert "BOOK_KEY" in info.value.message
    assert loopback_server.requests == []


def test_429_then_success_honours_retry_after(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(Reply(429, {"error": "slow down"}, headers={"Retry-After": "0.005"}), embedding_reply())
    sleeps: list[float] = []
    vector = make_encoder(loopback_server, sleeps).encode("q")
    assert vector.shape == (DIMS,)
    assert len(loopback_server.requests) == 2
    assert sleeps == [0.005]  # what the server asked, within max_retry_after


def test_a_retry_after_beyond_the_cap_is_reported_not_shortened(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: Reply(429, {"error": "slow down"}, headers={"Retry-After": "30"})
    sleeps: list[float] = []
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server, sleeps).encode("q")
    assert info.value.code == "query.rate_limited" and info.value.details["retry_after_seconds"] == 30.0
    assert sleeps == [] and len(loopback_server.requests) == 1


def test_429_every_time_is_rate_limited(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: Reply(429, {"error": "slow down"})
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server, max_retries=2).encode("q")
    assert info.value.code == "query.rate_limited"
    assert len(loopback_server.requests) == 3


def test_500_is_retried_with_backoff_then_fails(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: Reply(500, {"error": "boom"})
    sleeps: list[float] = []
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server, sleeps, max_retries=3).encode("q")
    assert info.value.code == "query.provider_error"
    assert info.value.details["status"] == 500 and info.value.details["attempts"] == 4
    assert len(loopback_server.requests) == 4
    assert sleeps == [0.001, 0.002, 0.004]  # exponential backoff, no Retry-After
    assert_no_key(info.value)


def test_timeout(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(Reply(200, {"data": []}, delay=1.0))
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server, timeout=0.2).encode("q")
    assert info.value.code == "query.timeout"
    assert_no_key(info.value)


@pytest.mark.parametrize("body", ["{not json", {"data": []}, {"data": [{"embedding": "x"}]}, {"nope": 1}])
def test_malformed_reply_is_bad_response(loopback_server: LoopbackServer, body: Any) -> None:
    loopback_server.queue(Reply(200, body))
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server).encode("q")
    assert info.value.code == "query.bad_response"


def test_non_finite_values_are_refused(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(Reply(200, '{"data": [{"embedding": [1, 2, 3, 4, 5, 6, 7, 1e39]}]}'))
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server).encode("q")
    assert info.value.code == "query.bad_response"


def test_wrong_dimensions(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(embedding_reply([0.5] * (DIMS + 1)))
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server).encode("q")
    assert info.value.code == "query.dimension_mismatch"
    assert info.value.details["got"] == DIMS + 1 and info.value.details["expected"] == DIMS


def test_redirect_is_not_followed(loopback_server: LoopbackServer) -> None:
    elsewhere = loopback_server.url("/elsewhere")
    loopback_server.queue(Reply(307, {}, headers={"Location": elsewhere}))
    loopback_server.handler = lambda request: embedding_reply()
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server).encode("q")
    assert info.value.code == "query.redirect_refused"
    assert info.value.details["location"] == elsewhere
    assert [r.path for r in loopback_server.requests] == [PATH]


def test_connection_refused_is_provider_error() -> None:
    with LoopbackServer() as server:
        url = server.url(PATH)
    policy = NetworkPolicy(True, (url,), "BOOK_KEY")  # the server is gone: nothing listens
    encoder = HttpQueryEncoder(url, "m", DIMS, policy, client=httpx.Client(trust_env=False),
                               environ={"BOOK_KEY": KEY}, sleep=lambda s: None)
    with pytest.raises(QueryRuntimeError) as info:
        encoder.encode("q")
    assert info.value.code == "query.provider_error"


@pytest.mark.parametrize("variant", ["off", "slash", "prefix", "base", "other-port", "query-string"])
def test_no_request_unless_the_endpoint_is_allowed_exactly(loopback_server: LoopbackServer, variant: str) -> None:
    loopback_server.handler = lambda request: embedding_reply()
    url = loopback_server.url(PATH)
    allowed = {
        "off": (url,),
        "slash": (url + "/",),
        "prefix": (loopback_server.url("/v1"),),
        "base": (loopback_server.base_url,),
        "other-port": (url.replace("127.0.0.1:", "127.0.0.1:1"),),
        "query-string": (url + "?x=1",),
    }[variant]
    policy = NetworkPolicy(variant != "off", allowed, "BOOK_KEY")
    with pytest.raises(QueryRuntimeError) as info:
        make_encoder(loopback_server, policy=policy).encode("q")
    expected = "network.remote_not_allowed" if variant == "off" else "network.endpoint_not_allowed"
    assert info.value.code == expected
    assert loopback_server.requests == []


def runtime(server: LoopbackServer, network: dict[str, Any], environ: dict[str, str]) -> QueryRuntime:
    spec = {"provider": "siliconflow", "model": "BAAI/bge-m3", "dimensions": DIMS, "metric": "cosine",
            "normalized": True, "endpoint_hint": server.url(PATH)}
    return QueryRuntime(spec, {"network": network}, http_client=httpx.Client(trust_env=False),
                        environ=environ, http_options={"backoff": 0.001, "max_retry_after": 0.01})


def test_runtime_remote_route_ok_and_normalised(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: embedding_reply()
    network = {"allow_remote_requests": True, "allowed_endpoints": [loopback_server.url(PATH)],
               "auth_env": "BOOK_KEY"}
    result = runtime(loopback_server, network, {"BOOK_KEY": KEY}).encode_query("what about rivers?")
    assert result.status == "ok"
    assert result.route == f"remote:siliconflow:{loopback_server.url(PATH)}"
    assert result.vector is not None
    assert abs(float(np.linalg.norm(result.vector)) - 1.0) < 1e-6
    assert KEY not in repr(result) and KEY not in repr(result.to_dict())


def test_runtime_remote_failure_is_reported_without_the_key(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: Reply(403, {"error": f"forbidden for {KEY}"})
    network = {"allow_remote_requests": True, "allowed_endpoints": [loopback_server.url(PATH)],
               "auth_env": "BOOK_KEY"}
    result = runtime(loopback_server, network, {"BOOK_KEY": KEY}).encode_query("q")
    assert result.status == "unavailable" and result.vector is None
    assert result.error is not None and result.error["code"] == "query.auth_failed"
    assert "query.local_model_missing" in {c["code"] for c in result.error["details"]["causes"]}
    assert KEY not in repr(result.to_dict()) and KEY not in repr(result)


def test_runtime_off_by_default_makes_no_request(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: embedding_reply()
    result = runtime(loopback_server, {}, {"BOOK_KEY": KEY}).encode_query("q")
    assert result.status == "unavailable"
    assert result.error is not None and result.error["code"] == "network.remote_not_allowed"
    remediation = result.error["remediation"]
    assert "--allow-remote" in remediation and "query.model_dir" in remediation  # both fixes
    assert loopback_server.requests == []


@pytest.mark.parametrize(("value", "expected"), [("2", 2.0), ("0.5", 0.5), ("soon", None), ("", None),
                                                 ("Wed, 21 Oct 2015 07:28:00 GMT", "past")])
def test_retry_after_parsing(value: str, expected: Any) -> None:
    got = _retry_after_seconds(value)
    if expected == "past":
        assert got is not None and got < 0
    else:
        assert got == expected
