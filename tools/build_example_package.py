"""Build the example book package (The Art of War) from the committed EPUB.

    python tools/build_example_package.py [--epub PATH] [--out DIR]     (`make example-package`)

A development tool, not product code: the product never embeds documents. It chunks the
EPUB along its structure (tools/example_chunks.py), writes book.md with exact offsets,
SKILL.md, index.sqlite with all-MiniLM-L6-v2 vectors from the local numpy encoder, and
the two manifests. The output is deterministic: same EPUB, same bytes (vectors up to the
last float bit, which depends on the machine's BLAS). See contracts/example-book.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from example_chunks import Chunk, Doc, chunk_book  # noqa: E402

from book_agent.domain.package import DATABASE_SCHEMA_SQL  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EPUB = ROOT / "examples" / "the-art-of-war" / "the-art-of-war.epub"
OUT = ROOT / "examples" / "art-of-war-package"
BOOK_ID = "art-of-war"
TITLE = "The Art of War"
AUTHORS = ["Sun Tzu", "Lionel Giles (translator)"]
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIMS = 384
CREATED_AT = "2020-10-21T02:39:24Z"  # the EPUB's own dc:date, so rebuilds are byte-identical
GENERATOR = {"name": "book-agent tools/build_example_package.py", "version": "1"}
Encoder = Callable[[list[str]], np.ndarray]

SKILL = """---
name: art-of-war
description: Sun Tzu's The Art of War (Lionel Giles's 1910 translation, with his introduction and notes full of Chinese text). Use it to find, quote and cite passages on strategy, deception, terrain, spies and leadership.
---

# The Art of War (Sun Tzu, tr. Lionel Giles)

The book: thirteen short chapters of numbered verses (I. Laying Plans ... XIII. The Use of
Spies), Giles's preface, a long introduction (Sun Wu and His Book, The Text of Sun Tzu, The
Commentators, Appreciations, Apologies for War), a bibliography of Chinese military classics,
and about 800 notes that quote the Chinese text (孫子, 兵法, the commentators).

## How to use it

1. `search` with the reader's question, in English or Chinese (Chinese terms such as 知彼知己
   or 兵法 match the Chinese text of the notes). Hits come from a lexical and a vector
   channel, fused.
2. Quote the hit `text` and cite its `evidence_id` (`art-of-war#ch03-v01-02`) and
   `source_locator` (EPUB href, fragment, character offsets).
3. `read_entry` gives a whole record; `read_markdown` with a record id gives the text
   around it (the verses before and after, the chapter's notes under "Notes").
4. `locate_source` checks a quotation against the EPUB itself; `read_source` reads the
   original chapter text around a locator.

## Record ids

- `ch03-v05-07`: chapter III, verses 5 to 7 (verses are the book's numbered paragraphs).
- `ch03-n225`: Giles's note 225, on chapter III (notes are records of their own, headed
  "Notes" under their chapter; `n069c` is the third piece of a long note).
- `preface-p01`, `intro1-p05` .. `intro5-p..`, `biblio-p..`: paragraphs of the front matter.

Note numbers appear glued to the verse text (`...intact.218`): that is note 218.
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def file_entry(root: Path, rel: str, **extra: Any) -> dict[str, Any]:
    path = root / rel
    return {"path": rel, "sha256": sha256(path), "bytes": path.stat().st_size, **extra}


def write_markdown(path: Path, docs: Sequence[Doc]) -> None:
    """book.md: each document a `#` section, its notes a `## Notes` section; sets md offsets."""
    parts: list[str] = [f"{TITLE}, by Sun Tzu, translated from the Chinese by Lionel Giles.\n\n"]
    offset = len(parts[0])

    def add(text: str) -> int:
        nonlocal offset
        parts.append(text)
        start = offset
        offset += len(text)
        return start

    for doc in docs:
        add(f"# {doc.title}\n\n")
        for index, chunk in enumerate([*doc.chunks, *doc.notes]):
            if index == len(doc.chunks):
                add("## Notes\n\n")
            chunk.md_start = add(chunk.text)
            chunk.md_end = chunk.md_start + len(chunk.text)
            add("\n\n")
    path.write_text("".join(parts), encoding="utf-8", newline="\n")


def write_database(path: Path, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
    con = sqlite3.connect(path)
    try:
        con.executescript(DATABASE_SCHEMA_SQL)
        meta = {"schema_version": "0.1", "book_id": BOOK_ID, "record_count": str(len(chunks)),
                "embedding_model": MODEL, "embedding_dimensions": str(DIMS)}
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        con.executemany(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(c.record_id, seq, c.text, json.dumps(c.headings, ensure_ascii=False), c.md_start, c.md_end,
              json.dumps(c.source(), ensure_ascii=False)) for seq, c in enumerate(chunks)],
        )
        con.executemany("INSERT INTO vectors VALUES (?, ?)",
                        [(c.record_id, vectors[i].astype("<f4").tobytes()) for i, c in enumerate(chunks)])
        con.commit()
        con.execute("VACUUM")  # a committed file: no free pages, no journal left behind
    finally:
        con.close()


def local_encoder() -> Encoder:
    from book_agent_adapters.encoders.local import LocalQueryEncoder

    encoder = LocalQueryEncoder(MODEL, DIMS, normalize=True)

    def encode(texts: list[str]) -> np.ndarray:
        # one text a call: padded numpy batches are slower here, and a text's vector must
        # not depend on which other texts share its batch (determinism)
        out = [encoder.encode_batch([text]) for text in texts]
        return np.vstack(out) if out else np.zeros((0, DIMS), np.float32)

    return encode


def cached(encode: Encoder, cache: Path) -> Encoder:
    """Encode only texts not in the cache (an .npz keyed by text sha256): rebuilds after a
    chunking change take seconds instead of the minutes numpy BERT needs for the whole book."""

    def run(texts: list[str]) -> np.ndarray:
        known: dict[str, np.ndarray] = {}
        if cache.is_file():
            with np.load(cache) as data:
                known = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
        if todo:
            known.update(zip([k for k, _ in todo], encode([t for _, t in todo]), strict=True))
        out = np.stack([known[k] for k in keys]) if keys else np.zeros((0, DIMS), np.float32)
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, keys=np.array(keys), vectors=out)
        return out

    return run


