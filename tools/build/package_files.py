"""Writing the files of a book package (contracts/book-package-0.1.md): a dev-tool module.

Shared by tools/build/build_package.py (any PDF or EPUB) and tools/build/build_example_package.py (the
bundled example): index.sqlite with its records and optional float32 vectors, vectors.json,
book-package.json with every file's size and SHA-256, and the local all-MiniLM encoder.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.book.package import DATABASE_SCHEMA_SQL

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIMS = 384
Encoder = Callable[[list[str]], np.ndarray]
MEDIA_TYPES = {".pdf": "application/pdf", ".epub": "application/epub+zip"}


@dataclass
class Row:
    """One record as index.sqlite stores it (`source` is the locator object)."""

    record_id: str
    text: str
    headings: list[str]
    md_start: int | None
    md_end: int | None
    source: dict[str, Any]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_entry(root: Path, rel: str, **extra: Any) -> dict[str, Any]:
    path = root / rel
    return {"path": rel, "sha256": sha256(path), "bytes": path.stat().st_size, **extra}


def write_database(path: Path, book_id: str, rows: Sequence[Row], vectors: np.ndarray | None,
                   model: str = MODEL, dims: int = DIMS) -> None:
    """index.sqlite: meta, records in reading order, and one vector per record (or none)."""
    con = sqlite3.connect(path)
    try:
        con.executescript(DATABASE_SCHEMA_SQL)
        meta = {"schema_version": "0.1", "book_id": book_id, "record_count": str(len(rows))}
        if vectors is not None:
            meta.update(embedding_model=model, embedding_dimensions=str(dims))
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        con.executemany(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(r.record_id, seq, r.text, json.dumps(r.headings, ensure_ascii=False), r.md_start, r.md_end,
              json.dumps(r.source, ensure_ascii=False)) for seq, r in enumerate(rows)],
        )
        if vectors is not None:
            con.executemany("INSERT INTO vectors VALUES (?, ?)",
                            [(r.record_id, vectors[i].astype("<f4").tobytes()) for i, r in enumerate(rows)])
        con.commit()
        con.execute("VACUUM")  # a committed file: no free pages, no journal left behind
    finally:
        con.close()


def local_encoder(model: str = MODEL, dims: int = DIMS) -> Encoder:
    """The product's own numpy encoder; raises BookAgentError when the model's files are absent."""
    from book_agent_adapters.encoders.local import LocalQueryEncoder

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


def write_manifest(root: Path, about: dict[str, Any], original_rel: str, with_vectors: bool) -> None:
    """book-package.json, written last: it lists every other file's size and hash. `about`:
    book_id, title, authors, language, created_at, generator."""
    media_type = MEDIA_TYPES[Path(original_rel).suffix.lower()]
    files = {
        "original": file_entry(root, original_rel, media_type=media_type),
        "markdown": file_entry(root, "book.md"),
        "skill": file_entry(root, "SKILL.md"),
        "database": file_entry(root, "index.sqlite"),
    }
    if with_vectors:
        files["vector_manifest"] = file_entry(root, "vectors.json")
    manifest = {"schema": "book-agent.package", "schema_version": "0.1", **about, "files": files,
                "extra_files": []}
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    (root / "book-package.json").write_text(text, encoding="utf-8")
