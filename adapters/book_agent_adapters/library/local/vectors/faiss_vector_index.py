"""The library's approximate vector index: faiss IVF-SQ8 over one model group, rescored exactly.

One index per model group (books sharing a model and dimensions) holding `min_vectors`
vectors or more (domain/library.py, APPROXIMATE_MIN_VECTORS). Training: faiss_training.py;
searching and exact rescoring: faiss_group_index.py; the living changes (books added to the
trained index, removed ones filtered, the drift that calls for a retrain): living_vectors.py.

Files, in data_dir/library/vectors/ (derived data, never in a package; faiss_index_files.py):

    <group>.json                 the pointer: stamp, every book's rows in row order (removed
                                 ones marked), the generation's files with their size, hash, state
    <group>-<base>.faiss/.ids    the base (the last full build) and its rows' record ids
    <group>-<base>.trained       the base's trained, empty index (added books are encoded with it)
    <group>-<seg>.faiss/.ids     one segment per build that added books since the base

A writer holds the library's build lock (a search's `wait=False`: `vector.index_busy` at once
while another holds it), first sweeps what a killed writer left (temp files, files no pointer
names), writes its new files under names no pointer names, then commits by replacing the
pointer in one rename: a reader, or a writer killed at any point, sees the old generation or the
new one, never a mix. Files the new pointer no longer names are then deleted (a reader that
opened them keeps them in memory until it closes). The pointer's reading, commit, sweeping and
the reader's second read are the local backend's one mechanism (library/local/generations.py).

faiss is imported only when an index is built or opened.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import APPROXIMATE_MIN_VECTORS, VectorIndexState
from book_agent.ports import Progress, VectorStore
from book_agent.ports.library import LibraryVectorIndex, LibraryVectorIndexes
from book_agent_adapters.book.runtime_files import build_lock
from book_agent_adapters.files.atomic_write import write_atomic
from book_agent_adapters.library.local.generations import (
    commit_pointer,
    pinned,
    sweep,
    unlink_quietly,
    unnamed,
)
from book_agent_adapters.library.local.vectors.faiss_group_index import (
    FaissGroupIndex,
    book_matrix,
    loaded_segments,
)
from book_agent_adapters.library.local.vectors.faiss_index_files import (
    FORMAT,
    book_stamps,
    file_facts,
    group_key,
    intact,
    named_files,
    read_pointer,
    write_row_ids,
)
from book_agent_adapters.library.local.vectors.faiss_training import (
    failed,
    faiss_module,
    fill,
    lists_for,
    omp_threads,
    probes_for,
    trained,
    unreadable,
)
from book_agent_adapters.library.local.vectors.living_vectors import (
    Extension,
    drift_of,
    encode_segment,
    generation_of,
    live_rows,
    planned,
    vector_lock,
)

FOLDER = "vectors"
TEMP_PREFIX = ".vectors-build-"  # written only under the build lock: any found there is a dead build's

__all__ = ["FaissLibraryVectors", "group_key", "lists_for"]


def _no_crash(point: str) -> None:
    """Where a writer could be killed (a test's subprocess replaces this to die there)."""


crash_point: Callable[[str], None] = _no_crash


class FaissLibraryVectors(LibraryVectorIndexes):
    def __init__(self, library_dir: Path, min_vectors: int = APPROXIMATE_MIN_VECTORS) -> None:
        """`library_dir`: data_dir/library (its build lock is the library's); `min_vectors`:
        groups below it are searched exactly (tests lower it)."""
        self.library_dir = Path(library_dir)
        self.folder = self.library_dir / FOLDER
        self.min_vectors = min_vectors

    # -- state --------------------------------------------------------------------------
    def state(self, model: str, dimensions: int, expected: dict[str, str]) -> VectorIndexState:
        pointer, reason = read_pointer(self._pointer_path(model, dimensions))
        if pointer is None:
            return VectorIndexState(present=False, fresh=False, vectors=0, reason=reason)
        present = VectorIndexState(present=True, fresh=False, vectors=live_rows(pointer),
                                   generation=generation_of(pointer), drift=round(drift_of(pointer), 6))
        sound, why = intact(self.folder, pointer)
        if not sound:
            return replace(present, reason=why)
        if any(pointer["stamp"].get(k) != v for k, v in expected.items()):
            return replace(present, reason="stale: the group's books changed", intact=True)
        return replace(present, fresh=True, intact=True)

    # -- writing ------------------------------------------------------------------------
    def build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
              progress: Progress | None, wait: bool = True) -> int:
        """Bring the group to `stores`: new books added to the trained index, gone ones filtered
        (living_vectors.py); a full build when there is nothing sound to extend."""
        return self._write(model, dimensions, expected, stores, progress, wait, full=False)

    def compact(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
                progress: Progress | None, wait: bool = True) -> int:
        """The retrain: a full build of `stores` (what a fresh index of these books is, byte for byte)."""
        return self._write(model, dimensions, expected, stores, progress, wait, full=True)

    def _write(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
               progress: Progress | None, wait: bool, full: bool) -> int:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise failed(exc) from exc
        with vector_lock(self.library_dir, wait):
            self._sweep(model, dimensions)  # first: a writer killed after its commit left the index fresh
            current = self.state(model, dimensions, expected)
            if current.fresh and not full:
                return current.vectors
            if not stores:
                raise BookAgentError("vector.index_build_failed", "the model group has no searchable vectors",
                                     remediation="search the group exactly (it is, below the index's threshold)")
            pointer, _ = read_pointer(self._pointer_path(model, dimensions))
            plan = planned(pointer, expected, stores) if pointer is not None and current.intact and not full else None
            if plan is not None:
                assert pointer is not None
                return self._extend(model, dimensions, expected, stores, progress, pointer, plan)
            return self._build(model, dimensions, expected, stores, progress)

    def _extend(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
                progress: Progress | None, pointer: dict[str, Any], plan: Extension) -> int:
        faiss = faiss_module()
        stamps = book_stamps(expected)
        segments, books, changed = list(plan.segments), list(plan.books), int(pointer["changed"]) + plan.changed
        written: list[Path] = []
        try:
            if plan.new:
                new = [(book_id, book_matrix(stores[book_id], dimensions)) for book_id in plan.new]
                trained_path = self.folder / pointer["files"]["trained"]["name"]
                started = time.perf_counter()
                with omp_threads(faiss):
                    index, residual = encode_segment(faiss, trained_path, new, progress)
                name = f"{group_key(model, dimensions)}-{secrets.token_hex(6)}"
                files = self._write_files(faiss, index, [i for _, m in new for i in m.ids], name)
                written += [self.folder / files[k]["name"] for k in ("index", "ids")]
                rows = sum(len(m.ids) for _, m in new)
                segments.append({**files, "rows": rows, "residual": residual,
                                 "build_s": round(time.perf_counter() - started, 3)})
                books += [{"book_id": b, "rows": len(m.ids), "stamp": stamps.get(b, ""), "removed": False} for b, m in new]
                changed += rows
            elif progress:
                progress(0, 0)
            updated = {**pointer, "stamp": dict(expected), "books": books, "segments": segments, "changed": changed,
                       "sequence": int(pointer["sequence"]) + 1,
                       "vectors": int(pointer["base_rows"]) + sum(int(s["rows"]) for s in segments)}
            crash_point("add:before-pointer" if plan.new else "remove:before-pointer")
            self._commit(model, dimensions, updated)
        except (RuntimeError, MemoryError, OSError) as exc:
            for path in written:
                unlink_quietly(path)
            raise failed(exc) from exc
        crash_point("add:after-pointer" if plan.new else "remove:after-pointer")
        self._drop_unnamed(model, dimensions, updated)
        return live_rows(updated)

    def _build(self, model: str, dimensions: int, expected: dict[str, str], stores: Mapping[str, VectorStore],
               progress: Progress | None) -> int:
        faiss = faiss_module()
        books = [(book_id, book_matrix(stores[book_id], dimensions)) for book_id in sorted(stores)]
        total = sum(len(m.ids) for _, m in books)
        if total == 0:
            raise BookAgentError("vector.index_build_failed", "the model group has no searchable vectors",
                                 remediation="search the group exactly (it is, below the index's threshold)")
        nlist = lists_for(total)
        stamps = book_stamps(expected)
        started = time.perf_counter()
        try:
            if progress:
                progress(0, total)
            with omp_threads(faiss):
                index, residual = trained(faiss, books, nlist, dimensions)
                empty = faiss.serialize_index(index)  # the trained index, before any row: added books use it
                fill(index, books, progress)
            build_s = time.perf_counter() - started
            name = f"{group_key(model, dimensions)}-{secrets.token_hex(6)}"
            files = self._write_files(faiss, index, [i for _, m in books for i in m.ids], name)
            trained_path = self.folder / f"{name}.trained"
            write_atomic(trained_path, lambda handle: handle.write(memoryview(empty)), prefix=TEMP_PREFIX, suffix="")
            files["trained"] = file_facts(trained_path)
            pointer = {
                "format": FORMAT, "stamp": dict(expected), "model": model, "dimensions": dimensions,
                "kind": "IVF-SQ8", "nlist": nlist, "nprobe": probes_for(total, nlist), "vectors": total, "base_rows": total,
                "books": [{"book_id": b, "rows": len(m.ids), "stamp": stamps.get(b, ""), "removed": False}
                          for b, m in books],
                "files": files, "segments": [], "sequence": 0, "changed": 0, "residual": residual,
                "build_s": round(build_s, 3),
            }
            crash_point("retrain:before-pointer")
            self._commit(model, dimensions, pointer)
        except (RuntimeError, MemoryError, OSError) as exc:
            self._drop_unnamed(model, dimensions, None)  # no pointer names the new files
            raise failed(exc) from exc
        crash_point("retrain:after-pointer")
        self._drop_unnamed(model, dimensions, pointer)
        return total

    def _commit(self, model: str, dimensions: int, pointer: dict[str, Any]) -> None:
        commit_pointer(self._pointer_path(model, dimensions), pointer, prefix=TEMP_PREFIX, indent=1)

    def _write_files(self, faiss: Any, index: Any, ids: list[str], generation: str) -> dict[str, Any]:
        """The index (serialised by faiss, written by Python: faiss's own file I/O cannot open
        every path Windows can, e.g. under a non-ASCII user name) and its row ids."""
        data = faiss.serialize_index(index)
        index_path, ids_path = self.folder / f"{generation}.faiss", self.folder / f"{generation}.ids"
        write_atomic(index_path, lambda handle: handle.write(memoryview(data)), prefix=TEMP_PREFIX, suffix="")
        write_atomic(ids_path, lambda handle: write_row_ids(handle, ids), prefix=TEMP_PREFIX, suffix="")
        return {"index": file_facts(index_path), "ids": file_facts(ids_path)}

    def _sweep(self, model: str, dimensions: int) -> None:
        """What a writer that died left (only writers, under the lock, write files here): temp
        files, and this group's files its pointer does not name."""
        sweep(self.folder.glob(f"{TEMP_PREFIX}*"))
        self._drop_unnamed(model, dimensions, None)

    def _drop_unnamed(self, model: str, dimensions: int, pointer: dict[str, Any] | None) -> None:
        """Every file of the group that `pointer` does not name (None: read the one in place)."""
        if pointer is None:
            pointer, _ = read_pointer(self._pointer_path(model, dimensions))
        own = re.compile(re.escape(group_key(model, dimensions)) + r"-[0-9a-f]{12}(\.faiss|\.ids|\.trained)")
        sweep(unnamed(self.folder, own, named_files(pointer) if pointer is not None else set()))

    # -- open ---------------------------------------------------------------------------
    def open(self, model: str, dimensions: int, expected: dict[str, str],
             stores: Mapping[str, VectorStore], in_place: bool = False) -> LibraryVectorIndex:
        faiss = faiss_module()
        path = self._pointer_path(model, dimensions)

        def open_once(last: bool) -> LibraryVectorIndex:
            pointer, reason = read_pointer(path)
            if pointer is None:
                raise unreadable(f"its pointer is {reason}")
            if not in_place and any(pointer["stamp"].get(k) != v for k, v in expected.items()):
                raise BookAgentError("vector.index_stale", "the approximate index was built for other books",
                                     remediation="search again: the index is brought up to date when stale")
            sound, why = intact(self.folder, pointer)
            if not sound:
                if why == "missing" and not last:
                    raise FileNotFoundError(why)  # a writer replaced the generation: read the new one
                raise unreadable(why)
            try:
                segments, ids = loaded_segments(faiss, self.folder, group_key(model, dimensions), pointer, dimensions)
            except BookAgentError as exc:
                if isinstance(exc.__cause__, FileNotFoundError) and not last:
                    raise FileNotFoundError(str(exc)) from exc  # dropped after its pointer was read
                self._discard(path, pointer["files"]["index"]["name"])  # the next state() asks for a rebuild
                raise
            metric = str(pointer["stamp"].get("metric") or expected.get("metric") or "cosine")
            return FaissGroupIndex(faiss, segments, ids, pointer, stores, metric, dimensions, generation_of(pointer))

        return pinned(open_once, attempts=2)

    def _discard(self, path: Path, index_file: str) -> None:
        """Forget an index faiss cannot read (its pointer goes, unless a writer replaced it; while
        one writes, it is left to the writer: a reader never waits)."""
        with contextlib.suppress(BookAgentError), build_lock(self.library_dir, wait=False):
            current, _ = read_pointer(path)
            if current is not None and current["files"]["index"]["name"] == index_file:
                unlink_quietly(path)

    def _pointer_path(self, model: str, dimensions: int) -> Path:
        return self.folder / f"{group_key(model, dimensions)}.json"
