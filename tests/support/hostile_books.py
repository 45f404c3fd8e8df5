"""Generated books for the builder: a small valid EPUB and PDF, and hostile variants, each with
the error codes the builder may refuse it with (issue 42). Everything is written here, by the
standard library (zip) or by hand (PDF objects), so the hostile parts are exactly as named."""

from __future__ import annotations

import random
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

CONTAINER = (b'<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             b'<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             b'</rootfiles></container>')
PARAGRAPH = ("The general who wins a battle makes many calculations in his temple before the battle is "
             "fought. The general who loses makes but few calculations beforehand. ")


def opf(items: Sequence[tuple[str, str]], title: str = "A Test Book", language: str = "en", head: str = "") -> bytes:
    manifest = "".join(f'<item id="{i}" href="{h}" media-type="application/xhtml+xml"/>' for i, h in items)
    spine = "".join(f'<itemref idref="{i}"/>' for i, _ in items)
    return (f'<?xml version="1.0" encoding="utf-8"?>{head}<package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title>'
            f'<dc:creator>Ann Author</dc:creator><dc:language>{language}</dc:language></metadata>'
            f'<manifest>{manifest}</manifest><spine>{spine}</spine></package>').encode()


def chapter(body: str, title: str = "Chapter One") -> bytes:
    return (f'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}'
            f'</title></head><body><h1 id="c">{title}</h1>{body}</body></html>').encode()


def write_epub(path: Path, members: Sequence[tuple[str, bytes]], *, container: bytes | None = CONTAINER,
               method: int = zipfile.ZIP_DEFLATED) -> Path:
    import warnings

    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", method) as archive:
        warnings.simplefilter("ignore", UserWarning)  # a duplicate name is sometimes the point
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        if container is not None:
            archive.writestr("META-INF/container.xml", container)
        for name, data in members:
            archive.writestr(name, data)
    return path


def good_epub(path: Path, chapters: int = 2, language: str = "en", text: str = PARAGRAPH) -> Path:
    items = [(f"c{k}", f"ch{k}.xhtml") for k in range(chapters)]
    body = "".join(f"<p>{text * 3}</p>" for _ in range(4))
    return write_epub(path, [("OEBPS/content.opf", opf(items, language=language)),
                             *[(f"OEBPS/{h}", chapter(body, f"Chapter {k + 1}")) for k, (_, h) in enumerate(items)]])


def write_pdf(path: Path, objects: Sequence[bytes], root: int = 1) -> Path:
    """A PDF of the given objects (numbered from 1), with a correct xref table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    path.write_bytes(bytes(out))
    return path


def text_page_objects(lines: Sequence[str], first: int, parent: int, font: int) -> list[bytes]:
    """A page object and its content stream (objects `first`, `first + 1`)."""
    ops = b"BT /F1 11 Tf 72 720 Td 14 TL " + b" ".join(b"(%s) '" % line.encode("latin-1") for line in lines) + b" ET"
    return [b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 %d 0 R >> >> >>"
            % (parent, first + 1, font),
            b"<< /Length %d >>\nstream\n" % len(ops) + ops + b"\nendstream"]


def pdf_with_outline(path: Path, outline: Callable[[int], list[bytes]]) -> Path:
    """One text page and an outline whose items `outline(first_object_number)` writes."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    page = text_page_objects([PARAGRAPH[:80]] * 20, 3, 2, 5)
    items = outline(7)
    return write_pdf(path, [b"<< /Type /Catalog /Pages 2 0 R /Outlines 6 0 R >>",
                            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", *page, font,
                            b"<< /Type /Outlines /First 7 0 R /Last 7 0 R /Count %d >>" % len(items), *items])


def deep_outline(depth: int) -> Callable[[int], list[bytes]]:
    def items(first: int) -> list[bytes]:
        out = []
        for k in range(depth):
            child = b" /First %d 0 R /Last %d 0 R /Count 1" % (first + k + 1, first + k + 1) if k + 1 < depth else b""
            out.append(b"<< /Title (Level %d) /Parent %d 0 R /Dest [3 0 R /Fit]%s >>" % (k, first + k - 1 if k else 6, child))
        return out
    return items


def cyclic_outline(first: int) -> list[bytes]:
    return [b"<< /Title (A) /Parent 6 0 R /Next %d 0 R /Dest [3 0 R /Fit] >>" % (first + 1),
            b"<< /Title (B) /Parent 6 0 R /Next %d 0 R /Prev %d 0 R /Dest [3 0 R /Fit] >>" % (first, first)]


def good_pdf(path: Path, pages: int = 3) -> Path:
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path))
    pdf.setTitle("A Generated Book")
    pdf.setAuthor("Ann Author")
    for n in range(pages):
        y = 760
        for k in range(40):
            pdf.drawString(72, y, f"Line {k} of page {n + 1}: the general who wins makes many calculations.")
            y -= 16
        pdf.showPage()
    pdf.save()
    return path


@dataclass(frozen=True)
class HostileBook:
    name: str
    codes: tuple[str, ...]  # the builder refuses it with one of these
    write: Callable[[Path], Path]


def _zip_bomb(path: Path, size: int) -> Path:
    """A chapter that inflates to `size` bytes of markup, written in 1 MiB pieces."""
    items = [("c0", "ch0.xhtml")]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("OEBPS/content.opf", opf(items))
        with archive.open("OEBPS/ch0.xhtml", "w", force_zip64=True) as member:
            block = b"<p>" + b"a" * (1 << 20) + b"</p>"
            for _ in range(size // len(block)):
                member.write(block)
    return path


def _lying_size(path: Path) -> Path:
    """A small chapter whose zip headers claim 2 GiB."""
    good_epub(path, chapters=1)
    data = bytearray(path.read_bytes())
    name = b"OEBPS/ch0.xhtml"
    for signature, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = 0
        while (at := data.find(signature, at)) >= 0:
            name_at = at + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at:name_at + len(name)] == name:
                data[at + size_at:at + size_at + 4] = (0x7FFF_FFFF).to_bytes(4, "little")
            at += 4
    path.write_bytes(bytes(data))
    return path


