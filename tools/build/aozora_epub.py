"""An EPUB 3 from one Aozora Bunko XHTML file: vertical writing, ruby kept, the credit kept.

Aozora Bunko (青空文庫) publishes each work as XHTML 1.1 (Shift_JIS) whose main text is lines
parted by <br />, with ruby as <ruby><rb>..</rb><rp>（</rp><rt>..</rt><rp>）</rp></ruby>, headings
as <h4 class="naka-midashi">, and characters outside JIS X 0208 as images (`gaiji`) whose alt
text names their JIS X 0213 plane, row and cell (`第3水準1-87-71`). This packager changes only
the form:

- each line of the main text becomes a <p> (its text and ruby as they are, the leading
  ideographic space of an indented line kept), each heading an <h2> with the Aozora anchor's id,
  the closing date a right-aligned <p>;
- a gaiji image becomes the character its JIS X 0213 code names (through Python's
  euc_jisx0213 codec), or its alt text (Aozora's own notation) when the codec has none;
- the bibliographical information (底本, 入力, 校正, the 青空文庫 statement) is kept on a
  page of its own, as Aozora Bunko's terms ask, with a line saying how this file was made;
- the book is set vertically (`writing-mode: vertical-rl`, page progression right to left).

The zip is written reproducibly (fixed times, mimetype first and stored):

    python tools/build/aozora_epub.py SOURCE.html OUT.epub [--encoding shift_jis|utf-8]
"""

from __future__ import annotations

import argparse
import html
import re
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

XHTML = "http://www.w3.org/1999/xhtml"
_NS = f"{{{XHTML}}}"
_GAIJI = re.compile(r"第[34]水準(\d)-(\d{1,2})-(\d{1,2})")
_STAMP = (1980, 1, 1, 0, 0, 0)
CSS = """html { writing-mode: vertical-rl; -epub-writing-mode: vertical-rl; -webkit-writing-mode: vertical-rl; }
body { font-family: serif; line-height: 1.8; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 2em; }
p { margin: 0; } p.date { text-align: right; } rt { font-size: 0.5em; }
"""


@dataclass
class Work:
    title: str
    author: str
    blocks: list[tuple[str, str, str]] = field(default_factory=list)  # (tag, id or class, inner xhtml)
    credit: list[str] = field(default_factory=list)  # inner xhtml of each line


def gaiji_char(alt: str) -> str:
    """The character a gaiji image's alt text names by its JIS X 0213 code, else the alt text."""
    found = _GAIJI.search(alt)
    if found:
        plane, row, cell = (int(g) for g in found.groups())
        raw = bytes([0xA0 + row, 0xA0 + cell])
        try:
            char = (raw if plane == 1 else b"\x8f" + raw).decode("euc_jisx0213")
        except UnicodeDecodeError:
            char = ""
        if len(char) == 1:
            return char
    return alt


def _inline(element: ElementTree.Element) -> str:
    """An inline element as XHTML: ruby kept whole, a gaiji image as its character."""
    tag = element.tag.removeprefix(_NS)
    if tag == "img":
        return html.escape(gaiji_char(element.get("alt", "")), quote=False) + html.escape(element.tail or "", quote=False)
    inner = html.escape(element.text or "", quote=False) + "".join(_inline(child) for child in element)
    href = f' href="{html.escape(element.get("href", ""))}"' if tag == "a" and element.get("href") else ""
    return f"<{tag}{href}>{inner}</{tag}>" + html.escape(element.tail or "", quote=False)


def _lines(div: ElementTree.Element) -> list[tuple[str, str, str]]:
    """The main text's blocks: its <br />-parted lines as paragraphs, its headings and date."""
    blocks: list[tuple[str, str, str]] = []
    line = html.escape(div.text or "", quote=False)

    def flush() -> None:
        nonlocal line
        if line.strip():
            blocks.append(("p", "", line.strip("\n")))
        line = ""

    for child in div:
        tag = child.tag.removeprefix(_NS)
        if tag == "br":
            flush()
            line = html.escape(child.tail or "", quote=False)
        elif tag == "div":
            flush()
            heading = next(child.iter(f"{_NS}h4"), None)
            if heading is not None:
                anchor = next(heading.iter(f"{_NS}a"), heading)
                blocks.append(("h2", anchor.get("id", ""), html.escape("".join(heading.itertext()).strip(), quote=False)))
            else:
                blocks.append(("p", "date", html.escape("".join(child.itertext()).strip(), quote=False)))
            line = html.escape(child.tail or "", quote=False)
        else:
            line += _inline(child)
    flush()
    return blocks


