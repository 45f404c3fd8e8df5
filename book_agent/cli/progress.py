"""Progress on stderr for long work (archive imports, index builds), one line per phase.

Each phase shows its label (the book and what is built: `book 2/5 lexicon: lexical index`),
a bar, done/total, the time taken and an estimate of the time left. Only on a terminal:
piped or redirected stderr (scripts, CI, `--json` consumers) gets nothing, so no command's
output changes with the terminal. Finished phases stay on screen: they say what was done.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress as Bars
    from rich.progress import TaskID

    from book_agent.ports import Phases, Progress


def _silent(label: str) -> Progress | None:
    return None


@contextmanager
def phase_progress(stream: IO[str] | None = None) -> Iterator[Phases]:
    """`phases(label)` -> the progress callback `(done, total)` of a new phase; silent off a terminal."""
    target = stream if stream is not None else sys.stderr
    if not target.isatty():
        yield _silent
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bars

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("left"), TimeRemainingColumn())
    with Bars(*columns, console=Console(file=target, force_terminal=True)) as bars:
        current: list[TaskID] = []

        def phase(label: str) -> Callable[[int, int], None]:
            if current:
                _finish(bars, current.pop())
            task = bars.add_task(label, total=None)
            current.append(task)
            return lambda done, total: bars.update(task, completed=done, total=total or None)

        yield phase
        if current:
            _finish(bars, current.pop())


def _finish(bars: Bars, task_id: TaskID) -> None:
    """A phase is over: its bar full at what it counted, its clock stopped."""
    task = next(t for t in bars.tasks if t.id == task_id)
    done = task.completed or task.total or 1
    bars.update(task_id, total=done, completed=done)
    bars.stop_task(task_id)