def build(out: Path, epub: Path = EPUB, encode: Encoder | None = None, cache: Path | None = None) -> Path:
    """Write the package to out (replaced whole) and return it."""
    docs, chunks = chunk_book(epub)
    encoder = encode or local_encoder()
    if cache is not None:
        encoder = cached(encoder, cache)
    vectors = np.asarray(encoder([c.embed_text for c in chunks]), dtype=np.float32)
    if vectors.shape != (len(chunks), DIMS) or not np.isfinite(vectors).all():
        raise RuntimeError(f"the encoder gave {vectors.shape} vectors for {len(chunks)} chunks")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        root = Path(tmp) / "pkg"
        (root / "original").mkdir(parents=True)
        original_rel = f"original/{epub.name}"
        shutil.copyfile(epub, root / original_rel)
        write_markdown(root / "book.md", docs)
        (root / "SKILL.md").write_text(SKILL, encoding="utf-8", newline="\n")
        write_database(root / "index.sqlite", chunks, vectors)
        vector_manifest = {
            "schema": "book-agent.vectors", "schema_version": "0.1", "provider": "local", "model": MODEL,
            "dimensions": DIMS, "dtype": "float32", "normalized": True, "metric": "cosine",
            "query_instruction": "", "languages": ["en"], "record_count": len(chunks),
        }
        (root / "vectors.json").write_text(json.dumps(vector_manifest, indent=2) + "\n", encoding="utf-8")
        manifest = {
            "schema": "book-agent.package", "schema_version": "0.1", "book_id": BOOK_ID, "title": TITLE,
            "authors": AUTHORS, "language": "en", "created_at": CREATED_AT, "generator": GENERATOR,
            "files": {
                "original": file_entry(root, original_rel, media_type="application/epub+zip"),
                "markdown": file_entry(root, "book.md"),
                "skill": file_entry(root, "SKILL.md"),
                "database": file_entry(root, "index.sqlite"),
                "vector_manifest": file_entry(root, "vectors.json"),
            },
            "extra_files": [],
        }
        text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        (root / "book-package.json").write_text(text, encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        root.rename(out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epub", type=Path, default=EPUB, help="the Standard Ebooks EPUB")
    parser.add_argument("--out", type=Path, default=OUT, help="package folder (replaced)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="an .npz of vectors by text hash: only new texts are encoded")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    root = build(args.out, args.epub, cache=args.cache)
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    con = sqlite3.connect(f"file:{root / 'index.sqlite'}?mode=ro", uri=True)
    count = con.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    con.close()
    print(f"wrote {root} ({count} records, {size / 1e6:.2f} MB) in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
