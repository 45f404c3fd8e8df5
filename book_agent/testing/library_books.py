"""Books for the storage and library contract suites: their records, vectors, and real package
databases (index.sqlite in the book-package format) that any backend can read.

    books = sample_library()                     # three books, each with a word only it holds
    root = write_package_database(tmp_path / "b0", "b0", books["b0"].records, books["b0"].vectors)
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.book.package import DATABASE_SCHEMA_SQL
from book_agent.domain.records import Record

F32 = npt.NDArray[np.float32]
MODEL = "contract/random-vectors"
DIMENSIONS = 16
WORDS = ("river water ground battle general temple valley farming light energy supply army march camp "
         "fire wind mountain plain road bridge city wall siege enemy season rain harvest grain tax").split()
MARKERS = {"b0": "zephyrine", "b1": "quillwort", "b2": "marblewood"}  # each in one record of its book only


@dataclass(frozen=True)
class SampleBook:
    book_id: str
    records: list[Record]
    vectors: F32  # one unit row per record, in record order

    def evidence_ids(self) -> list[str]:
        return [f"{self.book_id}#{r.record_id}" for r in self.records]


def sample_library(records_per_book: int = 40, seed: int = 7) -> dict[str, SampleBook]:
    """Three books of random words (a Zipf-like mix), each holding its marker word once."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]
    books: dict[str, SampleBook] = {}
    for b, (book_id, marker) in enumerate(MARKERS.items()):
        records = []
        for i in range(records_per_book):
            words = rng.choices(WORDS, weights, k=rng.randint(4, 16))
            if i == records_per_book // 2:
                words.insert(rng.randint(0, len(words)), marker)
            records.append(Record(f"r{i:03d}", " ".join(words) + ".", headings=["Book", f"Part {i // 10}"], seq=i))
        books[book_id] = SampleBook(book_id, records, unit_rows(records_per_book, DIMENSIONS, seed + b))
    return books


def unit_rows(count: int, dimensions: int, seed: int) -> F32:
    matrix = np.random.default_rng(seed).standard_normal((count, dimensions)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def write_package_database(folder: Path, book_id: str, records: list[Record], vectors: F32 | None = None,
                           model: str = MODEL) -> Path:
    """folder/index.sqlite with the records (and vectors) as a package holds them; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "index.sqlite"
    con = sqlite3.connect(path)
    try:
        con.executescript(DATABASE_SCHEMA_SQL)
        meta = {"schema_version": "0.1", "book_id": book_id, "record_count": str(len(records))}
        if vectors is not None:
            meta.update(embedding_dimensions=str(vectors.shape[1]), embedding_model=model)
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        con.executemany("INSERT INTO records VALUES (?, ?, ?, ?, NULL, NULL, ?)", [
            (r.record_id, i, r.text, json.dumps(r.headings, ensure_ascii=False), json.dumps(r.source))
            for i, r in enumerate(records)])
        if vectors is not None:
            con.executemany("INSERT INTO vectors VALUES (?, ?)",
                            [(r.record_id, vectors[i].astype("<f4").tobytes()) for i, r in enumerate(records)])
        con.commit()
    finally:
        con.close()
    return path


def vector_manifest(vectors: F32, model: str = MODEL, metric: str = "cosine") -> dict[str, Any]:
    """vectors.json as a package declares its vectors."""
    return {"schema": "book-agent.vectors", "schema_version": "0.1", "provider": "local", "model": model,
            "dimensions": int(vectors.shape[1]), "dtype": "float32", "normalized": True, "metric": metric,
            "query_instruction": "", "record_count": int(vectors.shape[0])}


def exact_scores(query: F32, books: dict[str, SampleBook]) -> dict[str, float]:
    """Every record's cosine with the query, by evidence id (what exact search gives)."""
    unit = query / np.linalg.norm(query)
    return {eid: float(score) for book in books.values()
            for eid, score in zip(book.evidence_ids(), book.vectors @ unit, strict=True)}
