"""Hostile originals, refused before a reader parses them (the builder's own limits).

The runtime's readers (adapters/book_agent_adapters/sources/pdf/reader.py, adapters/book_agent_adapters/sources/epub/reader.py) keep their own limits; these checks
sit in front of them, so a hostile book costs a bounded amount of time and memory and ends in
one coded error (build.original_unsafe / _corrupt / _encrypted), never a traceback:

- EPUB: a readable zip; at most MAX_ENTRIES members, no duplicate names, no member over
  MAX_MEMBER_BYTES inflated or compressed over MAX_RATIO, at most MAX_TOTAL_BYTES in all; XML
  with entity declarations (billion laughs, XXE) refused; element nesting over MAX_DEPTH
  refused (measured by a linear scan of the tags, before any parser builds a tree).
- PDF: the `%PDF-` header within the first KiB; PDFium opens it (a password is
  build.original_encrypted).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from book_agent.domain.errors import BookAgentError

from . import errors

MAX_ENTRIES = 20_000
MAX_MEMBER_BYTES = 64 * 1024 * 1024  # the runtime's EpubSource limit
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
MAX_RATIO = 200  # deflate tops out near 1032:1; real XHTML compresses 3-10:1
MAX_DEPTH = 512
_TAG = re.compile(rb"<(/?)([A-Za-z][^\s/>]*)[^>]*?(/?)>")
_VOID = {b"br", b"img", b"hr", b"meta", b"link", b"input", b"col", b"area", b"base", b"wbr",
         b"source", b"track", b"embed", b"param"}
_ENTITY = re.compile(rb"<!ENTITY", re.IGNORECASE)


def check_epub_archive(path: Path) -> list[str]:
    """The zip's member names, once its directory shows no bomb and no duplicate."""
    name = path.name
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise errors.corrupt(name, f"not a readable EPUB (zip) file ({exc})") from exc
    if len(infos) > MAX_ENTRIES:
        raise errors.unsafe(name, f"{len(infos)} zip members (more than {MAX_ENTRIES})")
    seen: set[str] = set()
    total = 0
    for info in infos:
        if info.filename in seen:
            raise errors.unsafe(name, f"the zip member {info.filename!r} appears twice", member=info.filename)
        seen.add(info.filename)
        total += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > MAX_MEMBER_BYTES or (info.file_size > 1 << 20 and ratio > MAX_RATIO):
            raise errors.unsafe(name, f"{info.filename} inflates to {info.file_size} bytes from "
                                      f"{info.compress_size} (a zip bomb?)", member=info.filename)
    if total > MAX_TOTAL_BYTES:
        raise errors.unsafe(name, f"the members inflate to {total} bytes in all (over {MAX_TOTAL_BYTES})")
    return [info.filename for info in infos]


def check_markup(book: str, member: str, data: bytes) -> None:
    """Entity declarations and deep nesting, found by a linear scan of the bytes."""
    flat = data.replace(b"\x00", b"") if b"\x00" in data[:4096] else data  # UTF-16 reads as bytes too
    if _ENTITY.search(flat):
        raise errors.unsafe(book, f"{member} declares XML entities (an entity expansion or external "
                                  "entity attack?)", member=member)
    depth = deepest = 0
    for match in _TAG.finditer(flat):
        closing, tag, selfclosing = match.group(1), match.group(2).lower(), match.group(3)
        if closing:
            depth = max(depth - 1, 0)
        elif not selfclosing and tag not in _VOID and not tag.startswith((b"!", b"?")):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                raise errors.unsafe(book, f"{member} nests elements more than {MAX_DEPTH} deep",
                                    member=member)


_DECLARED = re.compile(rb"""<\?xml[^>]*encoding=["']([A-Za-z0-9._-]{1,40})["']""")
_META_CHARSET = re.compile(rb"""<meta[^>]*charset=["']?([A-Za-z0-9._-]{1,40})""", re.IGNORECASE)
MAX_BAD_SHARE = 0.005  # undecodable sequences per character tolerated (a stray byte, not a wrong encoding)


def check_encoding(book: str, member: str, data: bytes) -> None:
    """A document in another encoding than UTF-8, or whose bytes do not decode as UTF-8, would
    become records full of U+FFFD: refused, naming the document."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return  # UTF-16 with a byte order mark: the reader decodes it
    found = _DECLARED.search(data[:1024]) or _META_CHARSET.search(data[:4096])
    encoding = found.group(1).decode("ascii").lower() if found else "utf-8"
    if encoding.replace("-", "").replace("_", "") not in ("utf8", "usascii", "ascii"):
        # the runtime's reader (and so `locate`) reads chapters as UTF-8: records from another
        # encoding would not verify
        raise errors.error(errors.ORIGINAL_CORRUPT, f"{book}: {member} is in {encoding}; book-agent reads EPUB "
                           "chapters in UTF-8", "convert the book's chapters to UTF-8 (e.g. Calibre's EPUB to "
                           "EPUB conversion), then build again", book=book, member=member, encoding=encoding)
    try:
        text = data.decode(encoding, errors="replace")
    except LookupError:
        raise errors.corrupt(book, f"{member} declares the unknown encoding {encoding!r}", member=member) from None
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    if bad > max(3, MAX_BAD_SHARE * len(text)):
        raise errors.error(errors.ORIGINAL_CORRUPT, f"{book}: {member} is not valid {encoding} ({bad} undecodable "
                           "sequences): its text would be lost", "re-save the chapter in UTF-8 (or declare its real "
                           "encoding in its <?xml encoding=...?>), then build again", book=book, member=member,
                           encoding=encoding, undecodable=bad)


def check_pdf_header(path: Path) -> None:
    with path.open("rb") as handle:
        head = handle.read(1024)
    if b"%PDF-" not in head:
        raise errors.corrupt(path.name, "no %PDF- header: not a PDF file")


def opened_pdf_error(path: Path, exc: BaseException) -> BookAgentError:
    """PDFium's refusal, coded: a password is `encrypted`, anything else `corrupt`."""
    text = str(exc)
    cause = exc.__cause__ or exc
    if "password" in text.lower() or "password" in str(cause).lower():
        return errors.error(errors.ORIGINAL_ENCRYPTED, f"{path.name} is encrypted (it needs a password)",
                            "remove the password (e.g. `qpdf --decrypt --password=PW in.pdf out.pdf`) "
                            "and build from the decrypted copy", book=path.name)
    return errors.corrupt(path.name, text)
