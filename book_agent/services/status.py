"""`status(book)`: package health, sidecar freshness, what each capability needs, the config.

The BookAgent facade (book_agent/agent.py) only delegates here.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from book_agent.domain.book.book_refs import one_book
from book_agent.domain.book.book_reports import BookStatus, Capability
from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.registry_entry import database_sha
from book_agent.domain.book.runtime_states import LexicalState, unstamped
from book_agent.domain.book.sidecar_stamps import lexical_stamp
from book_agent.services.books import OpenBooks
from book_agent.services.context import Ports
from book_agent.services.locators import database_stamp, locator_status


def book_status(ports: Ports, books: OpenBooks, book_ref: str, verify: bool = False) -> BookStatus:
    """The status dict of contracts/core.md; never a key (auth_env_set says whether it is set)."""
    entry = ports.registry.get(one_book(book_ref))
    root = Path(entry["package_root"])
    runtime_dir = ports.runtime_dir(book_ref)
    present = ports.packages.exists(root)
    changed = ports.packages.changes(root, entry.get("fingerprint") or {}) if present else ["(package folder missing)"]
    info = ports.packages.inspect(root, verify_hashes=verify) if present else None
    diagnostics = [d.to_dict() for d in info.diagnostics] if info else []
    healthy = info is not None and not info.has_errors and not changed
    lexical: LexicalState = ports.runtime.lexical_state(runtime_dir, lexical_stamp(
        str(entry.get("manifest_sha256") or ""), database_sha(info))) if info else {"present": False, "fresh": False}
    config = ports.runtime.load_config(runtime_dir)
    network = config.network.to_dict()
    return {
        "book_id": book_ref,
        "title": entry.get("title"),
        "package_root": str(root),
        "runtime_dir": str(runtime_dir),
        "package": {"healthy": healthy, "hashes_verified": verify, "changed_files": changed,
                    "diagnostics": diagnostics},
        "sidecars": {"lexical": lexical, "locators": locator_status(
            ports.locators, runtime_dir, database_stamp(entry, info)) if info else {"present": False, "fresh": False}},
        "capabilities": {
            "lexical_search": {"available": healthy and lexical.get("fresh", False),
                               "needs": "a fresh lexical sidecar (`book-agent prepare BOOK`)"},
            "vector_search": _vector_capability(books, book_ref, healthy, info),
            "sources": {"available": healthy, "kind": info.original_kind if info else None},
            "render_page": {"available": healthy and bool(info and info.original_kind == "pdf"),
                            "needs": "a PDF original (EPUB has no fixed pages)"},
        },
        "config": {"network": network, "query": asdict(config.query),
                   "reranker": asdict(config.reranker),
                   "auth_env_set": bool(config.network.auth_env and os.environ.get(config.network.auth_env))},
    }


def _vector_capability(books: OpenBooks, book_ref: str, healthy: bool, info: PackageInfo | None) -> Capability:
    needs = ("the package's vectors and a query encoder for its model: the model's files on this machine "
             "(`book-agent model install MODEL` for a model it knows; `book-agent doctor` lists them), "
             "or remote requests allowed to an exact endpoint with auth_env set; or a caller-supplied "
             "query vector")
    manifest = info.vector_manifest if info else None
    if not (healthy and manifest):
        return {"available": False, "needs": needs, "model": (manifest or {}).get("model"),
                "reason": "the package has no vectors" if healthy else "the package is not healthy"}
    book = books.open(book_ref)
    store, runtime, evidence, problem = book.vector_parts
    if problem is not None or runtime is None:
        reason = problem.message if problem is not None else "no query runtime"
        return {"available": False, "needs": needs, "model": manifest.get("model"), "reason": reason}
    encoding = runtime.availability()
    check = book.vector_check(manifest.get("model"), runtime)
    return {"available": bool(encoding["available"]), "needs": needs, "model": manifest.get("model"),
            "languages": evidence.languages, "languages_source": evidence.source,
            "language_evidence": unstamped(check) if check else
            {"status": "not-run", "reason": "measured by `book-agent prepare BOOK` when queries can be encoded"},
            "query_encoding": encoding}
