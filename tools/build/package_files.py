"""The example package's files (tools/build/build_example_package.py): what book-agent-build
writes (adapters/book_agent_adapters/builder/files.py: index.sqlite, book-package.json with every
file's size and SHA-256), with the example's own model, all-MiniLM-L6-v2, its local encoder and its
vectors.json.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from book_agent_adapters.bench import (
    MEDIA_TYPES,
    file_entry,
    write_manifest,
)
from book_agent_adapters.bench import (
    ManifestRow as Row,
)
from book_agent_adapters.bench import builder_files as files
from book_agent_adapters.bench import (
    file_sha256 as sha256,
)

__all__ = ["DIMS", "MEDIA_TYPES", "MODEL", "Encoder", "Row", "checked_vectors", "file_entry", "local_encoder", "sha256",
           "write_database", "write_manifest", "write_vector_manifest"]

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIMS = 384
Encoder = Callable[[list[str]], np.ndarray]


def write_database(path: Path, book_id: str, rows: Sequence[Row], vectors: np.ndarray | None,
                   model: str = MODEL, dims: int = DIMS) -> None:
    """index.sqlite as book-agent-build writes it (builder/files.py), MiniLM's by default."""
    files.write_database(path, book_id, rows, vectors, model, dims)


def local_encoder(model: str = MODEL, dims: int = DIMS) -> Encoder:
    """The product's own numpy encoder; raises BookAgentError when the model's files are absent."""
    from book_agent_adapters.bench import LocalQueryEncoder

    encoder = LocalQueryEncoder(model, dims, normalize=True)

    def encode(texts: list[str]) -> np.ndarray:
        # one text a call: padded numpy batches are slower here, and a text's vector must
        # not depend on which other texts share its batch (determinism)
        out = [encoder.encode_batch([text]) for text in texts]
        return np.vstack(out) if out else np.zeros((0, dims), np.float32)

    return encode


def checked_vectors(vectors: Any, count: int, dims: int = DIMS) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.shape != (count, dims) or not np.isfinite(matrix).all():
        raise RuntimeError(f"the encoder gave {matrix.shape} vectors for {count} records")
    return matrix


def write_vector_manifest(root: Path, count: int, languages: list[str], model: str = MODEL,
                          dims: int = DIMS) -> None:
    manifest = {
        "schema": "book-agent.vectors", "schema_version": "0.1", "provider": "local", "model": model,
        "dimensions": dims, "dtype": "float32", "normalized": True, "metric": "cosine",
        "query_instruction": "", "languages": languages, "record_count": count,
    }
    (root / "vectors.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
