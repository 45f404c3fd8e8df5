"""Build the example book package (The Art of War) from the committed EPUB.

    python tools/build/build_example_package.py [--epub PATH] [--out DIR]     (`make example-package`)

A development tool, not product code: the product never embeds documents. It chunks the
EPUB along its structure (tools/build/example_chunks.py), writes book.md with exact offsets,
SKILL.md, index.sqlite with all-MiniLM-L6-v2 vectors from the local numpy encoder, and
the two manifests. The output is deterministic: same EPUB, same bytes (vectors up to the
last float bit, which depends on the machine's BLAS). See contracts/example-book.md.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
from tools.build.example_chunks import Doc, chunk_book  # noqa: E402
from tools.build.package_files import (  # noqa: E402
    DIMS,
    MODEL,  # noqa: F401 (tests import it from here)
    Encoder,
    Row,
    checked_vectors,
    local_encoder,
    write_database,
    write_manifest,
    write_vector_manifest,
)

ROOT = Path(__file__).resolve().parents[2]
EPUB = ROOT / "examples" / "the-art-of-war" / "the-art-of-war.epub"
OUT = ROOT / "examples" / "art-of-war-package"
BOOK_ID = "art-of-war"
TITLE = "The Art of War"
AUTHORS = ["Sun Tzu", "Lionel Giles (translator)"]
CREATED_AT = "2020-10-21T02:39:24Z"  # the EPUB's own dc:date, so rebuilds are byte-identical
GENERATOR = {"name": "book-agent tools/build/build_example_package.py", "version": "1"}

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
    vectors = checked_vectors(encoder([c.embed_text for c in chunks]), len(chunks))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        root = Path(tmp) / "pkg"
        (root / "original").mkdir(parents=True)
        original_rel = f"original/{epub.name}"
        shutil.copyfile(epub, root / original_rel)
        write_markdown(root / "book.md", docs)
        (root / "SKILL.md").write_text(SKILL, encoding="utf-8", newline="\n")
        rows = [Row(c.record_id, c.text, c.headings, c.md_start, c.md_end, c.source()) for c in chunks]
        write_database(root / "index.sqlite", BOOK_ID, rows, vectors)
        write_vector_manifest(root, len(chunks), ["en"])
        about = {"book_id": BOOK_ID, "title": TITLE, "authors": AUTHORS, "language": "en",
                 "created_at": CREATED_AT, "generator": GENERATOR}
        write_manifest(root, about, original_rel, with_vectors=True)
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
