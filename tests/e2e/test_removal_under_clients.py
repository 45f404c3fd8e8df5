"""A removed book is gone at once from a running library server's searches (issue 44.5).

A real `book-agent mcp @all` process is searched by 8 clients without pause while other
processes change the library: a book added, one removed, two inits at once, a re-add, two more
removals. No search sent after a `remove` process exited may return the removed book.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import numpy as np

from tests.support.library_support import WORDS, make_book
from tests.support.package_builder import RecordSpec
from tests.support.stdio_session import RawSession, call

CLIENTS = 8
WATCHED = ("book-3", "book-4")


class Clients:
    """CLIENTS threads searching without pause; each answer: (sent, answered, watched books in its hits)."""

    def __init__(self, session: RawSession) -> None:
        self.session = session
        self.results: list[tuple[float, float, set[str]]] = []
        self.stop = threading.Event()
        self._ident = 100
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._client) for _ in range(CLIENTS)]

    def _client(self) -> None:
        while not self.stop.is_set():
            with self._lock:
                self._ident += 1
                ident = self._ident
            sent = time.monotonic()
            self.session.send(call(ident, "search", {"query": "w3 w4 water", "top_k": 50}))
            result = self.session.wait_for([ident], timeout=300)[ident][0]["result"]
            text = "".join(part.get("text", "") for part in result.get("content", []))
            assert not result.get("isError"), text
            body = result.get("structuredContent") or json.loads(text)
            books = {hit["evidence_id"].split("#")[0] for hit in body["hits"]}
            self.results.append((sent, time.monotonic(), books & set(WATCHED)))


def test_a_removed_book_is_gone_from_every_search_sent_after_remove_exits(tmp_path):
    from book_agent import BookAgent

    rng = np.random.default_rng(1)
    packages = [make_book(tmp_path / "packages", f"book-{b}", [
        RecordSpec(f"r{i}", " ".join(rng.choice(WORDS, 14)) + f" water ground w{b}", ["H"], 0) for i in range(1000)])
        for b in range(7)]
    data = tmp_path / "data"
    with BookAgent(data) as agent:
        for package in packages[:4]:
            agent.init(package)
        agent.prepare("@all")

    def run(*args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "book_agent", "--data-dir", str(data), *args, "--json"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    windows: list[tuple[str, float, float]] = []

    def removal(book: str) -> None:
        assert run("remove", book).wait() == 0
        exited = time.monotonic()
        time.sleep(1.5)
        windows.append((book, exited, time.monotonic()))

    session = RawSession(data, "@all", tmp_path / "stderr.txt")
    clients = Clients(session)
    try:
        for thread in clients.threads:
            thread.start()
        time.sleep(1)
        assert run("init", str(packages[4])).wait() == 0
        removal("book-3")
        both = [run("init", str(packages[5])), run("init", str(packages[6]))]
        assert [p.wait() for p in both] == [0, 0]
        assert run("init", str(packages[3])).wait() == 0  # re-added
        removal("book-4")
        removal("book-3")
    finally:
        clients.stop.set()
        for thread in clients.threads:
            thread.join(timeout=300)
        assert session.close() == 0
    assert any("book-3" in books for _, _, books in clients.results)  # it was found while registered
    for book, exited, until in windows:
        sent_after = [books for sent, _, books in clients.results if exited < sent < until]
        assert sent_after, f"no search was sent after {book} was removed"
        assert not [books for books in sent_after if book in books], f"{book} answered after its removal"
