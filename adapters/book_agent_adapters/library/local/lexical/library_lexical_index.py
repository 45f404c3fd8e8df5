"""The library's lexical index: BM25 over every registered book, with the library's statistics.

One index, not one per book, so that BM25's statistics (how rare a word is, how long a
record is on average) are those of the whole library: a corpus split into books ranks as
it would as one book. It is an impact index (impact_index.py: FTS5's terms and bm25()
formula over posting arrays, milliseconds at a million records where FTS5 takes a second),
merged from each book's term counts, which are cached per book (term_counts.py) so a new
registration counts only the new book. It lives in data_dir/library/ (derived data, never
in a package) and is replaced atomically: a reader never sees a half-built index. Its
stamp names every book it holds (id, manifest and database hashes), so a registration or
removal makes it stale and the next library search (or `prepare @all`) rebuilds it; so does
damage (library_lexical_search.py checks it). A build holds the library's build lock, sweeps
what a killed build left (its temp head, postings no head names, temp term counts), and writes
to space allocated first: a full disk is `storage.no_space`, with nothing half-written kept.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryIndexState
from book_agent.domain.progress import Tally
from book_agent.ports import LibraryIndex, LibraryLexicalIndex, LibraryMember, Progress
from book_agent_adapters.book.runtime_files import build_lock
from book_agent_adapters.files.safe_files import is_no_space, is_read_only, no_space, read_only
from book_agent_adapters.library.local.generations import sweep, unnamed
from book_agent_adapters.library.local.lexical.impact_checks import VERIFIED_SUFFIX
from book_agent_adapters.library.local.lexical.impact_index import (
    FORMAT,
    postings_files,
    write_index,
)
from book_agent_adapters.library.local.lexical.library_head_markers import DAMAGED_SUFFIX
from book_agent_adapters.library.local.lexical.library_lexical_search import (
    SqliteLibraryLexical,
    inspect,
)
from book_agent_adapters.library.local.lexical.living_generation import (
    DELTA_PREFIX,
    POINTER_NAME,
    TEMP_PREFIX,
    Delta,
    Living,
    drift_of,
    drop_delta,
    drop_living,
    held_generation,
    write_delta,
    write_living,
)
from book_agent_adapters.library.local.lexical.term_counts import (
    BookTerms,
    book_terms,
    cache_path,
    count_uncached,
)

INDEX_NAME = "lexical.sqlite"
TERMS_DIR = "terms"
AVERAGE_TOLERANCE = 0.05  # a change moving the average length further than this (relative) compacts instead
POSTINGS_FILE = re.compile(r"postings-.*\.npy")  # a base's or an added book's postings
DELTA_FILE = re.compile(re.escape(DELTA_PREFIX) + r".*\.sqlite")  # an added book's head
MAX_DELTAS = 64  # books added since the base before a build merges them all (each costs a lookup per query)


def _no_crash(point: str) -> None:
    """Where a writer could be killed (a test's subprocess replaces this to die there)."""


crash_point: Callable[[str], None] = _no_crash

__all__ = ["INDEX_NAME", "TERMS_DIR", "SqliteLibraryIndex", "SqliteLibraryLexical"]


class SqliteLibraryIndex(LibraryIndex):
    def __init__(self, library_dir: Path) -> None:
        self.dir = library_dir
        self.path = library_dir / INDEX_NAME

    def state(self, expected: dict[str, str]) -> LibraryIndexState:
        """Fresh when the generation in place holds `expected` and every file of it passes its
        integrity checks; `intact` when they pass (a stale but intact index may serve while it
        cannot be brought up to date)."""
        found = inspect(self.path)
        if not found.present:
            return LibraryIndexState(present=False, fresh=False, records=0, reason="missing")
        held, living = held_generation(self.dir, found.stamp)
        sound, reason = found.sound, found.reason
        why: str | None = None
        if sound and living is not None:
            for delta in living.deltas:
                checked = inspect(self.dir / delta.head)
                if not checked.sound:
                    sound, reason = False, f"an added book's postings ({delta.book_id}): {checked.reason}"
                    break
        fresh = sound and found.stamp.get("format") == FORMAT and all(held.stamp.get(k) == v for k, v in expected.items())
        if not fresh:
            why = reason if not sound else "stale: built for other books"
        records = held.records if sound else 0
        changes = len(living.deltas) + len(living.removed) if living is not None else 0
        return LibraryIndexState(present=True, fresh=fresh, records=records, generation=held.generation,
                                 reason=why, intact=sound, drift=held.drift if sound else 0.0, changes=changes,
                                 held=held.stamp.get("books") if sound else None)

    def build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
              wait: bool = True) -> int:
        """Bring the index to `members` under the library's build lock (another process may have
        just done it): the books added or changed since are written as their own postings and
        the books gone are filtered out, in a new generation; a full build when there is no
        sound base to extend, its tokenizer differs, or MAX_DELTAS books were added since it."""
        return self._locked(members, expected, progress, wait, full=False)

    def compact(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
                wait: bool = True) -> int:
        """The exact rebuild (every weight under the exact average length; removed books purged)."""
        return self._locked(members, expected, progress, wait, full=True)

    def _locked(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None,
                wait: bool, full: bool) -> int:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with build_lock(self.dir, wait=wait):
                sweep_dead_build(self.dir)  # first: a writer killed after its commit left the index fresh
                current = self.state(expected)
                if current.fresh and not full:
                    return current.records
                if not full and current.intact:
                    added = self._extend(members, expected, progress)
                    if added is not None:
                        return added
                return self._build(members, expected, progress)
        except (OSError, sqlite3.Error) as exc:  # the lock file cannot be made, a read-only mount
            raise _failed(self.dir, exc) from exc

    def _extend(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None
                ) -> int | None:
        """Add and remove only the books that changed (None: a full build is due instead)."""
        found = inspect(self.path)
        held, living = held_generation(self.dir, found.stamp)
        if any(held.stamp.get(k) != v for k, v in expected.items() if k != "books"):
            return None  # another tokenizer: every book's terms differ
        wanted = {m.book_id: m for m in members}
        kept = [d for d in (living.deltas if living else []) if d.book_id in wanted and wanted[d.book_id].stamp == d.stamp]
        dropped = [d for d in (living.deltas if living else []) if d not in kept]
        removed = set(living.removed if living else ()) | {
            b for b, stamp in held.base_members.items() if b not in wanted or wanted[b].stamp != stamp}
        served = {b for b in held.base_members if b not in removed} | {d.book_id for d in kept}
        new = [m for m in members if m.book_id not in served]
        if len(kept) + len(new) > MAX_DELTAS or (held.base_records - sum(held.base_rows[b] for b in removed)) == 0:
            return None  # too many segments, or nothing of the base left: cheaper to merge it all
        counted = Tally(sum(m.record_count for m in new), progress).add
        terms_dir = self.dir / TERMS_DIR
        counts = [(m, book_terms(terms_dir, m, counted)) for m in new]  # cached: a full build reuses them
        records = held.base_records - sum(held.base_rows[b] for b in removed) + sum(
            d.records for d in kept) + sum(len(c.record_ids) for _, c in counts)
        length = held.base_length - sum(held.base_lengths[b] for b in removed) + sum(
            d.length for d in kept) + sum(float(c.lengths.sum()) for _, c in counts)
        if drift_of(held.average, length, records) > AVERAGE_TOLERANCE:
            return None  # the frozen average would be too far off: compact (the new counts are cached)
        written: list[Delta] = []
        try:
            for member, book in counts:
                written.append(write_delta(self.dir, member, book, held.average))
            changed = held.changed + sum(d.records for d in written) + sum(d.records for d in dropped) + sum(
                held.base_rows[b] for b in removed if b not in (living.removed if living else ()))
            crash_point("extend:before-pointer")
            write_living(self.dir, Living(found.stamp["postings"], (living.sequence if living else 0) + 1,
                                          dict(expected), sorted(removed), [*kept, *written], changed))
        except BaseException:
            for delta in written:
                drop_delta(self.dir, delta.head)
            raise
        crash_point("extend:after-pointer")
        for delta in dropped:
            drop_delta(self.dir, delta.head)
        _prune(terms_dir, {cache_path(terms_dir, m) for m in members})
        if progress and not new:
            progress(0, 0)
        return held.base_records - sum(held.base_rows[b] for b in removed) + sum(d.records for d in [*kept, *written])

    def _build(self, members: Sequence[LibraryMember], expected: dict[str, str], progress: Progress | None) -> int:
        fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".sqlite", dir=self.dir)
        os.close(fd)
        tmp = Path(name)
        postings = self.dir / f"postings-{uuid.uuid4().hex[:12]}"  # new files: readers keep the old ones
        try:
            out = sqlite3.connect(tmp)
            try:
                count = _fill(out, members, expected, progress, self.dir / TERMS_DIR, postings)
            finally:
                out.close()
            crash_point("compact:before-rename")
            os.replace(tmp, self.path)
        except (sqlite3.Error, OSError, ValueError) as exc:
            for path in postings_files(postings):
                path.unlink(missing_ok=True)
            raise _failed(self.dir, exc) from exc
        finally:
            tmp.unlink(missing_ok=True)
        crash_point("compact:after-rename")
        drop_living(self.dir)  # it extended the old base: the new base alone is the generation now
        for head in self.dir.glob(DELTA_PREFIX + "*.sqlite"):
            drop_delta(self.dir, head.name)
        sweep(_old_postings(self.dir, {postings.name}))
        for suffix in (DAMAGED_SUFFIX, VERIFIED_SUFFIX):  # they named the old head
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        return count

    def open(self) -> LibraryLexicalIndex:
        """A reader of the generation in place when it first searches (it keeps that one)."""
        return SqliteLibraryLexical(self.path)


