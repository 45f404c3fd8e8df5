"""Title, authors and language as the original declares them, and a language read from text.

PDF: the info dictionary (PDFium), then the XMP packet (dc:title, dc:creator, dc:language),
found by a bounded scan of the file's bytes and read with regular expressions (no XML parser,
so no entity can expand). EPUB: the OPF's Dublin Core (parsed only after guards.check_markup
refused entity declarations). A language the original lacks is read from the records' text.
"""

from __future__ import annotations

import html
import mmap
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_XMP_START, _XMP_END = b"<x:xmpmeta", b"</x:xmpmeta>"
MAX_XMP_BYTES = 1 << 20
_LI = re.compile(rb"<rdf:li[^>]*>(.*?)</rdf:li>", re.S)
_LANG = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_WORD = re.compile(r"[a-zà-ÿ]+")
# the commonest short words of each Latin-script language the readers of this project meet
_STOPWORDS = {
    "en": {"the", "and", "of", "to", "is", "in", "that", "it", "was", "with"},
    "fr": {"le", "la", "les", "et", "des", "est", "une", "que", "dans", "du"},
    "de": {"der", "die", "und", "das", "ist", "nicht", "ein", "zu", "den", "mit"},
    "es": {"el", "la", "de", "que", "y", "los", "en", "las", "por", "una"},
    "pt": {"o", "a", "de", "que", "e", "os", "do", "da", "em", "não"},
    "it": {"il", "di", "che", "la", "e", "per", "un", "non", "sono", "della"},
}


@dataclass
class Declared:
    title: str = ""
    authors: list[str] = field(default_factory=list)
    language: str = ""
    found: dict[str, str] = field(default_factory=dict)  # field -> where it came from


def pdf_metadata(path: Path, info: dict[str, Any]) -> Declared:
    """The info dictionary first, the XMP packet where the dictionary is silent."""
    out = Declared()
    title, author = _clean(info.get("Title")), _clean(info.get("Author"))
    if title:
        out.title, out.found["title"] = title, "pdf info"
    if author:
        out.authors, out.found["authors"] = _split_authors(author), "pdf info"
    xmp = read_xmp(path)
    if xmp:
        if not out.title and (titles := _xmp_items(xmp, b"dc:title")):
            out.title, out.found["title"] = titles[0], "xmp"
        if not out.authors and (creators := _xmp_items(xmp, b"dc:creator")):
            out.authors, out.found["authors"] = creators, "xmp"
        if (langs := _xmp_items(xmp, b"dc:language")) and (lang := normal_language(langs[0])):
            out.language, out.found["language"] = lang, "xmp"
    return out


def read_xmp(path: Path) -> bytes:
    """The first XMP packet of the file (searched without reading it into memory), or b""."""
    try:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            start = data.find(_XMP_START)
            if start < 0:
                return b""
            end = data.find(_XMP_END, start, start + MAX_XMP_BYTES)
            return bytes(data[start:end]) if end > 0 else b""
    except (OSError, ValueError):
        return b""


def _xmp_items(xmp: bytes, tag: bytes) -> list[str]:
    block = re.search(rb"<" + tag + rb"\b[^>]*>(.*?)</" + tag + rb">", xmp, re.S)
    if not block:
        return []
    items = _LI.findall(block.group(1)) or [block.group(1)]
    texts = [_clean(html.unescape(re.sub(rb"<[^>]*>", b"", i).decode("utf-8", "replace"))) for i in items]
    return [t for t in texts if t]


def opf_metadata(opf: bytes) -> Declared:
    """dc:title, dc:creator (in order), dc:language of an OPF already checked for entities."""
    from xml.etree import ElementTree

    out = Declared()
    try:
        root = ElementTree.fromstring(opf)
    except ElementTree.ParseError:
        return out
    found: dict[str, list[str]] = {}
    for element in root.iter():
        tag = str(element.tag).rsplit("}", 1)[-1]
        text = _clean(element.text)
        if tag in ("title", "creator", "language") and text:
            found.setdefault(tag, []).append(text)
    if found.get("title"):
        out.title, out.found["title"] = found["title"][0], "opf"
    if found.get("creator"):
        out.authors, out.found["authors"] = found["creator"], "opf"
    if found.get("language") and (lang := normal_language(found["language"][0])):
        out.language, out.found["language"] = lang, "opf"
    return out


def normal_language(code: str) -> str:
    """A BCP-47 primary tag, lower case ("zh-CN" -> "zh"); "" for what is not one."""
    code = code.strip()
    if not _LANG.match(code) or code.lower() in ("und", "x-unknown"):
        return ""
    return code.replace("_", "-").split("-")[0].lower()


def detect_language(texts: Iterable[str], limit: int = 200_000) -> str:
    """The book's main language from its text: by script (Han, kana, Hangul, Cyrillic), then,
    for Latin script, by the commonest short words of a few languages ("en" when unsure)."""
    sample: list[str] = []
    size = 0
    for text in texts:
        sample.append(text)
        size += len(text)
        if size >= limit:
            break
    joined = "".join(sample)
    han, kana, hangul = len(_HAN.findall(joined)), len(_KANA.findall(joined)), len(_HANGUL.findall(joined))
    cyrillic, latin = len(_CYRILLIC.findall(joined)), len(_LATIN.findall(joined))
    # a CJK character carries about as much as a Latin word (~5 letters)
    scores = {"cjk": (han + kana) * 5, "ko": hangul * 3, "ru": cyrillic, "latin": latin}
    best = max(scores, key=lambda k: scores[k])
    if scores[best] == 0:
        return ""
    if best == "cjk":
        return "ja" if kana >= 0.1 * (han + kana) else "zh"
    if best != "latin":
        return best
    words = _WORD.findall(joined.lower())
    counts = {lang: sum(1 for w in words if w in stop) for lang, stop in _STOPWORDS.items()}
    lang = max(counts, key=lambda k: counts[k])
    return lang if counts[lang] > 1.5 * counts["en"] or lang == "en" else "en"


# what tools write when nobody filled the field in: not a title or an author
_PLACEHOLDERS = {"anonymous", "unknown", "untitled", "author", "user", "administrator", "admin", "owner", "title"}


def _clean(value: Any) -> str:
    text = " ".join(str(value).split()) if value else ""
    return "" if text.lower() in _PLACEHOLDERS else text


def _split_authors(text: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"\s*(?:;|，|、|\band\b|&)\s*", text) if p.strip()]
    return parts or [text]
