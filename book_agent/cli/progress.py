"""Progress on stderr for long work (index builds, archive imports); silent when not a TTY."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    with Progress(TextColumn(label), BarColumn(), TaskProgressColumn(), transient=True,
                  console=_stderr()) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield update


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True)
