"""Searching the library's lexical index (library_lexical_index.py builds it), and checking it.

An index is searched only when its head's values are possible and its postings are the
regular files of the size it recorded (impact_checks.py); the blocks a query reads are verified
against their CRCs. A damaged index answers `lexical.index_damaged` (the library search then
rebuilds it and asks again; `prepare @all` rebuilds it too, since `inspect` calls it unsound),
never hits computed from damaged data, never an uncoded error, never a hang on a FIFO.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from book_agent.domain.errors import BookAgentError
from book_agent.domain.records import LexicalHit
from book_agent.ports import LibraryLexicalIndex
from book_agent_adapters.files.safe_files import require_regular
from book_agent_adapters.files.sqlite_readonly import connect_readonly
from book_agent_adapters.library.local.generations import pinned
from book_agent_adapters.library.local.lexical.impact_checks import (
    DamagedIndex,
    Postings,
    read_head,
)
from book_agent_adapters.library.local.lexical.impact_index import FORMAT, ImpactScorer, Segment
from book_agent_adapters.library.local.lexical.library_head_markers import (
    head_identity,
    mark_damaged,
    marked_damaged,
    remember_verified,
    verified_before,
)
from book_agent_adapters.library.local.lexical.living_generation import read_living
from book_agent_adapters.text.fts_terms import FtsTerms

REBUILD = "run `book-agent prepare @all` to rebuild the library index (a library search also rebuilds a damaged one)"


@dataclass
class Inspection:
    """What is on disk: its stamp (meta), whether it is there, and whether it can be trusted."""

    stamp: dict[str, str] = field(default_factory=dict)
    present: bool = False
    sound: bool = False
    reason: str = "missing"


def inspect(path: Path) -> Inspection:
    """The index at `path`, checked: head values possible, postings regular files of the recorded
    dtypes and sizes, and, when a postings file was written since its build (or copied: its file
    state differs), every block against its CRC. The states so verified are remembered beside the
    head, so a copied library is verified once, not on every state check (~40 ms at 100k records)."""
    try:
        require_regular(path)
        con = connect_readonly(path, immutable=False)
    except FileNotFoundError:
        return Inspection()
    except (OSError, sqlite3.Error) as exc:
        return Inspection(present=True, reason=f"unreadable: {exc}")
    try:
        meta = {str(k): str(v) for k, v in con.execute("SELECT key, value FROM meta")}
        if meta.get("format") != FORMAT:
            return Inspection(meta, True, False, "of another format")
        found = marked_damaged(path)
        if found:
            return Inspection(meta, True, False, f"damaged: {found}")
        meta, _, _, _ = read_head(con, light=True)
        postings = Postings(con, path.parent, meta)
        try:  # the mapped files are closed however the checks end (a head without its terms table)
            _check_term_ends(con, postings.count)
            if postings.changed_files() and not verified_before(path, postings.seen):
                started = time.perf_counter()
                postings.verify_all()
                remember_verified(path, postings.seen, time.perf_counter() - started, postings.count)
        finally:
            postings.close()
    except DamagedIndex as exc:
        return Inspection(meta, True, False, f"damaged: {exc}")
    except (OSError, sqlite3.Error) as exc:
        return Inspection({}, True, False, f"unreadable: {exc}")
    finally:
        con.close()
    return Inspection(meta, True, True, "sound")


def _check_term_ends(con: sqlite3.Connection, count: int) -> None:
    """The first term's postings start at 0 and the last one's end at the arrays' end (terms are
    numbered in term order, so two index lookups check the table's ends)."""
    first = con.execute("SELECT df, start FROM terms ORDER BY term LIMIT 1").fetchone()
    last = con.execute("SELECT df, start FROM terms ORDER BY term DESC LIMIT 1").fetchone()
    if (first is None) != (count == 0) or (first is not None and (
            first[1] != 0 or not isinstance(last[0], int) or not isinstance(last[1], int)
            or last[0] + last[1] != count)):
        raise DamagedIndex("its head's terms do not cover its postings")


