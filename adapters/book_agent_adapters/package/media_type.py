"""The original's media type: declared in the manifest, confirmed by the file's own bytes.

A PDF starts with `%PDF-`; an EPUB is a zip whose `mimetype` member reads
`application/epub+zip`. Only that one tiny member is read (its size is checked before
reading), so a hostile zip cannot make inspection expensive.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any

from book_agent.domain.diagnostics import Diagnostic

PDF = "application/pdf"
EPUB = "application/epub+zip"
MEDIA_TYPES = (PDF, EPUB)
_MAX_MIMETYPE_BYTES = 256


def check_media_type(declared: Any, path: Path | None, rel: str) -> list[Diagnostic]:
    """An error when the declared type is not PDF/EPUB or the content says otherwise."""
    if declared not in MEDIA_TYPES:
        return [_bad(f"files.original.media_type is {declared!r}; it must be {PDF} or {EPUB}",
                     rel, declared=declared)]
    if path is None:
        return []  # the missing file is reported by the file checks
    actual = sniff(path)
    if actual != declared:
        found = actual or "neither a PDF nor an EPUB"
        return [_bad(f"{rel} is declared {declared} but its content is {found}",
                     rel, declared=declared, actual=actual)]
    return []


def sniff(path: Path) -> str | None:
    """PDF or EPUB from the magic bytes, or None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(5)
    except OSError:
        return None
    if head == b"%PDF-":
        return PDF
    if head[:4] == b"PK\x03\x04" and _epub_mimetype(path):
        return EPUB
    return None


def _epub_mimetype(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("mimetype")
            if info.file_size > _MAX_MIMETYPE_BYTES:
                return False
            return archive.read(info).strip() == EPUB.encode()
    except (KeyError, OSError, zipfile.BadZipFile, ValueError, NotImplementedError, EOFError, zlib.error):
        return False


def _bad(message: str, rel: str, **details: Any) -> Diagnostic:
    return Diagnostic("package.media_type_invalid", message, "error", {"path": rel, **details})
