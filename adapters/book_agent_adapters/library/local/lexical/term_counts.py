"""A book's term counts: the raw material of the library's impact index, cached per book.

Counting a book's terms is the slow part of building the library index (tokenising every
record); merging books' counts is numpy work. So each book's counts are kept in the library
folder under a name derived from the book's stamp: registering a new book counts only that
book, and a rebuild after a removal counts nothing.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.library import LibraryMember
from book_agent.domain.search.lexical_text import TOKENIZER_VERSION
from book_agent_adapters.book.lexical.fts_lexical_index import (
    HEADINGS_WEIGHT,
    RECORDS_SQL,
    headings_text,
)
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.files.safe_files import open_regular
from book_agent_adapters.files.sqlite_readonly import connect_readonly
from book_agent_adapters.processes.worker_processes import die_with_parent
from book_agent_adapters.text.fts_terms import FtsTerms

BATCH = 2000
Postings = tuple[np.ndarray, np.ndarray, np.ndarray]  # (term, doc, weighted count) per posting
PARALLEL_MIN_RECORDS = 50_000  # below this, starting worker processes costs more than it saves
COUNTS_VERSION = "1"


@dataclass
class BookTerms:
    """Postings sorted by (term, doc); docs are the book's records in `seq` order."""

    record_ids: list[str]
    terms: list[str]  # term i of `term_ids`
    term_ids: np.ndarray  # int32, per posting
    docs: np.ndarray  # int32, per posting: the record's index in record_ids
    freqs: np.ndarray  # float32, per posting: body count + HEADINGS_WEIGHT x heading count
    lengths: np.ndarray  # int32, per record: body + heading tokens (FTS5's document length)


def cache_key(member: LibraryMember) -> str:
    return f"{member.book_id}\n{member.stamp}\n{TOKENIZER_VERSION}\n{COUNTS_VERSION}"


def cache_path(folder: Path, member: LibraryMember) -> Path:
    return folder / f"{hashlib.sha256(cache_key(member).encode()).hexdigest()[:24]}.npz"


def book_terms(folder: Path, member: LibraryMember, progress: Callable[[int], None] | None = None) -> BookTerms:
    """The member's counts from the cache, or counted from its package database (then cached)."""
    path = cache_path(folder, member)
    cached = _load(path, cache_key(member))
    if cached is not None:
        if progress:
            progress(len(cached.record_ids))
        return cached
    counted = count_terms(member.database_path, progress)
    _save(path, counted, cache_key(member))
    return counted


def count_uncached(folder: Path, members: Sequence[LibraryMember], progress: Callable[[int], None]) -> set[str]:
    """Count the uncached books side by side in worker processes (one per core), caching each,
    when that pays (tokenising is pure Python, one core per process). Returns the ids of the
    books counted; `progress` hears of each book as it finishes."""
    todo = [m for m in members if not cache_path(folder, m).exists()]
    workers = min(len(todo), os.cpu_count() or 1)
    if workers < 2 or sum(m.record_count for m in todo) < PARALLEL_MIN_RECORDS:
        return set()
    done: set[str] = set()
    try:
        # spawn, not fork: the caller may be a threaded server, and fork copies its locks mid-use;
        # each worker dies with this process (worker_processes.py), so a killed build leaves none
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
            futures = {pool.submit(_count_and_cache, folder, m): m for m in todo}
            for future in as_completed(futures):
                future.result()
                done.add(futures[future].book_id)
                progress(futures[future].record_count)
    except Exception:  # noqa: BLE001
        # a pool that cannot start, or a worker that failed (a broken pool, a bad database): the books
        # not done are counted in this process, where a real error is raised as what it is
        return done
    return done


def _count_and_cache(folder: Path, member: LibraryMember) -> None:
    _save(cache_path(folder, member), count_terms(member.database_path), cache_key(member))


def count_terms(database_path: Path, progress: Callable[[int], None] | None = None) -> BookTerms:
    tokens = FtsTerms()
    try:
        source = connect_readonly(database_path)
    except BaseException:  # a missing or unreadable database: the tokenizer's connection must not leak
        tokens.close()
        raise
    record_ids: list[str] = []
    parts: list[Postings] = []
    lengths: list[np.ndarray] = []
    headings: dict[str | None, np.ndarray] = {}
    try:
        cursor = source.execute(RECORDS_SQL)
        while rows := cursor.fetchmany(BATCH):
            body = tokens.batch_ids(r[1] or "" for r in rows)
            heads = _heading_ids(tokens, [r[2] for r in rows], headings)
            parts.append(_count_batch(body, heads, len(record_ids)))
            lengths.append((body[1] + heads[1]).astype(np.int32))
            record_ids += [str(r[0]) for r in rows]
            if progress:
                progress(len(rows))
    finally:
        source.close()
        tokens.close()
    return _sorted_terms(record_ids, tokens.terms, parts, lengths)


