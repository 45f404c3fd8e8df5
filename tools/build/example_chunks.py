"""Chunk the Standard Ebooks *Art of War* EPUB along its structure (a dev tool, not runtime code).

All text comes from the product's own EPUB extractor (`EpubSource.chapter`), so every chunk's
`char_start/char_end` is an offset into exactly the text the SourceResolver verifies against.
Each block element of a content document is one line of that text; a chunk is a run of
whole lines (verses or paragraphs) of one document, or a sentence-aligned piece of one long
line. Notes live in endnotes.xhtml; each note is owned by the document whose `noteref-N`
points at it, and notes are chunked per owner, never mixed across chapters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent_adapters.bench import Chapter, EpubSource, sizing_group

MIN_WORDS = 80  # a chunk closes once it holds this much
MAX_WORDS = 220  # ...and never grows past this (MiniLM reads 256 word pieces)
TAIL_WORDS = 40  # a shorter last chunk of a document joins the one before it
_SENTENCE_END = re.compile(r"(?<=[.!?;:”’)])\s+(?=[“‘(A-Z\u4e00-\u9fff])")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

# spine href -> (id prefix, heading) for the documents that become records, in reading order
BODY_DOCS: dict[str, str] = {
    "text/translators-preface.xhtml": "preface",
    **{f"text/translators-intro-{n}.xhtml": f"intro{n}" for n in range(1, 6)},
    "text/bibliography.xhtml": "biblio",
    **{f"text/chapter-{n}.xhtml": f"ch{n:02d}" for n in range(1, 14)},
}
ENDNOTES = "text/endnotes.xhtml"


@dataclass
class Chunk:
    record_id: str
    text: str
    headings: list[str]
    href: str
    spine_index: int
    fragment: str | None
    char_start: int
    char_end: int
    owner: str  # id prefix of the document the chunk belongs to (notes: the referring one)
    embed_text: str = ""  # what the encoder reads: note markers removed, chapter title first
    md_start: int = -1
    md_end: int = -1

    def source(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "epub", "href": self.href}
        if self.fragment:
            out["fragment"] = self.fragment
        out.update(spine_index=self.spine_index, char_start=self.char_start, char_end=self.char_end)
        return out


@dataclass
class Doc:
    prefix: str
    title: str
    chapter: Chapter
    body_start: int  # offset of the first line after the headings
    chunks: list[Chunk] = field(default_factory=list)
    notes: list[Chunk] = field(default_factory=list)


def words(text: str) -> int:
    return len(text.split()) + len(_CJK.findall(text)) // 2


def lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of every non-empty line of text[start:end]."""
    out: list[tuple[int, int]] = []
    pos = start
    for part in text[start:end].split("\n"):
        stripped = part.strip()
        if stripped:
            lead = len(part) - len(part.lstrip())
            out.append((pos + lead, pos + lead + len(stripped)))
        pos += len(part) + 1
    return out