def _epub_with(chapter_bytes: bytes, head: str = "", href: str = "ch0.xhtml",
               method: int = zipfile.ZIP_DEFLATED) -> Callable[[Path], Path]:
    def write(path: Path) -> Path:
        return write_epub(path, [("OEBPS/content.opf", opf([("c0", href)], head=head)), ("OEBPS/ch0.xhtml", chapter_bytes)],
                          method=method)
    return write


LAUGHS = ('<!DOCTYPE html [<!ENTITY a "hahahahahahahahahaha">' + "".join(
    f'<!ENTITY {chr(98 + k)} "{("&" + chr(97 + k) + ";") * 10}">' for k in range(9)) + "]>")
XXE = '<!DOCTYPE package [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
E = "build.original_unsafe"
C = "build.original_corrupt"


def _garbage_pdf(path: Path) -> Path:
    random.seed(42)
    return path.write_bytes(b"%PDF-1.7\n" + random.randbytes(200_000)) and path


def _truncated(path: Path) -> Path:
    good_pdf(path, pages=3)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _encrypted(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), encrypt="secret")
    pdf.drawString(72, 720, "A secret page.")
    pdf.save()
    return path


def _page_cycle(path: Path) -> Path:
    return write_pdf(path, [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                            b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>"])


def _zero_pages(path: Path) -> Path:
    return write_pdf(path, [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"])


def _scan(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path))
    for _ in range(4):
        pdf.rect(72, 72, 400, 600, fill=1)  # a page of picture, no text: what a scan looks like
        pdf.showPage()
    pdf.save()
    return path


HOSTILE: list[HostileBook] = [
    HostileBook("random-bytes-after-header.pdf", (C,), _garbage_pdf),
    HostileBook("truncated.pdf", (C, "build.no_text"), _truncated),
    HostileBook("encrypted.pdf", ("build.original_encrypted",), _encrypted),
    HostileBook("page-tree-cycle.pdf", (C, "build.no_text"), _page_cycle),
    HostileBook("zero-pages.pdf", ("build.no_text", C), _zero_pages),
    HostileBook("scanned.pdf", ("build.no_text",), _scan),
    HostileBook("not-a-pdf.pdf", (C,), lambda p: p.write_bytes(b"hello, this is text") and p),
    HostileBook("bomb-300mb.epub", (E,), lambda p: _zip_bomb(p, 300 << 20)),
    HostileBook("lying-2gib-size.epub", (E, C), _lying_size),
    HostileBook("spine-escape.epub", (E, C), _epub_with(chapter("<p>x</p>"), href="../../etc/passwd")),
    HostileBook("missing-opf.epub", (C,), lambda p: write_epub(p, [("OEBPS/ch0.xhtml", chapter("<p>x</p>"))])),
    HostileBook("no-container-no-opf.epub", (C,), lambda p: write_epub(p, [("x.txt", b"x")], container=None)),
    HostileBook("nested-divs.epub", (E,), _epub_with(chapter("<div>" * 100_000 + "deep" + "</div>" * 100_000))),
    # stored, not deflated: no compression ratio gives it away, the nesting scan must
    HostileBook("nested-divs-stored.epub", (E,), _epub_with(chapter("<div>" * 100_000 + "deep" + "</div>" * 100_000),
                                                            method=zipfile.ZIP_STORED)),
    HostileBook("nested-spans-60k.epub", (E,), _epub_with(chapter("<p>" + "<span>" * 60_000 + "x" + "</span>" * 60_000
                                                                  + "</p>"), method=zipfile.ZIP_STORED)),
    HostileBook("xxe.epub", (E,), _epub_with(chapter("<p>x</p>"), head=XXE)),
    HostileBook("billion-laughs.epub", (E,), _epub_with(("<?xml version='1.0'?>" + LAUGHS +
                                                         "<html><body><p>&j;</p></body></html>").encode())),
    HostileBook("duplicate-entries.epub", (E,), lambda p: write_epub(p, [
        ("OEBPS/content.opf", opf([("c0", "ch0.xhtml")])), ("OEBPS/ch0.xhtml", chapter("<p>one</p>")),
        ("OEBPS/ch0.xhtml", chapter("<p>two</p>"))])),
    HostileBook("not-a-zip.epub", (C,), lambda p: p.write_bytes(b"PK\x03\x04 not really a zip") and p),
    HostileBook("deep-outline.pdf", (), lambda p: pdf_with_outline(p, deep_outline(20_000))),
    HostileBook("cyclic-outline.pdf", (), lambda p: pdf_with_outline(p, cyclic_outline)),
    HostileBook("latin1-chapter.epub", (C,), _epub_with(
        ("<?xml version='1.0' encoding='utf-8'?><html><body>" + "<p>" + "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e. " * 200 +
         "</p></body></html>").encode("latin-1"))),
    HostileBook("gbk-chapter-declared.epub", (C,), _epub_with(
        ("<?xml version='1.0' encoding='gbk'?><html><body>" + "<p>" + "孙子曰：兵者，国之大事，死生之地，存亡之道，不可不察也。" * 30 +
         "</p></body></html>").encode("gbk"))),
]
# codes () = the book is odd but readable: it must build (exit 0), in bounded time and memory
