"""Counting work done for a progress bar: never more done than the total shown, never a false total.

A build's total is an estimate known up front (the books' manifests' record counts); what is
counted is the truth. When more arrives than estimated, the total is raised to what was done
(a bar clamped at its total would sit full while work goes on, and claim a total it passed);
at the end the total is what was done, so a finished bar says how much there was.
"""

from __future__ import annotations

from collections.abc import Callable


class Tally:
    """`add(n)` reports (done, max(total, done)) to `report`; `finish()` reports (done, done)."""

    def __init__(self, total: int, report: Callable[[int, int], None] | None) -> None:
        self.total = total
        self.done = 0
        self.report = report

    def add(self, units: int) -> None:
        self.done += units
        if self.report:
            self.report(self.done, max(self.total, self.done))

    def finish(self) -> None:
        if self.report:
            self.report(self.done, self.done)