def split_long(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A line longer than MAX_WORDS, cut at sentence ends into balanced pieces."""
    total = words(text[start:end])
    if total <= MAX_WORDS:
        return [(start, end)]
    pieces = -(-total // MAX_WORDS)
    target = total / pieces
    cuts = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text, start, end)]
    out: list[tuple[int, int]] = []
    piece_start = start
    for gap_start, gap_end in cuts:
        if words(text[piece_start:gap_start]) >= target and len(out) < pieces - 1:
            out.append((piece_start, gap_start))
            piece_start = gap_end
    out.append((piece_start, end))
    return out


def group(units: list[tuple[int, int]], text: str) -> list[list[int]]:
    """Greedy runs of unit indexes: close at MIN_WORDS, never past MAX_WORDS; a short tail joins
    (the builder's grouping, measured in words with this script's bounds)."""
    return sizing_group(units, text, size=words, low=MIN_WORDS, high=MAX_WORDS, tail_below=TAIL_WORDS)


def nearest_fragment(chapter: Chapter, offset: int) -> str | None:
    """The id that starts closest before offset (note markers excluded: they mark a point)."""
    best: tuple[int, str] | None = None
    for fid, pos in chapter.fragments.items():
        if fid.startswith("noteref-") or pos > offset:
            continue
        if best is None or pos >= best[0]:
            best = (pos, fid)
    return best[1] if best else None


def heading_lines(chapter: Chapter) -> int:
    """Chapters open with an ordinal and a title line (hgroup); other documents with a title."""
    return 2 if chapter.item.href.startswith("text/chapter-") else 1


def number_label(ids: list[int], letter: str = "") -> str:
    first, last = ids[0], ids[-1]
    return (f"{first:02d}" if first == last else f"{first:02d}-{last:02d}") + letter


def load_docs(epub: EpubSource) -> tuple[dict[str, Doc], Chapter]:
    spine = {item.href: item for item in epub.spine}
    docs: dict[str, Doc] = {}
    for href, prefix in BODY_DOCS.items():
        chapter = epub.chapter(spine[href])
        heads = lines(chapter.text, 0, len(chapter.text))[: heading_lines(chapter)]
        title_lines = [without_marks(chapter, s, e) for s, e in heads]  # "Laying Plans168"
        title = ". ".join(title_lines) if prefix.startswith("ch") else title_lines[0]
        docs[prefix] = Doc(prefix, title, chapter, heads[-1][1])
    return docs, epub.chapter(spine[ENDNOTES])


def letters(k: int) -> str:
    """0 -> a, 25 -> z, 26 -> aa: piece names that never run out."""
    out = ""
    k += 1
    while k:
        k, rem = divmod(k - 1, 26)
        out = chr(ord("a") + rem) + out
    return out


@dataclass
class Unit:
    label: str  # verse/paragraph/note number, with a letter for a piece of a long one
    start: int
    end: int


def units_of(text: str, spans: list[tuple[int, int]], labels: list[str]) -> list[Unit]:
    out: list[Unit] = []
    for (start, end), label in zip(spans, labels, strict=True):
        pieces = split_long(text, start, end)
        for k, (s, e) in enumerate(pieces):
            out.append(Unit(label + (letters(k) if len(pieces) > 1 else ""), s, e))
    return out


def chunk_units(doc: Doc, units: list[Unit], text: str, kind: str) -> list[tuple[str, int, int]]:
    """(record id, start, end) per group of units."""
    out = []
    for ids in group([(u.start, u.end) for u in units], text):
        first, last = units[ids[0]], units[ids[-1]]
        label = first.label if first is last else f"{first.label}-{last.label}"
        out.append((f"{doc.prefix}-{kind}{label}", first.start, last.end))
    return out


def chunk_body(doc: Doc) -> None:
    text = doc.chapter.text
    spans = lines(text, doc.body_start, len(text))
    is_chapter = doc.prefix.startswith("ch")
    labels = [f"{n:02d}" for n in range(1, len(spans) + 1)]
    if is_chapter:  # the book numbers verses by paragraph: check our count against its ids
        for fid, pos in doc.chapter.fragments.items():
            m = re.fullmatch(r"chapter-\d+-p-(\d+)", fid)
            if m and spans[int(m.group(1)) - 1][0] != pos:
                raise RuntimeError(f"{doc.prefix}: verse {m.group(1)} is not line {m.group(1)}")
    kind = "v" if is_chapter else "p"
    for record_id, start, end in chunk_units(doc, units_of(text, spans, labels), text, kind):
        doc.chunks.append(_chunk(doc, doc.chapter, record_id, start, end, [doc.title]))


def note_owners(docs: dict[str, Doc]) -> dict[int, str]:
    owners: dict[int, str] = {}
    for doc in docs.values():
        for fid in doc.chapter.fragments:
            if fid.startswith("noteref-"):
                owners[int(fid.split("-")[1])] = doc.prefix
    return owners


def chunk_notes(docs: dict[str, Doc], endnotes: Chapter) -> None:
    text = endnotes.text
    starts = sorted((pos, int(fid.split("-")[1])) for fid, pos in endnotes.fragments.items()
                    if re.fullmatch(r"note-\d+", fid))
    owners = note_owners(docs)
    by_owner: dict[str, list[tuple[int, int, int]]] = {}
    owner = next(iter(docs))
    for k, (start, number) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        end = start + len(text[start:end].rstrip(" \n\u21a9"))
        owner = owners.get(number, owner)  # a note only other notes cite stays with the one before
        by_owner.setdefault(owner, []).append((number, start, end))
    for prefix, notes in by_owner.items():
        doc = docs[prefix]
        spans, labels = [], []
        for number, start, end in notes:
            for s, e in (lines(text, start, end) if words(text[start:end]) > MAX_WORDS else [(start, end)]):
                spans.append((s, e))
                labels.append(f"{number:03d}")
        units = units_of(text, spans, labels)
        _relabel_note_lines(units)
        for record_id, start, end in chunk_units(doc, units, text, "n"):
            doc.notes.append(_chunk(doc, endnotes, record_id, start, end, [doc.title, "Notes"]))


def _relabel_note_lines(units: list[Unit]) -> None:
    """A long note split by paragraph and sentence: letters run across the whole note."""
    counts: dict[str, int] = {}
    for unit in units:
        base = unit.label.rstrip("abcdefghijklmnopqrstuvwxyz")
        counts[base] = counts.get(base, 0) + 1
    seen: dict[str, int] = {}
    for unit in units:
        base = unit.label.rstrip("abcdefghijklmnopqrstuvwxyz")
        if counts[base] > 1:
            unit.label = base + letters(seen.get(base, 0))
            seen[base] = seen.get(base, 0) + 1


_NOTE_MARK = re.compile(r"\s*\u21a9")


def _chunk(doc: Doc, chapter: Chapter, record_id: str, start: int, end: int, headings: list[str]) -> Chunk:
    text = chapter.text[start:end]
    return Chunk(
        record_id=record_id, text=text, headings=headings, href=chapter.item.href,
        spine_index=chapter.item.index, fragment=nearest_fragment(chapter, start),
        char_start=start, char_end=end, owner=doc.prefix,
        embed_text=embed_text(chapter, start, end, headings),
    )


def without_marks(chapter: Chapter, start: int, end: int) -> str:
    """text[start:end] without its note markers (`…intact.218` -> `…intact.`) and backlinks."""
    text = chapter.text
    marks = sorted((pos, len(fid) - len("noteref-")) for fid, pos in chapter.fragments.items()
                   if fid.startswith("noteref-") and start <= pos < end)
    parts, pos = [], start
    for mark, width in marks:
        parts.append(text[pos:mark])
        pos = mark + width
    parts.append(text[pos:end])
    return _NOTE_MARK.sub("", "".join(parts))


def embed_text(chapter: Chapter, start: int, end: int, headings: list[str]) -> str:
    """What the encoder reads: the chunk without note markers, its chapter's title in front."""
    body = " ".join(without_marks(chapter, start, end).split())
    title = re.sub(r"^[IVXL]+\. ", "", headings[0])
    place = f"Notes on {title}" if len(headings) > 1 else title
    return f"{place}: {body}"


def chunk_book(epub_path: Path) -> tuple[list[Doc], list[Chunk]]:
    """The documents (reading order) and all chunks: each document's body, then its notes."""
    epub = EpubSource(epub_path)
    try:
        docs, endnotes = load_docs(epub)
        for doc in docs.values():
            chunk_body(doc)
        chunk_notes(docs, endnotes)
    finally:
        epub.close()
    ordered = list(docs.values())
    return ordered, [c for doc in ordered for c in (*doc.chunks, *doc.notes)]
