"""The files of a book package (contracts/book-package-0.1.md): index.sqlite, vectors.json,
book.md, SKILL.md and book-package.json (written last: every other file's size and SHA-256)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.book.package import DATABASE_SCHEMA_SQL

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
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_entry(root: Path, rel: str, **extra: Any) -> dict[str, Any]:
    path = root / rel
    return {"path": rel, "sha256": sha256(path), "bytes": path.stat().st_size, **extra}


def write_database(path: Path, book_id: str, rows: Sequence[Row], vectors: np.ndarray | None,
                   model: str = "", dims: int = 0) -> None:
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


def write_markdown(path: Path, title: str, rows: list[Row]) -> None:
    """book.md: `#` title, a heading line where the heading path changes, each record's text
    (its md_start/md_end set here) followed by a blank line."""
    parts: list[str] = [f"# {title}\n\n"]
    offset, last = len(parts[0]), None
    for row in rows:
        if row.headings and row.headings != last:
            line = "#" * min(len(row.headings) + 1, 6) + " " + row.headings[-1] + "\n\n"
            parts.append(line)
            offset += len(line)
            last = row.headings
        row.md_start, row.md_end = offset, offset + len(row.text)
        parts += [row.text, "\n\n"]
        offset = row.md_end + 2
    path.write_text("".join(parts), encoding="utf-8", newline="\n")


def skill_text(book_id: str, about: dict[str, Any], rows: list[Row], kind: str, vectors: bool) -> str:
    by = f" by {', '.join(about['authors'])}" if about["authors"] else ""
    tops: list[str] = []
    for row in rows:
        if row.headings and row.headings[0] not in tops:
            tops.append(row.headings[0])
    contents = "".join(f"- {t}\n" for t in tops[:40]) or "- (the original has no outline)\n"
    where = "a page index and character offsets" if kind == "pdf" else "a chapter href, fragment and offsets"
    channels = "a lexical and a vector channel, fused" if vectors else "the lexical channel (this package has no vectors)"
    title = " ".join(str(about["title"]).split())
    description = f"{title}{by}".replace('"', "'")
    return (f"---\nname: {book_id}\ndescription: \"{description}. Use it to find, quote and cite passages "
            f"of this book with exact locators.\"\n---\n\n# {title}{by}\n\n## Contents\n\n{contents}\n"
            f"## How to use it\n\n1. `search` with the reader's question; hits come from {channels}.\n"
            f"2. Quote the hit `text` and cite its `evidence_id` and `source_locator` ({where}).\n"
            "3. `read_entry` gives a whole record; `read_markdown` the text around it.\n"
            "4. `locate_source` checks a quotation against the original; `read_source` reads it there"
            + (", and `render_page` shows the PDF page.\n" if kind == "pdf" else ".\n"))


def write_vector_manifest(root: Path, manifest: dict[str, Any]) -> None:
    (root / "vectors.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_manifest(root: Path, about: dict[str, Any], original_rel: str, with_vectors: bool) -> None:
    """book-package.json, written last. `about`: book_id, title, authors, language, created_at,
    generator (and any further keys: kept by the inspector as info)."""
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
