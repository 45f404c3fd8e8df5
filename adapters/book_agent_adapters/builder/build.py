"""The build, all or nothing: checks, reading, model, encoding, files, inspection, one rename.

The package is written into a fresh folder beside OUT_DIR (`.OUT_DIR.building-XXXX`), checked
as `book-agent inspect` would, and only then renamed into place (an OUT_DIR already there is
moved aside first and removed after); any failure, or Ctrl-C, removes the folder: nothing
half-written is ever left at OUT_DIR.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import chunks, embed, epub_chunks, errors, files, metadata
from .progress import Progress

GENERATOR_NAME = "book-agent-build"
BOOK_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
UNREADABLE_SHARE = 0.5  # more than this share of the pages without readable text: refused
MAX_NAMED_PAGES = 20


@dataclass
class Options:
    book_id: str | None = None
    vectors: bool = True
    model: str = "auto"  # auto | minilm | e5
    title: str | None = None
    authors: list[str] = field(default_factory=list)
    language: str | None = None
    data_dir: Path | None = None


def slug(text: str) -> str:
    cut = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64].strip("-")
    return cut or "book"


def _checked_input(book: Path, options: Options) -> tuple[str, str]:
    kind = book.suffix.lower()
    if kind not in files.MEDIA_TYPES:
        raise errors.error(errors.INPUT_INVALID, f"{book.name} is neither a .pdf nor an .epub",
                           "pass a PDF or an EPUB file", book=str(book))
    if not book.is_file():
        raise errors.error(errors.INPUT_INVALID, f"{book} is not a file", "pass the path of a PDF or EPUB file",
                           book=str(book))
    book_id = options.book_id or slug(book.stem)
    if not BOOK_ID.fullmatch(book_id):
        raise errors.error(errors.INPUT_INVALID, f"{book_id!r} is not a book id",
                           "1-64 of a-z 0-9 . _ -, the first a-z or 0-9 (--book-id)", book_id=book_id)
    return kind, book_id


def read(book: Path, kind: str, progress: Progress) -> tuple[chunks.Extraction, metadata.Declared]:
    phase = progress.phase(f"reading {book.name}")
    if kind == ".pdf":
        found = chunks.pdf_extraction(book, phase.tick)
        declared = metadata.pdf_metadata(book, _pdf_info(book))
    else:
        found, opf = epub_chunks.epub_extraction(book, phase.tick)
        declared = metadata.opf_metadata(opf)
    phase.done(f"{len(found.pieces)} records from {found.units} {'pages' if kind == '.pdf' else 'documents'}")
    _check_readable(book, kind, found)
    return found, declared


def _pdf_info(book: Path) -> dict[str, Any]:
    doc = chunks.open_pdf(book)
    try:
        return dict(doc.get_metadata_dict())
    finally:
        doc.close()


def _check_readable(book: Path, kind: str, found: chunks.Extraction) -> None:
    unit = "pages" if kind == ".pdf" else "spine documents"
    if not found.pieces:
        raise errors.error(errors.NO_TEXT, f"{book.name} has no extractable text ({found.units} {unit}: "
                           f"{len(found.empty)} without text, {len(found.garbage)} garbled)",
                           "a scanned book needs OCR first (e.g. `ocrmypdf in.pdf out.pdf`), then build again",
                           book=book.name, empty=found.empty[:MAX_NAMED_PAGES], garbled=found.garbage[:MAX_NAMED_PAGES])
    bad = len(found.empty) + len(found.garbage) if kind == ".pdf" else len(found.garbage)
    if found.units and bad > UNREADABLE_SHARE * found.units:
        named = sorted(found.empty + found.garbage)[:MAX_NAMED_PAGES] if kind == ".pdf" else found.garbage[:MAX_NAMED_PAGES]
        raise errors.error(errors.UNREADABLE, f"{book.name}: {bad} of {found.units} {unit} have no readable text "
                           f"({len(found.empty)} without text, {len(found.garbage)} garbled), e.g. {unit} "
                           f"{', '.join(map(str, named))}",
                           "a scan needs OCR first; garbled text comes from fonts without a Unicode map: "
                           "re-export the PDF with embedded Unicode fonts (or OCR it)",
                           book=book.name, empty=found.empty[:MAX_NAMED_PAGES], garbled=found.garbage[:MAX_NAMED_PAGES],
                           units=found.units)


def build(book: Path, out: Path, options: Options, progress: Progress | None = None) -> dict[str, Any]:
    """Write the package for `book` at `out` (replacing it whole); the build's report."""
    progress = progress or Progress()
    started = time.perf_counter()
    kind, book_id = _checked_input(book, options)
    _writable_parent(out)
    found, declared = read(book, kind, progress)
    language = metadata.normal_language(options.language or "") or declared.language \
        or metadata.detect_language(found.texts) or "en"
    model, note = embed.choose(options.model if options.vectors else "none", language, options.data_dir)
    if note:
        progress.say(note)
    rows = [files.Row(p.record_id, p.text, p.headings, None, None, p.source) for p in found.pieces]
    matrix = None
    if model is not None:
        phase = progress.phase(f"encoding {len(rows)} records with {model.manifest['model']}")
        matrix = embed.encode_all(model, [embed.passage_text(r.headings, r.text) for r in rows], phase.tick)
        phase.done(f"{len(rows)} vectors, {len(rows) / max(phase.elapsed(), 1e-9):.1f} records/s")
    about = {"book_id": book_id, "title": options.title or declared.title or book.stem,
             "authors": list(options.authors) or declared.authors, "language": language,
             "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "generator": {"name": GENERATOR_NAME, "version": _version()}}
    _write(book, out, kind, about, rows, matrix, model)
    return {"package": str(out), "book_id": book_id, "title": about["title"], "authors": about["authors"],
            "language": language, "metadata_from": {**declared.found, **({"language": "text"} if language !=
                                                    declared.language and not options.language else {})},
            "records": len(rows), "vectors": model.manifest["model"] if model and matrix is not None else None,
            "model_from": model.location if model else None,
            "note": note or None, "extraction": _extraction_report(found, kind),
            "seconds": round(time.perf_counter() - started, 2)}


def _version() -> str:
    from book_agent import __version__

    return __version__


def _extraction_report(found: chunks.Extraction, kind: str) -> dict[str, Any]:
    return {"units": found.units, "unit": "page" if kind == ".pdf" else "spine document",
            "without_text": len(found.empty), "garbled": len(found.garbage),
            "without_text_first": found.empty[:MAX_NAMED_PAGES], "garbled_first": found.garbage[:MAX_NAMED_PAGES],
            "headings_from": found.headings_from, "page_labels": found.labels,
            "running_heads_removed_on": found.furniture_pages}


def _writable_parent(out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise errors.error(errors.OUTPUT_FAILED, f"cannot create {out.parent}: {exc}",
                           "choose an OUT_DIR in a writable folder", out=str(out)) from exc
    if out.exists() and not out.is_dir():
        raise errors.error(errors.OUTPUT_FAILED, f"{out} exists and is not a folder",
                           "choose another OUT_DIR (it is replaced whole when it is a folder)", out=str(out))


def _write(book: Path, out: Path, kind: str, about: dict[str, Any], rows: list[files.Row], matrix: Any,
           model: embed.Model | None) -> None:
    """Every file into a folder beside `out`, inspected, then renamed into place."""
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    except OSError as exc:
        raise errors.error(errors.OUTPUT_FAILED, f"cannot write beside {out}: {exc}",
                           "choose an OUT_DIR in a writable folder", out=str(out)) from exc
    try:
        root = staging / "package"
        (root / "original").mkdir(parents=True)
        original_rel = f"original/book{kind}"
        shutil.copyfile(book, root / original_rel)
        files.write_markdown(root / "book.md", about["title"], rows)
        (root / "SKILL.md").write_text(files.skill_text(about["book_id"], about, rows, kind.lstrip("."),
                                                        matrix is not None), encoding="utf-8")
        with_vectors = model is not None and matrix is not None
        files.write_database(root / "index.sqlite", about["book_id"], rows, matrix if with_vectors else None,
                             model.manifest["model"] if model else "", embed.DIMS)
        if with_vectors and model is not None:
            files.write_vector_manifest(root, embed.vector_manifest(model, len(rows)))
        files.write_manifest(root, about, original_rel, with_vectors)
        inspect(root)
        _swap_in(root, out, staging)
    except OSError as exc:
        raise errors.error(errors.OUTPUT_FAILED, f"writing the package failed: {exc}",
                           "check the free space and permissions of OUT_DIR's folder", out=str(out)) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap_in(root: Path, out: Path, staging: Path) -> None:
    """One rename puts the package in place; an older OUT_DIR is moved aside first."""
    if out.exists():
        out.rename(staging / "replaced")
    root.rename(out)


def inspect(root: Path) -> None:
    """The package as `book-agent inspect` sees it: an error stops the build, nothing moved."""
    from book_agent_adapters.package.inspector import PackageInspector

    report = PackageInspector().diagnose(root, verify_hashes=True)  # diagnostics, not a raise
    problems = [d for d in report.diagnostics if d.severity == "error"]
    if problems:
        raise errors.error(errors.PACKAGE_INVALID, "the package does not validate: "
                           + "; ".join(d.message for d in problems[:5]),
                           "report this as a bug of book-agent-build, with the book if you can",
                           diagnostics=[d.message for d in problems[:20]])
