"""A progress tally never shows more done than its total, and never a total it knows is false."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.progress import Tally


@given(st.integers(0, 1000), st.lists(st.integers(0, 300), max_size=20))
def test_done_never_passes_the_total_and_the_end_says_how_much_there_was(total: int, steps: list[int]) -> None:
    seen: list[tuple[int, int]] = []
    tally = Tally(total, lambda done, of: seen.append((done, of)))
    for step in steps:
        tally.add(step)
    tally.finish()
    assert all(done <= of for done, of in seen)
    assert [done for done, _ in seen[:-1]] == [sum(steps[:i + 1]) for i in range(len(steps))]  # never clamped
    assert all(of == max(total, done) for done, of in seen[:-1])  # the estimate, raised only past it
    assert seen[-1] == (sum(steps), sum(steps))


def test_no_listener_is_fine() -> None:
    tally = Tally(5, None)
    tally.add(7)
    tally.finish()
    assert tally.done == 7
