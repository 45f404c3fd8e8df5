"""EPUB originals the sources tests write themselves: chapters given as XHTML bodies (ruby,
deep nesting, anything), an optional NCX, zip names with or without the UTF-8 flag; and a
package around them (tests/support/package_builder.py) whose records are given texts."""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.support.package_builder import RecordSpec, build_package, rehash

XHTML = "http://www.w3.org/1999/xhtml"


def chapter_document(body: str, title: str = "t", lang: str = "ja") -> bytes:
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="{XHTML}" xml:lang="{lang}"><head>'
            f"<title>{title}</title></head>\n<body>\n{body}\n</body>\n</html>\n").encode()


def write_epub_original(path: Path, bodies: Sequence[str], *, ncx: bytes | None = None,
                        hrefs: Sequence[str] | None = None, utf8_flag: bool = True,
                        encoding: str = "utf-8", nav_titles: Sequence[str] | None = None, nav: bool = True,
                        nav_links: Sequence[tuple[str, str]] | None = None) -> Path:
    """An EPUB 3 (nav document, NCX when given) whose chapters are the given bodies. With
    `utf8_flag` False, names are written as Info-ZIP does under LC_ALL=C: raw bytes in
    `encoding`, general-purpose flag bit 11 clear."""
    hrefs = list(hrefs or [f"text/chapter{i + 1:02d}.xhtml" for i in range(len(bodies))])
    items = "".join(f'<item id="c{i}" href="{h}" media-type="application/xhtml+xml"/>' for i, h in enumerate(hrefs))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(hrefs)))
    titles = list(nav_titles or [f"Chapter {i + 1}" for i in range(len(hrefs))])
    links = list(nav_links or zip(hrefs, titles, strict=True))  # (href, title XHTML)
    nav_list = "".join(f'<li><a href="{h}">{t}</a></li>' for h, t in links)
    members = {
        "META-INF/container.xml": b'<?xml version="1.0"?><container version="1.0" '
        b'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
        b'full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        "OEBPS/nav.xhtml": (f'<?xml version="1.0" encoding="utf-8"?><html xmlns="{XHTML}" '
                            'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head><body>'
                            f'<nav epub:type="toc"><ol>{nav_list}</ol></nav></body></html>').encode(),
        "OEBPS/content.opf": ('<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" '
                              'version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                              '<dc:identifier id="id">test-book</dc:identifier><dc:title>t</dc:title>'
                              '<dc:language>ja</dc:language></metadata><manifest>'
                              '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
                              + ('<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>' if ncx else "")
                              + f"{items}</manifest><spine>{spine}</spine></package>").encode(),
    }
    if ncx is not None:
        members["OEBPS/toc.ncx"] = ncx
    if not nav:  # an EPUB 2 book: the NCX alone
        del members["OEBPS/nav.xhtml"]
        members["OEBPS/content.opf"] = members["OEBPS/content.opf"].replace(
            b'<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>', b"")
    for href, body in zip(hrefs, bodies, strict=True):
        members[f"OEBPS/{href}"] = chapter_document(body)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED)
    if not utf8_flag:
        strip_utf8_flag(path, encoding)
    return path


def strip_utf8_flag(path: Path, encoding: str, which: Callable[[int, str], bool] = lambda i, name: True) -> None:
    """Rewrite the names of the members `which(position, name)` picks as raw `encoding` bytes
    with flag bit 11 clear (local and central headers); the others stay flagged UTF-8."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    out = bytearray()
    central = bytearray()
    for position, info in enumerate(infos):
        strip = which(position, info.filename)
        raw = info.filename.encode(encoding if strip else "utf-8")
        flags = info.flag_bits & ~0x800 if strip else info.flag_bits | (0x800 if not info.filename.isascii() else 0)
        start = info.header_offset
        name_len = int.from_bytes(data[start + 26:start + 28], "little")
        extra_len = int.from_bytes(data[start + 28:start + 30], "little")
        body = data[start + 30 + name_len + extra_len:start + 30 + name_len + extra_len + info.compress_size]
        offset = len(out)
        out += data[start:start + 6] + flags.to_bytes(2, "little") + data[start + 8:start + 26]
        out += len(raw).to_bytes(2, "little") + (0).to_bytes(2, "little") + raw + body
        central += (b"PK\x01\x02" + info.create_version.to_bytes(1, "little") + info.create_system.to_bytes(1, "little")
                    + info.extract_version.to_bytes(2, "little") + flags.to_bytes(2, "little")
                    + info.compress_type.to_bytes(2, "little") + data[start + 10:start + 14]
                    + info.CRC.to_bytes(4, "little") + info.compress_size.to_bytes(4, "little")
                    + info.file_size.to_bytes(4, "little") + len(raw).to_bytes(2, "little") + b"\0\0" + b"\0\0"
                    + b"\0\0" + b"\0\0" + b"\0\0\0\0" + offset.to_bytes(4, "little") + raw)
    end = (b"PK\x05\x06" + b"\0\0\0\0" + len(infos).to_bytes(2, "little") * 2 + len(central).to_bytes(4, "little")
           + len(out).to_bytes(4, "little") + b"\0\0")
    path.write_bytes(bytes(out + central + end))


def epub_package(dest: Path, records: Sequence[RecordSpec], bodies: Sequence[str], **epub: object) -> Path:
    """A valid package whose original is `write_epub_original(bodies, **epub)`; record i's claim
    names its chapter (`RecordSpec.page`) and fragment `p-<record_id>`."""
    root = build_package(dest, kind="epub", records=list(records), vectors="none", language="ja")
    write_epub_original(root / "original" / "book.epub", bodies, **epub)  # type: ignore[arg-type]
    rehash(root)
    return root


def nested_ncx(depth: int, href: str = "text/chapter01.xhtml") -> bytes:
    """An NCX whose navPoints nest `depth` deep, one per level."""
    points = "".join(f'<navPoint id="n{i}"><navLabel><text>Level {i + 1}</text></navLabel><content src="{href}"/>'
                     for i in range(depth))
    return ('<?xml version="1.0" encoding="utf-8"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">'
            f'<head/><docTitle><text>t</text></docTitle><navMap>{points}{"</navPoint>" * depth}</navMap></ncx>').encode()


def nested_divs(depth: int, inner: str) -> str:
    return "<div>" * depth + inner + "</div>" * depth
