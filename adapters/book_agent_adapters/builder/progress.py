"""Progress on stderr: a bar rewritten in place on a terminal, a line every few seconds off one
(a log, CI), each with done/total, elapsed time and an ETA; one closing line per phase."""

from __future__ import annotations

import sys
import time
from typing import TextIO

LINE_EVERY_S = 5.0
BAR = 24


class Progress:
    def __init__(self, quiet: bool = False, stream: TextIO | None = None, every_s: float = LINE_EVERY_S) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = self.stream.isatty()
        self.every_s = every_s  # off a terminal: a line at most this often

    def say(self, text: str) -> None:
        if not self.quiet:
            self.stream.write(f"book-agent-build: {text}\n")
            self.stream.flush()

    def phase(self, label: str) -> Phase:
        return Phase(self, label)


class Phase:
    def __init__(self, owner: Progress, label: str) -> None:
        self.owner, self.label = owner, label
        self.started = self.last = time.perf_counter()

    def tick(self, done: int, total: int) -> None:
        owner = self.owner
        if owner.quiet or total <= 0:
            return
        now = time.perf_counter()
        spent = now - self.started
        left = spent / done * (total - done) if done else 0.0
        if owner.live:
            filled = BAR * done // total
            owner.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (BAR - filled)}] {done}/{total}  "
                               f"{spent:.0f} s, ETA {left:.0f} s   ")
            owner.stream.flush()
        elif now - self.last >= owner.every_s and done < total:
            self.last = now
            owner.say(f"{self.label}: {done}/{total} ({100 * done // total}%), {spent:.0f} s, ETA {left:.0f} s")

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def done(self, summary: str) -> float:
        seconds = time.perf_counter() - self.started
        if self.owner.live and not self.owner.quiet:
            self.owner.stream.write("\r\x1b[K")
        self.owner.say(f"{self.label}: {summary} ({seconds:.1f} s)")
        return seconds
