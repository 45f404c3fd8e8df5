"""A token's books on every surface of a real `serve` on 127.0.0.1 (mcp/book_scope.py): tools, resources,
resource templates, prompts, errors and the access log, for a limited static token and a limited JWT, on a
library server, a list server and a one-book server. Every answer is read raw off the wire (JSON-RPC
over HTTP), so nothing a client library drops (`_meta`, `data`, instructions) can hide a leak."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.http_serve import MCP_HEADERS, free_port, terminate, wait_healthy
from tests.support.jwt_tokens import TestIdp
from tests.support.library_support import three_book_library

TEAM, READER = "team-token-abc123", "reader-token-xyz789"  # the reader may use part-1 only
BOOKS = ("part-0", "part-1", "part-2")
PER_BOOK_CALLS = [("read_entry", {"record_id": "d000"}), ("read_markdown", {"start": 0, "end": 10}),
                  ("get_skill", {}), ("status", {}), ("get_toc", {}), ("read_around", {"record_id": "d000"}),
                  ("render_page", {"page_index": 0}), ("locate_source", {"quote": "river"}),
                  ("read_source", {"locator": {"page_index": 0}})]


class Server:
    def __init__(self, data: Path, logs: Path, ref: str, *extra: str) -> None:
        port = free_port()
        self.log_path = logs / f"server-{port}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115  (closed by stop)
        self.proc = subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), "serve", ref,
                                      "--port", str(port), *extra], stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ))
        self.base = f"http://127.0.0.1:{port}"
        wait_healthy(self.base, self.proc, self.log_path)

        self.exchanges: list[tuple[str, dict[str, Any]]] = []

    def rpc(self, token: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            body["params"] = params
        answer = httpx.post(self.base + "/mcp", json=body, timeout=60,
                            headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        message: dict[str, Any] = answer.json()
        assert ("result" in message) != ("error" in message), message
        self.exchanges.append((json.dumps(body), message))
        return message

    def stop(self) -> str:
        try:
            terminate(self.proc)
        finally:
            self.log.close()
        text = self.log_path.read_text(errors="replace")
        assert "Traceback" not in text
        return text


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_book_library(tmp_path_factory.mktemp("library"))


@pytest.fixture(scope="module")
def token_file(data: Path) -> Path:
    digest = {t: hashlib.sha256(t.encode()).hexdigest() for t in (TEAM, READER)}
    path = data.parent / "tokens.txt"
    path.write_text(f"{digest[TEAM]}\n{digest[READER]} part-1\n")
    return path


@pytest.fixture(scope="module")
def idp(data: Path) -> TestIdp:
    return TestIdp(data.parent)


def served(data: Path, ref: str, *extra: str) -> Iterator[Server]:
    server = Server(data, data.parent, ref, *extra)
    yield server
    log = server.stop()
    assert TEAM not in log and READER not in log


@pytest.fixture(scope="module")
def library_static(data: Path, token_file: Path) -> Iterator[Server]:
    yield from served(data, "@all", "--token-file", str(token_file))


@pytest.fixture(scope="module")
def library_jwt(data: Path, idp: TestIdp) -> Iterator[Server]:
    yield from served(data, "@all", *idp.options())


def every_surface(server: Server, token: str) -> list[Exchange]:
    """Every answer a token can get: the handshake, every list, every resource listed and every
    book's would-be resources, every tool with every book, unknown names."""
    server.exchanges = []
    answers = [server.rpc(token, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                "clientInfo": {"name": "probe", "version": "1"}})]
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        answers.append(server.rpc(token, method, {}))
    listed = answers[2].get("result", {}).get("resources", [])
    for uri in [r["uri"] for r in listed] + [f"book://{b}/{n}" for b in BOOKS for n in ("skill", "metadata")] \
            + ["book://library/books", "book://nope/skill", "book://part%2D0/skill"]:
        answers.append(server.rpc(token, "resources/read", {"uri": uri}))
    answers.append(server.rpc(token, "prompts/get", {"name": "nope", "arguments": {"book_id": "part-0"}}))
    answers.append(server.rpc(token, "tools/call", {"name": "list_books", "arguments": {}}))
    answers.append(server.rpc(token, "tools/call", {"name": "search", "arguments": {"query": "river water"}}))
    for book in (*BOOKS, "nope"):
        answers.append(server.rpc(token, "tools/call", {"name": "search",
                                                         "arguments": {"query": "river", "books": [book]}}))
        for tool, arguments in PER_BOOK_CALLS:
            answers.append(server.rpc(token, "tools/call", {"name": tool, "arguments": {"book_id": book, **arguments}}))
    answers.append(server.rpc(token, "tools/call", {"name": "no_such_tool", "arguments": {"book_id": "part-0"}}))
    return server.exchanges