def _fill(out: sqlite3.Connection, members: Sequence[LibraryMember], expected: dict[str, str],
          progress: Progress | None, terms_dir: Path, postings: Path) -> int:
    counted = Tally(sum(m.record_count for m in members), progress).add
    in_workers = count_uncached(terms_dir, members, counted)
    books: list[tuple[str, BookTerms]] = [
        (m.book_id, book_terms(terms_dir, m, None if m.book_id in in_workers else counted)) for m in members]
    _prune(terms_dir, {cache_path(terms_dir, m) for m in members})
    stamp = {**expected, "members": json.dumps({m.book_id: m.stamp for m in members}, ensure_ascii=False),
             "rows": json.dumps({b: len(c.record_ids) for b, c in books}, ensure_ascii=False),
             "lengths": json.dumps({b: float(c.lengths.sum()) for b, c in books}, ensure_ascii=False)}
    return write_index(out, books, stamp, postings)


def sweep_dead_build(folder: Path) -> list[str]:
    """What an earlier writer that died left (call holding the build lock, so no live writer
    owns any of it): temp heads and pointers, added books' heads no generation names, postings
    no head of the generation names, temp term counts, temp head markers."""
    found = inspect(folder / INDEX_NAME)
    _, living = held_generation(folder, found.stamp)
    heads = {d.head for d in living.deltas} if living else set()
    current = {found.stamp.get("postings", "")} | {
        "postings-" + h.removeprefix(DELTA_PREFIX).removesuffix(".sqlite") for h in heads}
    doomed = [*folder.glob(TEMP_PREFIX + "*"), *(folder / TERMS_DIR).glob(".*.tmp"), *folder.glob(f".{POINTER_NAME}.*"),
              *folder.glob(f".{INDEX_NAME}.*.tmp"),  # a head marker (.verified, .damaged) half-written by a killed process
              *unnamed(folder, DELTA_FILE, heads), *_old_postings(folder, current)]
    if living is None:
        doomed += [p for p in (folder / POINTER_NAME,) if p.exists()]
    return sweep(doomed)


def _old_postings(folder: Path, current: set[str]) -> list[Path]:
    """Earlier builds' postings (a reader still mapping them keeps its pages: generations.py)."""
    return unnamed(folder, POSTINGS_FILE, current, key=lambda path: path.name.split(".")[0])


def _prune(terms_dir: Path, keep: set[Path]) -> None:
    """Drop the cached counts of books no longer registered (or changed since)."""
    for path in terms_dir.glob("*.npz"):
        if path not in keep:
            path.unlink(missing_ok=True)


def _failed(folder: Path, exc: BaseException) -> BookAgentError:
    if isinstance(exc, BookAgentError):
        return exc
    if is_no_space(exc):
        return no_space(folder, exc, getattr(exc, "needed_bytes", None), "the library's lexical index")
    if is_read_only(exc):
        return read_only(folder, exc, "the library's lexical index")
    return BookAgentError("lexical.build_failed", f"the library's lexical index could not be built: {exc}",
                          details={"path": str(folder)},
                          remediation="the library index is stale (books were registered or removed) and the "
                          "data dir must be writable with free space to rebuild it; on read-only replicas, run "
                          "`book-agent prepare @all` where the data dir is writable")
