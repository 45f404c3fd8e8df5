import httpx

from tests.support.loopback import Reply


def test_loopback_server_replays_queue_then_handler(loopback_server):
    loopback_server.queue(Reply(429, {"error": "slow down"}))
    loopback_server.handler = lambda request: Reply(200, {"echo": request.json})
    with httpx.Client() as client:
        first = client.post(loopback_server.url("/v1/x"), json={"a": 1})
        second = client.post(loopback_server.url("/v1/x"), json={"a": 2})
    assert first.status_code == 429
    assert second.json() == {"echo": {"a": 2}}
    assert [r.json for r in loopback_server.requests] == [{"a": 1}, {"a": 2}]