Exchange = tuple[str, dict[str, Any]]  # (the request as sent, its answer)


def leaks(exchanges: list[Exchange], hidden: tuple[str, ...], echo: bool = True) -> list[str]:
    """The answers that name a hidden book. With `echo`, an answer may repeat an id its own
    request named (a refusal says which of the ids you named it refused), but such a request must
    have been refused; without, no answer may name one at all."""
    found = []
    for asked, answer in exchanges:
        text = json.dumps(answer, ensure_ascii=False)
        for book in hidden:
            if echo and book in asked:
                if not is_refusal(answer):
                    found.append(f"{book} served: {asked[:200]} -> {text[:300]}")
            elif book in text:
                found.append(f"{book} named: {asked[:200]} -> {text[:300]}")
    return found


def is_refusal(answer: dict[str, Any]) -> bool:
    return "error" in answer or bool(answer.get("result", {}).get("isError"))


def result_of(answer: dict[str, Any]) -> dict[str, Any]:
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def tool_data(answer: dict[str, Any]) -> dict[str, Any]:
    result = result_of(answer)
    data: dict[str, Any] = json.loads(result["content"][0]["text"])
    return data


def reader_checks(server: Server, token: str) -> None:
    answers = every_surface(server, token)
    assert not leaks(answers, ("part-0", "part-2")), leaks(answers, ("part-0", "part-2"))
    listed = tool_data(server.rpc(token, "tools/call", {"name": "list_books", "arguments": {}}))
    assert [b["book_id"] for b in listed["books"]] == ["part-1"]
    books = json.loads(result_of(server.rpc(token, "resources/read", {"uri": "book://library/books"}))
                       ["contents"][0]["text"])
    assert [b["book_id"] for b in books["books"]] == ["part-1"]  # the resource is list_books' answer
    found = tool_data(server.rpc(token, "tools/call", {"name": "search", "arguments": {"query": "river water"}}))
    assert found["hits"] and {h["book_id"] for h in found["hits"]} == {"part-1"}
    other = tool_data(server.rpc(token, "tools/call", {"name": "read_entry",
                                                       "arguments": {"book_id": "part-0", "record_id": "d000"}}))
    assert other["error"]["code"] == "mcp.book_not_served"
    # another book's resource answers exactly as a resource that does not exist
    theirs = server.rpc(token, "resources/read", {"uri": "book://part-0/skill"})["error"]
    none = server.rpc(token, "resources/read", {"uri": "book://zz-none/skill"})["error"]
    assert theirs["code"] == none["code"] == -32602
    assert theirs["message"].replace("part-0", "X") == none["message"].replace("zz-none", "X")


def test_a_limited_static_token_sees_only_its_books_on_every_surface(library_static: Server) -> None:
    reader_checks(library_static, READER)
    everyone = tool_data(library_static.rpc(TEAM, "tools/call", {"name": "list_books", "arguments": {}}))
    assert [b["book_id"] for b in everyone["books"]] == list(BOOKS)  # the limit is the token's, not the server's
    assert httpx.get(library_static.base + "/health").json() == {"status": "ok"}  # asks no token: says no books


def test_a_limited_jwt_sees_only_its_books_on_every_surface(library_jwt: Server, idp: TestIdp) -> None:
    reader_checks(library_jwt, idp.sign(books=["part-1"]))
    everyone = tool_data(library_jwt.rpc(idp.sign(), "tools/call", {"name": "list_books", "arguments": {}}))
    assert [b["book_id"] for b in everyone["books"]] == list(BOOKS)  # no books claim: every book


odd_claims = st.one_of(
    st.sampled_from(["part-1", "part-0 part-1 part-2", "part-0,part-1", "*", "@all", "", None, 0, 1, True,
                     {"part-1": True}, {"include": ["part-1"]}, ["part-1", None], ["part-1", 7], [["part-1"]],
                     ["Part-1"], ["*"], [{"id": "part-1"}]]),
    st.text(max_size=12), st.integers(), st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
    st.lists(st.one_of(st.none(), st.integers(), st.sampled_from(BOOKS)), min_size=1, max_size=3)
    .filter(lambda items: not all(isinstance(i, str) for i in items)),
)


@given(claim=odd_claims)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_jwt_books_claim_of_another_shape_gets_no_book_over_http(library_jwt: Server, idp: TestIdp,
                                                                   claim: Any) -> None:
    token = idp.sign(books=claim)
    listed = tool_data(library_jwt.rpc(token, "tools/call", {"name": "list_books", "arguments": {}}))
    assert listed["books"] == []
    books = json.loads(result_of(library_jwt.rpc(token, "resources/read", {"uri": "book://library/books"}))
                       ["contents"][0]["text"])
    assert books["books"] == []
    searched = tool_data(library_jwt.rpc(token, "tools/call", {"name": "search", "arguments": {"query": "river"}}))
    assert searched["error"]["code"] == "mcp.book_not_served"
    entry = tool_data(library_jwt.rpc(token, "tools/call", {"name": "read_entry",
                                                            "arguments": {"book_id": "part-1", "record_id": "d000"}}))
    assert entry["error"]["code"] == "mcp.book_not_served"


