"""Records of an EPUB: runs of blocks of one spine document (a long block cut at sentence ends),
headed by the document's first line when it is short; each spine document checked by the
guards (path, markup, encoding) before the runtime's reader parses it. Sizes: sizing.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError

from . import errors, guards, layout, sizing
from .chunks import MAX_HEADING_CHARS, Extraction, Piece, Tick


def _spine_member(source: Any, item: Any, book: str) -> bytes:
    """The spine document's bytes, refused when its path leaves the book or it is hostile."""
    zip_path = str(item.zip_path)
    if zip_path.startswith(("../", "/")) or zip_path == ".." or "\\" in zip_path or "\x00" in zip_path:
        raise errors.unsafe(book, f"the spine names {item.href!r}, a path outside the book", href=item.href)
    data = source.member(zip_path)
    if data is None:
        raise errors.corrupt(book, f"the spine names {item.href!r}, which the book does not hold",
                             href=item.href)
    guards.check_markup(book, zip_path, data)
    guards.check_encoding(book, zip_path, data)
    return bytes(data)


def epub_extraction(path: Path, tick: Tick) -> tuple[Extraction, bytes]:
    """The records of every spine document, and the OPF's bytes (for the metadata)."""
    from book_agent_adapters.sources.epub.reader import EpubSource

    names = guards.check_epub_archive(path)
    _check_xml_members(path, names)
    source = EpubSource(path)
    found = Extraction()
    try:
        spine = source.spine
        _, opf = source.package_document()
        found.units = len(spine)
        found.headings_from = "documents"
        for item in spine:
            _spine_member(source, item, path.name)
            _chapter_records(source.chapter(item), found)
            tick(item.index + 1, len(spine))
    except BookAgentError as exc:
        if exc.code.startswith("build."):
            raise
        raise errors.from_source(path.name, exc) from exc
    finally:
        source.close()
    return found, bytes(opf)


def _check_xml_members(path: Path, names: list[str]) -> None:
    """container.xml and every OPF: no entity declarations, no deep nesting (they are parsed
    with ElementTree before any spine document is read)."""
    import zipfile

    wanted = [n for n in names if n == "META-INF/container.xml" or n.lower().endswith(".opf")]
    try:
        with zipfile.ZipFile(path) as archive:
            for name in wanted:
                guards.check_markup(path.name, name, archive.read(name))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise errors.corrupt(path.name, str(exc)) from exc


def _chapter_records(chapter: Any, found: Extraction) -> None:
    text: str = chapter.text
    item = chapter.item
    state = layout.readability(text)
    if state == "empty":
        found.empty.append(item.index + 1)
        return
    if state == "garbage":
        found.garbage.append(item.index + 1)
        return
    lines = layout.split_lines(text)
    title = text[lines[0][0]:lines[0][1]] if lines and lines[0][1] - lines[0][0] <= MAX_HEADING_CHARS else ""
    pieces = [piece for s, e in lines for piece in sizing.fit(text, s, e)]
    for k, run in enumerate(sizing.group(pieces, text), 1):
        start, end = pieces[run[0]][0], pieces[run[-1]][1]
        locator: dict[str, Any] = {"kind": "epub", "href": item.href}
        fragment = _nearest_fragment(chapter.fragments, start)
        if fragment:
            locator["fragment"] = fragment
        locator.update(spine_index=item.index, char_start=start, char_end=end)
        found.pieces.append(Piece(f"d{item.index + 1:03d}-{k:03d}", text[start:end], [title] if title else [],
                                  locator))
    if len(found.texts) < 400:
        found.texts.append(text[:20_000])


def _nearest_fragment(fragments: dict[str, int], offset: int) -> str | None:
    """The id that starts closest before offset (note markers excluded: they mark a point)."""
    best: tuple[int, str] | None = None
    for fid, pos in fragments.items():
        if fid.startswith("noteref-") or pos > offset:
            continue
        if best is None or pos >= best[0]:
            best = (pos, fid)
    return best[1] if best else None