class SqliteLibraryLexical(LibraryLexicalIndex):
    """BM25 over the whole library; hits are `book_id#record_id` (evidence ids). Safe to share
    between threads (an MCP server's workers): the connection and the query stemmer are locked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._scorer: ImpactScorer | None = None
        self._terms = FtsTerms()
        self._lock = threading.Lock()
        self.checking: threading.Thread | None = None  # warm_up's check of every block

    def search(self, query: str, top_k: int, book_ids: Sequence[str] | None = None) -> list[LexicalHit]:
        if top_k <= 0:
            return []
        try:
            with self._lock:
                terms, prefixes = self._terms.query_terms(query)
                if not terms and not prefixes:
                    return []
                scorer = self._open()
                try:
                    try:
                        top = scorer.top(terms, prefixes, top_k, book_ids)
                    finally:  # what the query read through the maps leaves the resident set (still cached)
                        for segment in scorer.segments:
                            segment.postings.release()
                    ids = scorer.ids_of([row for row, _ in top])
                    if any(row not in ids for row, _ in top):
                        raise DamagedIndex("its head lost record ids")
                except (DamagedIndex, sqlite3.DatabaseError, KeyError, ValueError, MemoryError, OverflowError,
                        TypeError, IndexError) as exc:
                    mark_damaged(self.path, scorer.identity, str(exc))
                    self._forget()  # the next search reads the index in place again (rebuilt by then)
                    raise DamagedIndex(str(exc)) from exc
        except DamagedIndex as exc:
            raise BookAgentError("lexical.index_damaged", f"the library's lexical index is damaged: {exc}",
                                 details={"path": str(self.path)}, remediation=REBUILD) from exc
        except (sqlite3.Error, OSError) as exc:
            raise BookAgentError("lexical.query_failed", f"the library's lexical index could not answer: {exc}",
                                 details={"path": str(self.path)}, remediation=REBUILD) from exc
        return [LexicalHit(ids[row], score) for row, score in top]

    def _open(self) -> ImpactScorer:
        """The scorer of the generation in place (the base head, and the books added since when
        the pointer extends it); read again when a writer replaced it while it was being opened."""
        if self._scorer is None:
            self._scorer = pinned(self._open_once)
        return self._scorer

    def _open_once(self, last: bool) -> ImpactScorer:
        identity = head_identity(self.path)
        segments: list[Segment] = []
        try:
            segments.append(_segment(self.path))
            living = read_living(self.path.parent)
            if living is not None and living.base == segments[0].name:
                for delta in living.deltas:  # one at a time: each opened is closed if a later one fails
                    segments.append(_segment(self.path.parent / delta.head))
                scorer = ImpactScorer(segments, living.removed, living.generation)
            else:
                scorer = ImpactScorer(segments)
        except BaseException as exc:
            for segment in segments:
                segment.close()
            if isinstance(exc, (DamagedIndex, sqlite3.DatabaseError)):
                mark_damaged(self.path, identity, str(exc))
                raise DamagedIndex(str(exc)) from exc
            raise  # FileNotFoundError: a writer replaced the generation meanwhile (pinned reads it again)
        scorer.identity = identity
        return scorer

    @property
    def generation(self) -> str | None:  # type: ignore[override]
        """The generation this reader serves (opened now if it was not yet; None when it cannot be:
        the search then says why)."""
        with self._lock:
            try:
                return self._open().generation
            except (DamagedIndex, sqlite3.Error, OSError):
                return None

    def warm_up(self) -> None:
        """Open the generation now and verify its postings' blocks in a background thread, as
        the queries would one by one on first reading them: each block's CRC is computed once
        either way, but a warmed server's queries then find theirs checked (a query's first
        reading of a block cost ~0.3-0.5 ms a query over the first hundreds at 1M records). One
        block at a time under the lock, so a query waits for one block at most; a damaged block
        stops the check and is left for the query that reads it to report (lexical.index_damaged)."""
        with self._lock:
            if self.checking is not None:
                return
            try:
                scorer = self._open()
            except (DamagedIndex, sqlite3.Error, OSError):
                return  # the first search reports it
            self.checking = threading.Thread(target=self._check_blocks, args=(scorer,), daemon=True,
                                             name="book-agent-postings-check")
        self.checking.start()

    def _check_blocks(self, scorer: ImpactScorer) -> None:
        for segment in scorer.segments:
            postings = segment.postings
            for block in range(len(postings.verified)):
                with self._lock:
                    if self._scorer is not scorer:  # closed, or another generation opened
                        return
                    try:
                        postings.notice_changes()
                        postings.verify(block, block + 1)
                    except (DamagedIndex, OSError, ValueError):
                        return
                    finally:
                        postings.release()

    def _forget(self) -> None:
        if self._scorer is not None:
            self._scorer.close()
            self._scorer = None

    def close(self) -> None:
        with self._lock:
            self._forget()
            self._terms.close()


def _segment(path: Path) -> Segment:
    """One head and its postings, open. A head a writer removed meanwhile is FileNotFoundError
    (the generation is read again), never damage."""
    try:
        con = connect_readonly(path, check_same_thread=False, immutable=False)
    except sqlite3.OperationalError:
        require_regular(path)  # FileNotFoundError when it is gone
        raise
    try:
        return Segment(con, path.parent)
    except BaseException:
        con.close()
        raise