def _heading_ids(tokens: FtsTerms, raws: list[str | None], seen: dict[str | None, np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A batch's heading terms as `FtsTerms.batch_ids` gives them, each distinct heading path
    tokenised once per book (`seen`): a book's records share a few hundred, and tokenising them
    per record was a fifth of counting a book. The terms learnt, and their order, are the same."""
    fresh = [raw for raw in dict.fromkeys(raws) if raw not in seen]
    if fresh:
        ids, sizes = tokens.batch_ids(headings_text(raw) for raw in fresh)
        ends = np.cumsum(sizes)
        for raw, end, size in zip(fresh, ends.tolist(), sizes.tolist(), strict=True):
            seen[raw] = ids[end - size:end]
    parts = [seen[raw] for raw in raws]
    sizes = np.fromiter(map(len, parts), np.int64, len(parts))
    return (np.concatenate(parts) if parts else np.zeros(0, np.int64)), sizes


def _count_batch(body: tuple[np.ndarray, np.ndarray], heads: tuple[np.ndarray, np.ndarray],
                 first_doc: int) -> Postings:
    """(term, doc, freq) of one batch, sorted by term then doc: each (term, record) once, its
    counts summed with headings weighted as FTS5's bm25(fts, 1.0, HEADINGS_WEIGHT) weighs them."""
    (body_ids, body_sizes), (head_ids, head_sizes) = body, heads
    batch = len(body_sizes)
    doc_numbers = np.arange(batch, dtype=np.int64)
    terms = np.concatenate([body_ids, head_ids])
    docs = np.concatenate([np.repeat(doc_numbers, body_sizes), np.repeat(doc_numbers, head_sizes)])
    weights = np.concatenate([np.ones(len(body_ids)), np.full(len(head_ids), HEADINGS_WEIGHT)])
    keys, inverse = np.unique(terms * batch + docs, return_inverse=True)
    return keys // batch, keys % batch + first_doc, np.bincount(inverse, weights=weights, minlength=len(keys))


def _sorted_terms(record_ids: list[str], terms: list[str], parts: list[Postings],
                  lengths: list[np.ndarray]) -> BookTerms:
    if not parts:
        empty = np.zeros(0, np.int32)
        return BookTerms(record_ids, terms, empty, empty, np.zeros(0, np.float32), empty)
    term_ids = np.concatenate([p[0] for p in parts])
    order = np.argsort(term_ids, kind="stable")  # batches come in doc order: docs stay ascending per term
    return BookTerms(record_ids, terms, term_ids[order].astype(np.int32),
                     np.concatenate([p[1] for p in parts])[order].astype(np.int32),
                     np.concatenate([p[2] for p in parts])[order].astype(np.float32), np.concatenate(lengths))


def _save(path: Path, counted: BookTerms, key: str) -> None:
    """Atomically; a cache that cannot be written only makes the next build slower."""
    arrays = {"term_ids": counted.term_ids, "docs": counted.docs, "freqs": counted.freqs, "lengths": counted.lengths,
              "terms": _text_array(counted.terms), "record_ids": _text_array(counted.record_ids),
              "key": _text_array([key])}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, lambda out: _write_npz(out, arrays))
    except OSError:
        pass


def _write_npz(out: IO[bytes], arrays: dict[str, npt.NDArray[Any]]) -> None:
    """np.savez's format (np.load reads it), with the archive closed when a write fails: numpy
    2.1 (our floor on Python 3.13) left it open on a full disk, and its __del__ later wrote to the closed file
    ("Exception ignored ... seek of closed file" on stderr)."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def _load(path: Path, key: str) -> BookTerms | None:
    """The cached counts, or None when missing, unreadable, not a regular file, of another book
    or inconsistent (then they are counted again: a damaged cache never reaches an index)."""
    try:
        with open_regular(path) as handle, np.load(handle, allow_pickle=False) as data:
            if "key" in data.files and _text_list(data["key"]) != [key]:
                return None
            loaded = BookTerms(_text_list(data["record_ids"]), _text_list(data["terms"]), data["term_ids"],
                               data["docs"], data["freqs"], data["lengths"])
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
    return loaded if _consistent(loaded) else None


def _consistent(t: BookTerms) -> bool:
    """Dtypes, lengths and ranges as counted, postings sorted by (term, doc), counts finite."""
    kinds = ((t.term_ids, np.int32), (t.docs, np.int32), (t.freqs, np.float32), (t.lengths, np.int32))
    if any(a.dtype != kind or a.ndim != 1 for a, kind in kinds):
        return False
    n = len(t.term_ids)
    if len(t.docs) != n or len(t.freqs) != n or len(t.lengths) != len(t.record_ids) or (t.lengths < 0).any():
        return False
    if n == 0:
        return True
    if t.term_ids.min() < 0 or t.term_ids.max() >= len(t.terms) or t.docs.min() < 0 \
            or t.docs.max() >= len(t.record_ids) or not (np.isfinite(t.freqs) & (t.freqs > 0)).all():
        return False
    step, doc_step = np.diff(t.term_ids), np.diff(t.docs)
    return bool(((step > 0) | ((step == 0) & (doc_step > 0))).all())


def _text_array(values: list[str]) -> np.ndarray:
    return np.frombuffer(json.dumps(values, ensure_ascii=False).encode(), dtype=np.uint8)


def _text_list(data: np.ndarray) -> list[str]:
    values = json.loads(data.tobytes().decode())
    if not isinstance(values, list):
        raise ValueError("not a list")
    return [str(v) for v in values]