def read_work(source: str) -> Work:
    root = ElementTree.fromstring(re.sub(r"^<\?xml[^>]*\?>", "", source.lstrip("\ufeff")))
    title, author = (root.find(f".//{_NS}{tag}") for tag in ("h1", "h2"))
    work = Work("".join(title.itertext()).strip() if title is not None else "",
                "".join(author.itertext()).strip() if author is not None else "")
    for div in root.iter(f"{_NS}div"):
        if div.get("class") == "main_text":
            work.blocks = _lines(div)
        elif div.get("class") == "bibliographical_information":
            credit = ElementTree.Element(div.tag)
            credit.text, credit[:] = div.text, [c for c in div if c.tag != f"{_NS}hr"]
            work.credit = [inner for tag, _, inner in _lines(credit) if tag == "p"]
    return work


def _page(title: str, body: str) -> str:
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n<html xmlns="{XHTML}" '
            f'xmlns:epub="http://www.idpf.org/2007/ops" xml:lang="ja" lang="ja">\n<head>\n<title>{html.escape(title)}</title>\n'
            f'<link rel="stylesheet" type="text/css" href="../style.css"/>\n</head>\n<body>\n{body}\n</body>\n</html>\n')


def _main_page(work: Work) -> str:
    parts = [f"<h1>{html.escape(work.title)}</h1>", f'<p class="author">{html.escape(work.author)}</p>']
    for tag, mark, inner in work.blocks:
        if tag == "h2":
            parts.append(f'<h2 id="{mark}">{inner}</h2>')
        else:
            parts.append(f'<p class="{mark}">{inner}</p>' if mark else f"<p>{inner}</p>")
    return _page(work.title, "\n".join(parts))


def _credit_page(work: Work, source_name: str) -> str:
    lines = "\n".join(f"<p>{line}</p>" for line in work.credit)
    note = (f"<p>この EPUB は、青空文庫の XHTML ファイル（{html.escape(source_name)}）から "
            "tools/build/aozora_epub.py が作ったものです。本文とルビは変えず、外字の画像は JIS X 0213 "
            "の文字に置き換えました。</p>")
    return _page("底本・クレジット", f"<h2>底本・クレジット</h2>\n{lines}\n{note}")


def _nav(work: Work) -> str:
    sections = "".join(f'<li><a href="text/main.xhtml#{mark}">{inner}</a></li>'
                       for tag, mark, inner in work.blocks if tag == "h2")
    inner = f"<ol>{sections}</ol>" if sections else ""
    body = (f'<nav epub:type="toc" id="toc"><h1>目次</h1><ol><li><a href="text/main.xhtml">{html.escape(work.title)}</a>'
            f'{inner}</li><li><a href="text/credit.xhtml">底本・クレジット</a></li></ol></nav>')
    return _page("目次", body).replace('href="../style.css"', 'href="style.css"')


def _opf(work: Work, identifier: str) -> str:
    return f"""<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id" xml:lang="ja">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:identifier id="id">{identifier}</dc:identifier>
<dc:title>{html.escape(work.title)}</dc:title>
<dc:creator>{html.escape(work.author)}</dc:creator>
<dc:language>ja</dc:language>
<dc:publisher>青空文庫</dc:publisher>
<dc:rights>Public domain in Japan (Aozora Bunko); see the credit page</dc:rights>
<meta property="dcterms:modified">2026-12-08T00:00:00Z</meta>
</metadata>
<manifest>
<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
<item id="css" href="style.css" media-type="text/css"/>
<item id="main" href="text/main.xhtml" media-type="application/xhtml+xml"/>
<item id="credit" href="text/credit.xhtml" media-type="application/xhtml+xml"/>
</manifest>
<spine page-progression-direction="rtl">
<itemref idref="main"/>
<itemref idref="credit"/>
</spine>
</package>
"""


CONTAINER = """<?xml version="1.0" encoding="utf-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>
"""


def write_epub(work: Work, out: Path, source_name: str) -> None:
    identifier = f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'aozora:' + source_name)}"
    members = [("mimetype", "application/epub+zip"), ("META-INF/container.xml", CONTAINER),
               ("OEBPS/content.opf", _opf(work, identifier)), ("OEBPS/nav.xhtml", _nav(work)),
               ("OEBPS/style.css", CSS), ("OEBPS/text/main.xhtml", _main_page(work)),
               ("OEBPS/text/credit.xhtml", _credit_page(work, source_name))]
    with zipfile.ZipFile(out, "w") as z:
        for name, text in members:
            info = zipfile.ZipInfo(name, _STAMP)
            info.compress_type = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            z.writestr(info, text.encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--encoding", default="shift_jis", help="the source's encoding (Aozora: shift_jis)")
    args = parser.parse_args(argv)
    source = args.source.read_bytes().decode("cp932" if args.encoding.lower() in ("shift_jis", "sjis") else args.encoding)
    write_epub(read_work(source), args.out, args.source.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
