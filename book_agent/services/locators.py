"""Verified locators for every hit: built once per package, looked up per search.

A hit's `source_locator` must be checked against the original (the record's claimed page
and offsets may be wrong), but verifying costs milliseconds per record (a PDF page is opened
and extracted), too much per search. So `init` and `prepare` verify every record once and
keep the locators in the runtime dir (stamped with the package and verifier version); a
search looks its hits up there. When that sidecar is missing or stale (a book registered
before it existed, a failed build), a hit is verified live, and only when the original
cannot be read at all does a hit carry the record's claim (`record-metadata`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.registry_entry import RegistryEntry, database_sha
from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import ids_by_book
from book_agent.domain.sources.locators import (
    LocatorBuild,
    LocatorState,
    LocatorStatus,
    locator_stamp,
    older_verifier,
)
from book_agent.domain.sources.source_results import Locator
from book_agent.ports import SourceReader
from book_agent.ports.locators import LocatorLookup, LocatorRefresh, LocatorStore, RefreshJob

LIVE_LIMIT = 100  # hits verified live per call when there is no sidecar (top_k is at most 100)


def expected_stamp(entry: RegistryEntry, database_sha256: str | None) -> dict[str, str]:
    return locator_stamp(str(entry.get("manifest_sha256") or ""), database_sha256)


class BookLocators(LocatorLookup):
    """One book's verified locators: the sidecar's, else verified now through the sources.
    `refresh`: a rebuild of the sidecar running in the background and how to open its result;
    each fetch asks whether it ended (a non-blocking check) and then reads the new sidecar."""

    def __init__(self, stored: LocatorLookup | None, sources: Callable[[], SourceReader],
                 refresh: tuple[RefreshJob, Callable[[], LocatorLookup | None]] | None = None) -> None:
        self._stored = stored
        self._sources = sources
        self._refresh = refresh
        self._refresh_lock = threading.Lock()
        self._live: dict[str, Locator] = {}

    @property
    def refreshing(self) -> RefreshJob | None:
        return self._refresh[0] if self._refresh is not None else None

    def _refreshed(self) -> None:
        with self._refresh_lock:
            if self._refresh is None or not self._refresh[0].done():
                return
            reopen = self._refresh[1]
            self._refresh = None
            self._stored = reopen()  # None when the rebuild failed: hits stay verified live

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Locator]:
        if self._refresh is not None:
            self._refreshed()
        found = self._stored.fetch(record_ids) if self._stored is not None else {}
        missing = [r for r in record_ids if r not in found][:LIVE_LIMIT]
        for record_id in missing:
            live = self._live.get(record_id)
            if live is None:
                try:
                    live = self._sources().locate({"record_id": record_id})
                except BookAgentError:
                    continue  # no original to read (or no such record): the hit keeps its claim
                self._live[record_id] = live
            found[record_id] = live
        return found

    def close(self) -> None:
        if self._stored is not None:
            self._stored.close()


class LibraryLocators(LocatorLookup):
    """Locators of several books, by evidence id (`book_id#record_id`)."""

    def __init__(self, books: dict[str, LocatorLookup]) -> None:
        self._books = books

    def fetch(self, record_ids: Sequence[str]) -> dict[str, Locator]:
        found: dict[str, Locator] = {}
        for book_id, ids in ids_by_book(record_ids, self._books).items():
            for record_id, locator in self._books[book_id].fetch(ids).items():
                found[f"{book_id}#{record_id}"] = locator
        return found

    def close(self) -> None:
        pass  # each book's lookup is its open book's


def open_locators(store: LocatorStore | None, refresher: LocatorRefresh | None, book_id: str, runtime_dir: Path,
                  expected: dict[str, str], sources: Callable[[], SourceReader]) -> BookLocators:
    """A book's locators: the sidecar when fresh. One this very package's, but from an older
    verifier (a book-agent upgrade), is rebuilt in the background (`refresher`: another process,
    under the runtime dir's build lock, never in the package) while its hits are verified live;
    a search never waits for it (issue 29: live verification was ~36 of 50 ms per hit list)."""
    if store is None:
        return BookLocators(None, sources)
    lookup = store.open(runtime_dir, expected)  # None unless fresh: its state is read only then
    if lookup is not None:
        return BookLocators(lookup, sources)
    state = store.state(runtime_dir, expected)
    job = refresher.start(book_id, runtime_dir) if refresher is not None and older_verifier(
        state.get("stamp"), expected) else None
    return BookLocators(None, sources, (job, lambda: store.open(runtime_dir, expected)) if job else None)


def verify_book(store: LocatorStore, sources: SourceReader, runtime_dir: Path, expected: dict[str, str],
                force: bool = False) -> LocatorBuild:
    """Verify every record of a book and keep the locators, unless they are fresh already.
    Returns {built, state, summary} (or the coded error that stopped it)."""
    state: LocatorState = store.state(runtime_dir, expected)
    if state.get("fresh") and not force:
        return {"built": False, "state": _public(state), "summary": state.get("summary")}
    try:
        summary = store.build(runtime_dir, expected, sources.locate_records())
    except BookAgentError as exc:
        return {"built": False, "state": _public(state), "error": exc.to_dict()}
    return {"built": True, "state": _public(store.state(runtime_dir, expected)), "summary": summary.to_dict()}


def _public(state: LocatorState) -> LocatorState:
    public = LocatorState(**state)  # a copy, without the summary (reported beside it) and the stamp
    public.pop("summary", None)
    public.pop("stamp", None)
    return public


def locator_status(store: LocatorStore, runtime_dir: Path, expected: dict[str, str]) -> LocatorStatus:
    """What status says about a book's verified locators."""
    state = store.state(runtime_dir, expected)
    out = LocatorStatus(present=bool(state.get("present")), fresh=bool(state.get("fresh")),
                        reason=str(state.get("reason") or ""), path=str(state.get("path") or ""))
    if state.get("summary") is not None:
        out["verification"] = state["summary"]
    if not state.get("fresh"):
        out["remediation"] = "run `book-agent prepare BOOK` (until then, search verifies its hits one by one)"
    return out


def database_stamp(entry: RegistryEntry, info: PackageInfo | None) -> dict[str, str]:
    return expected_stamp(entry, database_sha(info))
