"""Ports of a book's verified locators: the sidecar that keeps them, a lookup by record id, and
a rebuild in the background."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from book_agent.domain.sources.locators import LocatorState
from book_agent.domain.sources.source_results import Locator

if TYPE_CHECKING:  # only a build makes one: a search never defines it
    from book_agent.domain.sources.locator_summary import LocatorSummary


@runtime_checkable
class LocatorLookup(Protocol):
    """Verified locators by record id (ids without one are simply absent)."""

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Locator]: ...
    def close(self) -> None: ...


@runtime_checkable
class LocatorStore(Protocol):
    """The verified locators of a book, kept in its runtime dir (never in the package)."""

    def state(self, runtime_dir: Path, expected: dict[str, str]) -> LocatorState:
        """{present, fresh, reason, path, summary?} against the expected stamp."""
        ...
    def build(self, runtime_dir: Path, expected: dict[str, str], locators: Iterable[Locator]) -> LocatorSummary:
        """Write every locator (atomically: a reader sees the old file or the new one) and
        return the summary it stores with them."""
        ...
    def open(self, runtime_dir: Path, expected: dict[str, str]) -> LocatorLookup | None:
        """The lookup when the sidecar is fresh, else None."""
        ...


@runtime_checkable
class RefreshJob(Protocol):
    """A rebuild running in the background."""

    def done(self) -> bool:
        """Has it ended (either way)? Answers at once."""
        ...


@runtime_checkable
class LocatorRefresh(Protocol):
    """Rebuilds a book's verified locators in the background (the local one: a `prepare` process)."""

    def start(self, book_id: str, runtime_dir: Path) -> RefreshJob | None:
        """Start the rebuild and return at once; None when none was started (another writer
        holds the runtime dir, or nothing can be started)."""
        ...
