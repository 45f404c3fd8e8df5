"""BookAgent: the facade every driver (CLI, MCP server, Python API) uses.

    agent = BookAgent()                       # data dir: $BOOK_AGENT_HOME or the user data dir
    agent.init("path/to/package-or-archive")  # verify, register (read-only), build sidecars
    agent.search("book-id", "query")          # hybrid search with citable hits

Books are referred to by their registered book_id. Nothing here writes into a package:
derived data lives in the book's runtime dir, data_dir/books/<book_id>/.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from book_agent.adapters.storage.json_registry import JsonRegistry
from book_agent.app import books, registration
from book_agent.app.config_store import apply_settings, config_notes, load_config, save_config
from book_agent.app.fingerprint import changes
from book_agent.app.open_book import OpenBook
from book_agent.domain.errors import BookAgentError
from book_agent.domain.package import PackageInfo
from book_agent.domain.runtime_config import RuntimeConfig
from book_agent.ports import Registry
from book_agent.settings import resolve_data_dir

Progress = Callable[[int, int], None]


class BookAgent:
    def __init__(self, data_dir: str | Path | None = None, registry: Registry | None = None) -> None:
        """`registry`: another Registry (tests hand in fakes); else registry.json in data_dir."""
        self.data_dir = resolve_data_dir(data_dir)
        self.registry: Registry = registry if registry is not None else JsonRegistry(self.data_dir)
        self._open: dict[str, OpenBook] = {}
        self._lock = threading.RLock()

    # --- registration -----------------------------------------------------------------

    def inspect(self, path: str | Path) -> dict[str, Any]:
        """Inspect a package folder or archive without registering it."""
        source = Path(path).expanduser()
        report = books.inspect_any(source).to_dict()
        if books.is_archive(source):
            # the paths point into the temporary folder it was extracted to, now removed
            report["archive"] = {"path": str(source.resolve()), "extracted_to_temporary_folder": True,
                                 "paths_are_temporary": True}
        return report

    def init(self, path: str | Path, reranker: str = "none", replace: bool = False,
             progress: Progress | None = None) -> dict[str, Any]:
        """Verify a package in full and register it; returns the same dict as `resolve`.

        A folder is registered in place (read-only); an archive is imported safely into
        the data dir first. The book_id is the package's own. All or nothing: a failure
        leaves the registry, the runtime dir and the data dir as they were
        (book_agent/app/registration.py).
        """
        source = Path(path).expanduser().resolve()
        entry, previous = registration.register(self.data_dir, self.registry, source, reranker, replace, progress)
        book_id = str(entry["book_id"])
        with self._lock:
            self._forget(book_id)
        self._measure_language_evidence(book_id)
        if previous and previous.get("imported") and previous.get("package_root") != entry["package_root"]:
            self._drop_unused_import(Path(previous["package_root"]))  # the copy it replaced
        return self.resolve(book_id)

    def remove(self, book_ref: str) -> dict[str, Any]:
        """Unregister a book: its runtime dir goes, and its imported copy if it was imported.

        A package folder registered in place is never touched; a malformed registry entry
        is removed too (that is how it is repaired)."""
        try:
            entry = self.registry.get(book_ref)
        except BookAgentError as exc:
            if exc.code != "registry.corrupt":
                raise
            entry = {}
        with self._lock:
            self._forget(book_ref)
        self.registry.remove(book_ref)
        runtime = self.runtime_dir(book_ref)
        if runtime.exists():
            books.remove_tree(runtime)
        removed_copy = bool(entry.get("imported")) and self._drop_unused_import(Path(entry["package_root"]))
        return {"book_id": book_ref, "removed": True, "runtime_dir_removed": str(runtime),
                "imported_copy_removed": removed_copy, "package_root": entry.get("package_root")}

    def _drop_unused_import(self, package_root: Path) -> bool:
        return registration.drop_unused_import(self.data_dir, self.registry, package_root)

    def list_books(self) -> list[dict[str, Any]]:
        return [
            {k: e.get(k) for k in ("book_id", "title", "package_root", "source", "imported", "registered_at")}
            for e in self.registry.list()
        ]

    def _forget(self, book_id: str) -> None:
        book = self._open.pop(book_id, None)
        if book is not None:
            book.close()

    def close(self) -> None:
        """Close every open book's files. The agent stays usable: books reopen on demand."""
        with self._lock:
            for book_id in list(self._open):
                self._forget(book_id)

    def __enter__(self) -> BookAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def runtime_dir(self, book_id: str) -> Path:
        return self.data_dir / "books" / book_id

    def resolve(self, book_ref: str) -> dict[str, Any]:
        book = self._book(book_ref)
        return {
            "book_id": book.book_id,
            "title": book.package.title,
            "package_root": str(book.package.root),
            "runtime_dir": str(book.runtime_dir),
            "package": book.package.to_dict(),
            "config": book.config.to_dict(),
        }

    def _book(self, book_ref: str) -> OpenBook:
        """The open book for a registered id; says when its package changed since init."""
        if not isinstance(book_ref, str) or not book_ref:
            raise BookAgentError("book.bad_ref", "a book is referred to by its registered book_id",
                                 remediation="run `book-agent list` to see the registered books")
        with self._lock:
            entry = self.registry.get(book_ref)
            cached = self._open.get(book_ref)
            root = Path(entry["package_root"])
            changed = changes(root, entry.get("fingerprint") or {})
            if changed:
                self._forget(book_ref)
                raise BookAgentError(
                    "package.changed",
                    f"the package of {book_ref!r} changed since it was registered: {', '.join(changed)}",
                    details={"book_id": book_ref, "changed": changed, "package_root": str(root)},
                    remediation=f"restore the package, or check it with `book-agent status {book_ref} --verify`; "
                    "a package is read-only: for new content rebuild it (its manifest hashes must match) "
                    f"and run `book-agent init PACKAGE --replace`",
                )
            if cached is not None and cached.entry == entry:
                return cached
            if cached is not None:
                self._forget(book_ref)
            info = _registered_info(entry) or books.inspect_dir(root, verify_hashes=False)
            book = OpenBook(entry, info, self.runtime_dir(book_ref))
            self._open[book_ref] = book
            return book

    # --- health and derived data -----------------------------------------------------

    def status(self, book_ref: str, verify: bool = False) -> dict[str, Any]:
        """Package health, sidecars present and fresh, and what each capability needs."""
        from book_agent.app.status import book_status

        return book_status(self, book_ref, verify)

    def prepare(self, book_ref: str, progress: Progress | None = None) -> dict[str, Any]:
        """(Re)build the runtime sidecars that are missing, corrupt or stale. Idempotent."""
        entry = self.registry.get(book_ref)
        info = books.inspect_dir(Path(entry["package_root"]), verify_hashes=False)
        with self._lock:
            self._forget(book_ref)
        result = registration.prepare(entry, info, self.runtime_dir(book_ref), progress)
        result["language_evidence"] = self._measure_language_evidence(book_ref)
        return result

    def _measure_language_evidence(self, book_id: str) -> dict[str, Any] | None:
        """Does the model read the book's scripts? Measured once per model and route (cached)."""
        book = self._book(book_id)
        store, runtime, _, problem = book.vector_parts
        if problem is not None:
            return None
        try:
            check = book.vector_check((book.package.vector_manifest or {}).get("model"), runtime, store)
        except BookAgentError as exc:  # evidence is optional: search falls back to what is known
            return {"status": "failed", "code": exc.code, "reason": exc.message}
        with self._lock:
            self._forget(book_id)  # the next search reads the new evidence
        return {k: v for k, v in check.items() if k != "stamp"} if check else None

    def configure(self, book_ref: str, **settings: Any) -> dict[str, Any]:
        """Write the book's runtime config (network policy, query, reranker). Returns it."""
        self.registry.get(book_ref)
        runtime_dir = self.runtime_dir(book_ref)
        reset = bool(settings.pop("reset", False))
        config = apply_settings(RuntimeConfig() if reset else load_config(runtime_dir), settings)
        _check_reranker(config, runtime_dir)  # refuse a reranker that could not load, before saving
        book = self._book(book_ref)
        save_config(runtime_dir, config)
        with self._lock:
            self._forget(book_ref)
        return {"book_id": book_ref, "config": config.to_dict(), "notes": config_notes(config, book.package)}

    # --- search and sources --------------------------------------------------------------

    def search(self, book_ref: str, query: str, top_k: int = 6, strict: bool = False,
               query_vector: Sequence[float] | None = None, hints: dict[str, Any] | None = None) -> dict[str, Any]:
        book = self._book(book_ref)
        result = book.searcher().search(query, top_k=top_k, strict=strict, query_vector=query_vector, hints=hints)
        result["visual_fallback"] = _visual_fallback(query, result["hits"], hints)
        return result

    def warm_up(self, book_ref: str) -> dict[str, bool]:
        """Load a book's search parts now (the MCP server does it after its handshake)."""
        return self._book(book_ref).warm_up()

    def evaluate(self, book_ref: str, questions_path: str | Path, k: int = 10) -> dict[str, Any]:
        """recall@k, MRR@10 and nDCG@10 for lexical only, vector only and hybrid."""
        from book_agent.adapters.storage.input_files import (
            MAX_QUESTIONS_BYTES,
            InputTooLarge,
            read_limited,
        )
        from book_agent.services.evaluation import evaluate, parse_questions

        try:
            lines = read_limited(questions_path, MAX_QUESTIONS_BYTES).decode("utf-8").splitlines()
        except InputTooLarge as exc:
            raise BookAgentError("eval.questions_too_large", f"{questions_path} is larger than {exc.limit} bytes",
                                 details={"limit_bytes": exc.limit},
                                 remediation="split the questions into several files") from exc
        except (OSError, ValueError) as exc:
            raise BookAgentError("eval.bad_questions", f"cannot read {questions_path}: {exc}",
                                 remediation="pass a UTF-8 JSON Lines file of questions") from exc
        result = evaluate(self._book(book_ref).searcher(), parse_questions(lines), k=k)
        result["book_id"] = book_ref
        return result

    def read_entry(self, book_ref: str, record_id: str) -> dict[str, Any]:
        book = self._book(book_ref)
        record = book.records.get(record_id)
        data: dict[str, Any] = record.to_dict()
        data["book_id"] = book.book_id
        data["evidence_id"] = f"{book.book_id}#{record.record_id}"
        data["source_locator"] = {"book_id": book.book_id, **record.source}
        return data

    def read_markdown(self, book_ref: str, record_id: str | None = None, start: int | None = None,
                      end: int | None = None, heading: str | None = None, context_chars: int = 500) -> dict[str, Any]:
        from book_agent.adapters.sources import markdown_reader

        book = self._book(book_ref)
        span = None
        if record_id is not None:
            record = book.records.get(record_id)
            span = (record.md_start, record.md_end)
        return markdown_reader.read_markdown(book.package, record_span=span, record_id=record_id, start=start,
                                             end=end, heading=heading, context_chars=context_chars)

    def get_skill(self, book_ref: str) -> dict[str, Any]:
        from book_agent.adapters.sources import markdown_reader

        return markdown_reader.read_skill(self._book(book_ref).package)

    def locate_source(self, book_ref: str, hit_or_text: Any, hints: dict[str, Any] | None = None) -> dict[str, Any]:
        book = self._book(book_ref)
        if isinstance(hit_or_text, str) and hit_or_text.startswith(book.book_id + "#"):
            hit_or_text = hit_or_text.split("#", 1)[1]
        if isinstance(hit_or_text, str):
            found = book.records.fetch([hit_or_text]).get(hit_or_text)
            if found is not None:  # a record id, else a quotation
                hit_or_text = found.to_dict()
        result: dict[str, Any] = book.sources.locate(hit_or_text, hints=hints)
        return result

    def read_source(self, book_ref: str, locator: dict[str, Any], max_chars: int = 12000) -> dict[str, Any]:
        result: dict[str, Any] = self._book(book_ref).sources.read_source(locator, max_chars=max_chars)
        return result

    def render_page(self, book_ref: str, page_index: int, clip: Sequence[float] | None = None, dpi: int = 150,
                    include_image: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self._book(book_ref).sources.render_page(
            page_index, clip=clip, dpi=dpi, include_image=include_image)
        return result


def _check_reranker(config: RuntimeConfig, runtime_dir: Path) -> None:
    if config.reranker.provider == "none":
        return
    from book_agent.adapters.rerankers import create_reranker

    reranker = create_reranker(config.to_dict(), runtime_dir)
    close = getattr(reranker, "close", None)
    if callable(close):
        close()


_database_sha = registration.database_sha


def _registered_info(entry: dict[str, Any]) -> PackageInfo | None:
    """The inspection stored at init (None when absent, as from an older version, or unusable)."""
    try:
        return PackageInfo.from_dict(entry["package"]) if isinstance(entry.get("package"), dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def _visual_fallback(query: str, hits: list[dict[str, Any]], hints: dict[str, Any] | None) -> dict[str, Any]:
    from book_agent.domain.visual_fallback import VisualFallbackPolicy

    result: dict[str, Any] = VisualFallbackPolicy().evaluate(query, hits, hints=hints)
    return result
