"""The shared retrying JSON POST (adapters/http/json_post.py) against a real server on 127.0.0.1."""

from __future__ import annotations

import email.utils
import socket
import time
from typing import Any

import httpx
import pytest

from book_agent_adapters.http.json_post import (
    JsonPoster,
    PostTimeout,
    PostTransportError,
    PostUnreachable,
    retry_after_seconds,
    ssl_context,
)
from book_agent_adapters.http.retry_policy import MAX_RETRIES_CAP, RetryPolicy
from tests.support.loopback import LoopbackServer, Reply

KEY = "sk-post-SECRET-7777-do-not-leak"
PATH = "/v1/thing"


def make_poster(url: str, sleeps: list[float] | None = None, **kw: Any) -> JsonPoster:
    retry: dict[str, Any] = {"max_retries": 2, "backoff": 0.001, "max_wait": 0.05}
    retry.update({k: kw.pop(k) for k in list(kw) if k in retry})
    options: dict[str, Any] = {"timeout": 2.0, "policy": RetryPolicy(**retry), **kw}
    return JsonPoster(url, sleep=sleeps.append if sleeps is not None else (lambda s: None), **options)


def test_retry_then_success_sends_the_same_json_each_time(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(Reply(503, {"error": "busy"}), Reply(200, {"ok": True}))
    sleeps: list[float] = []
    poster = make_poster(loopback_server.url(PATH), sleeps)
    posted = poster.post({"query": "河流 and floods", "n": 3}, KEY)
    poster.close()
    assert posted.response.status_code == 200 and posted.response.json() == {"ok": True}
    assert posted.attempts == 2 and posted.retries == 1
    assert sleeps == [0.001]  # no Retry-After: backoff * 2**0
    assert [r.method for r in loopback_server.requests] == ["POST", "POST"]
    for request in loopback_server.requests:
        assert request.path == PATH
        assert request.json == {"query": "河流 and floods", "n": 3}
        assert request.body.isascii()  # non-ASCII text travels as JSON escapes
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["Authorization"] == f"Bearer {KEY}"


def test_no_key_sends_no_authorization(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(Reply(200, {}))
    make_poster(loopback_server.url(PATH)).post({"a": 1})
    assert "Authorization" not in loopback_server.requests[0].headers


def test_retries_are_bounded_with_exponential_backoff(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: Reply(429, {"error": "slow down"})
    sleeps: list[float] = []
    posted = make_poster(loopback_server.url(PATH), sleeps, max_retries=3).post({})
    assert posted.response.status_code == 429 and posted.attempts == 4  # returned, not judged
    assert len(loopback_server.requests) == 4
    assert sleeps == [0.001, 0.002, 0.004]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422, 501, 307])
def test_status_outside_the_retry_set_is_returned_at_once(loopback_server: LoopbackServer, status: int) -> None:
    loopback_server.handler = lambda request: Reply(status, {"error": "boom"})
    sleeps: list[float] = []
    posted = make_poster(loopback_server.url(PATH), sleeps).post({})
    assert posted.response.status_code == status and posted.attempts == 1
    assert len(loopback_server.requests) == 1 and sleeps == []


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_the_one_retry_set(loopback_server: LoopbackServer, status: int) -> None:
    loopback_server.queue(Reply(status, {"error": "again"}), Reply(200, {"ok": 1}))
    posted = make_poster(loopback_server.url(PATH)).post({})
    assert posted.response.status_code == 200 and posted.attempts == 2


@pytest.mark.parametrize(("retry_after", "expected"), [
    ("0.05", 0.05),  # exactly the cap: honoured
    ("0.02", 0.02),
    ("-5", 0.0),
    ("soon", 0.001),  # unusable: backoff
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past
])
def test_retry_after_is_honoured(loopback_server: LoopbackServer, retry_after: str, expected: float) -> None:
    loopback_server.queue(Reply(429, {}, headers={"Retry-After": retry_after}), Reply(200, {"ok": 1}))
    sleeps: list[float] = []
    posted = make_poster(loopback_server.url(PATH), sleeps).post({})
    assert posted.response.status_code == 200 and posted.attempts == 2
    assert sleeps == [pytest.approx(expected)]


@pytest.mark.parametrize("retry_after", ["30", "an hour from now"])
def test_a_longer_retry_after_than_the_cap_is_not_shortened(loopback_server: LoopbackServer,
                                                            retry_after: str) -> None:
    if retry_after == "an hour from now":  # an HTTP date (built here: stable test ids)
        retry_after = email.utils.formatdate(time.time() + 3600, usegmt=True)
    loopback_server.handler = lambda request: Reply(503, {}, headers={"Retry-After": retry_after})
    sleeps: list[float] = []
    posted = make_poster(loopback_server.url(PATH), sleeps).post({})
    # asking again sooner than told would not honour it: the answer goes back with the wait
    assert posted.attempts == 1 and sleeps == [] and len(loopback_server.requests) == 1
    assert posted.retry_after is not None and posted.retry_after > 0.05


def test_retries_are_capped_whatever_the_config(loopback_server: LoopbackServer) -> None:
    loopback_server.handler = lambda request: Reply(503, {})
    posted = make_poster(loopback_server.url(PATH), max_retries=1000, backoff=0.0).post({})
    assert posted.attempts == MAX_RETRIES_CAP + 1


@pytest.mark.parametrize("injected", [False, True])
def test_no_redirect_is_followed(loopback_server: LoopbackServer, injected: bool) -> None:
    target = loopback_server.url("/elsewhere")
    loopback_server.handler = lambda request: (
        Reply(200, {"followed": True}) if request.path == "/elsewhere"
        else Reply(307, b"", headers={"Location": target}))
    # even an injected client that would follow redirects must not
    client = httpx.Client(follow_redirects=True, trust_env=False) if injected else None
    poster = make_poster(loopback_server.url(PATH), client=client)
    posted = poster.post({"a": 1}, KEY)
    assert posted.response.status_code == 307 and posted.response.headers["Location"] == target
    assert [r.path for r in loopback_server.requests] == [PATH]
    if client is not None:
        client.close()


def test_timeout_is_surfaced_with_its_cause(loopback_server: LoopbackServer) -> None:
    loopback_server.queue(Reply(200, {}, delay=1.0))
    sleeps: list[float] = []
    started = time.monotonic()
    with pytest.raises(PostTimeout) as info:
        make_poster(loopback_server.url(PATH), sleeps, timeout=0.2).post({}, KEY)
    assert time.monotonic() - started < 0.9
    assert isinstance(info.value, PostTransportError)
    assert isinstance(info.value.cause, httpx.TimeoutException)
    assert info.value.__cause__ is info.value.cause
    assert "0.2 s" in info.value.message and KEY not in str(info.value)
    assert sleeps == [] and len(loopback_server.requests) == 1  # a timeout is not retried


def test_unreachable_is_surfaced_and_redacted() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # a key that also appears in the URL shows the message is redacted
    url = f"http://127.0.0.1:{port}/{KEY}/rerank"
    with pytest.raises(PostUnreachable) as info:
        make_poster(url).post({}, KEY)
    assert isinstance(info.value.cause, httpx.ConnectError)
    assert KEY not in str(info.value) and KEY not in repr(info.value) and "***" in info.value.message


def test_built_client_uses_the_cached_ssl_context_and_close_respects_ownership() -> None:
    assert ssl_context() is ssl_context()  # built once per process
    poster = make_poster("https://127.0.0.1:1/x")
    client = poster.client()
    assert client is poster.client()  # one kept-alive client per poster
    assert client.follow_redirects is False and client.trust_env is False
    poster.close()
    assert client.is_closed and poster.client() is not client  # a new one after close
    poster.close()

    injected = httpx.Client(trust_env=False)
    poster = make_poster("https://127.0.0.1:1/x", client=injected)
    assert poster.client() is injected
    poster.close()
    assert not injected.is_closed  # the caller owns it
    injected.close()
    assert KEY not in repr(poster) and "127.0.0.1:1/x" in repr(poster)


@pytest.mark.parametrize(("value", "expected"), [("2", 2.0), ("0.5", 0.5), ("-3", -3.0), ("nan", None), ("inf", None),
                                                 ("soon", None), ("", None), (None, None)])
def test_retry_after_seconds(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value) == expected