def test_every_surface_of_a_no_book_jwt_names_no_book(library_jwt: Server, idp: TestIdp) -> None:
    answers = every_surface(library_jwt, idp.sign(books="part-0 part-1 part-2"))
    assert not leaks(answers, BOOKS), leaks(answers, BOOKS)


@pytest.mark.slow
def test_a_list_server_names_its_list_to_no_limited_token(data: Path, token_file: Path) -> None:
    for server in served(data, "part-0,part-1", "--token-file", str(token_file)):
        answers = every_surface(server, READER)
        assert not leaks(answers, ("part-0", "part-2")), leaks(answers, ("part-0", "part-2"))
        info = result_of(answers[0][1])
        assert info["serverInfo"]["name"] == "book-agent:library"
        listed = tool_data(server.rpc(TEAM, "tools/call", {"name": "list_books", "arguments": {}}))
        assert [b["book_id"] for b in listed["books"]] == ["part-0", "part-1"]


def one_book_refusals(server: Server, token: str) -> None:
    exchanges = every_surface(server, token)
    answers = [answer for _, answer in exchanges]
    assert all("error" in a for a in answers)  # initialize included: nothing of the book
    hidden = ("part-0", "Synthetic", str(server.log_path.parent))
    assert not leaks(exchanges, hidden, echo=False), leaks(exchanges, hidden, echo=False)
    assert {a["error"]["code"] for a in answers} == {-32003}
    assert {a["error"]["data"]["error"]["code"] for a in answers} == {"mcp.book_not_served"}
    assert server.rpc(token, "ping")["result"] == {}  # ping tells nothing


def test_a_one_book_server_shows_nothing_to_a_static_token_for_another_book(data: Path, token_file: Path) -> None:
    for server in served(data, "part-0", "--token-file", str(token_file), "--access-log",
                         str(data.parent / "one-book-access.log")):
        one_book_refusals(server, READER)
        skill = result_of(server.rpc(TEAM, "resources/read", {"uri": "book://part-0/skill"}))
        assert skill["contents"][0]["text"]  # the book's own token reads it
        meta = result_of(server.rpc(TEAM, "resources/read", {"uri": "book://part-0/metadata"}))
        assert "part-0" in meta["contents"][0]["text"]
    log = [json.loads(line) for line in (data.parent / "one-book-access.log").read_text().splitlines()]
    assert {line["error"] for line in log if line["rpc"] == "resources/read" and line["status"] == 200
            and line["token"] and line["error"]} == {"mcp.book_not_served"}


@pytest.mark.slow
def test_a_one_book_server_shows_nothing_to_a_jwt_for_another_book(data: Path, idp: TestIdp) -> None:
    for server in served(data, "part-0", *idp.options()):
        one_book_refusals(server, idp.sign(books=["part-1"]))
        for claim in ("part-0", None, {"part-0": True}, ["part-0", 1]):  # odd shapes, even naming the book: no book
            token = idp.sign(books=claim)
            for method, params in (("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                    "clientInfo": {"name": "probe", "version": "1"}}),
                                   ("resources/read", {"uri": "book://part-0/metadata"}),
                                   ("tools/call", {"name": "get_skill", "arguments": {}})):
                assert server.rpc(token, method, params)["error"]["code"] == -32003
        mine = result_of(server.rpc(idp.sign(books=["part-0"]), "resources/read", {"uri": "book://part-0/skill"}))
        assert mine["contents"][0]["text"]


def test_jwts_without_exp_are_refused_over_http_unless_allowed(data: Path, idp: TestIdp,
                                                              library_jwt: Server) -> None:
    import time

    from tests.support.jwt_tokens import ABSENT

    def status(server: Server, token: str) -> int:
        return httpx.post(server.base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}).status_code

    forever, long_lived = idp.sign(exp=ABSENT), idp.sign(exp=int(time.time()) + 7200)
    assert status(library_jwt, forever) == 401 and status(library_jwt, idp.sign(exp=None)) == 401
    assert status(library_jwt, long_lived) == 200  # no maximum lifetime by default
    for server in served(data, "@all", *idp.options("--jwt-allow-no-exp", "--jwt-max-lifetime", "3600")):
        assert status(server, forever) == 200
        assert status(server, long_lived) == 401  # exp - iat over the maximum
        assert status(server, idp.sign(exp=ABSENT, iat=int(time.time()) - 7200)) == 401
