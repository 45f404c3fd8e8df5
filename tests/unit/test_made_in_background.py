"""MadeInBackground (adapters/book_agent_adapters/book/made_in_background.py): made once, in another thread, never awaited by
the caller that starts it; a failure, expected or not, is kept and never retried."""

from __future__ import annotations

import threading

import pytest

from book_agent_adapters.book.made_in_background import MadeInBackground


def test_the_first_ask_starts_the_build_and_is_answered_without_it() -> None:
    release, threads = threading.Event(), []

    def make() -> str:
        threads.append(threading.current_thread())
        assert release.wait(timeout=30)
        return "codes"

    build = MadeInBackground("probe-build", make)
    assert build.state == "idle" and build.value() is None  # started, not awaited
    asks = [threading.Thread(target=build.value) for _ in range(8)]  # asked from many threads at once
    for ask in asks:
        ask.start()
    for ask in asks:
        ask.join()
    assert build.state == "making" and not build.wait(timeout=0.05)
    release.set()
    assert build.wait(timeout=30) and build.value() == "codes"
    assert len(threads) == 1 and threads[0].name == "probe-build" and threads[0] is not threading.current_thread()


@pytest.mark.parametrize("outcome", ["none", "raises"])
def test_a_failed_build_is_kept_and_never_retried(outcome: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(threading, "excepthook", lambda args: calls.append(args.exc_type))  # quiet, and seen

    def make() -> None:
        calls.append("made")
        if outcome == "raises":
            raise OSError("disk full")

    build: MadeInBackground[str] = MadeInBackground("probe-fail", make)
    build.value()
    assert build.wait(timeout=30) and build.state == "failed"
    for _ in range(3):
        assert build.value() is None
    assert calls == (["made", OSError] if outcome == "raises" else ["made"])
