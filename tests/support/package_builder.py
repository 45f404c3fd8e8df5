"""Writes real, valid book packages for the tests, and breaks them in every way the format names.

`build_package(dest)` writes a package root with a real PDF (reportlab; Chinese through the
built-in STSong-Light CID font) or a real EPUB 3, book.md, SKILL.md, index.sqlite with
records and float32 vectors, vectors.json and book-package.json with correct sizes and hashes.
`break_package(root, how)` then damages it in one named way (see BREAKAGES).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class RecordSpec:
    record_id: str
    text: str
    headings: list[str] = field(default_factory=list)
    page: int = 0  # PDF page / EPUB chapter index the record belongs to


# A small book with English and Chinese passages, a figure page, a table, and a page without text.
SAMPLE_RECORDS: list[RecordSpec] = [
    RecordSpec("r0001", "Water shapes its course according to the nature of the ground over which it flows.", ["Chapter 1", "Terrain"], 0),
    RecordSpec("r0002", "The general who wins a battle makes many calculations in his temple before the battle is fought.", ["Chapter 1", "Laying Plans"], 0),
    RecordSpec("r0003", "Running rivers carry sediment downstream, and the flooding of valleys changes farming.", ["Chapter 2", "Rivers"], 1),
    RecordSpec("r0004", "Photosynthesis converts light energy into chemical energy stored in glucose molecules.", ["Chapter 2", "Plants"], 1),
    RecordSpec("r0005", "Figure 3 shows a diagram of the supply chain with arrows between the depots.", ["Chapter 3", "Logistics"], 2),
    RecordSpec("r0006", "Table 2 lists the tax rates for each province and the yearly grain tribute.", ["Chapter 3", "Taxes"], 2),
    RecordSpec("r0007", "孫子曰：兵者，國之大事，死生之地，存亡之道，不可不察也。", ["第一章", "始計"], 3),
    RecordSpec("r0008", "知己知彼，百戰不殆；不知彼而知己，一勝一負。", ["第三章", "謀攻"], 3),
    RecordSpec("r0009", "水因地而制流，兵因敵而制勝。故兵無常勢，水無常形。", ["第六章", "虛實"], 4),
    RecordSpec("r0010", "机器学习模型需要大量的数据来训练，数据质量决定了模型的上限。", ["第七章", "数据"], 4),
]
BLANK_PAGE = 5  # a page with no text at all (like a scanned page)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def random_vectors(record_ids: Sequence[str], dims: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((len(record_ids), dims)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def write_pdf(path: Path, pages: list[list[str]], figure_page: int | None = 2) -> None:
    """One page per entry; each string is drawn as wrapped lines. Page sizes: US letter."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setTitle("Synthetic test book")
    for index, texts in enumerate(pages):
        y = 720.0
        for text in texts:
            cjk = any("\u3000" <= ch <= "\u9fff" for ch in text)
            c.setFont("STSong-Light" if cjk else "Helvetica", 11)
            width = 38 if cjk else 80
            for start in range(0, len(text), width):
                line = text[start : start + width]
                if not cjk and start + width < len(text):
                    pass
                c.drawString(72, y, line)
                y -= 16
            y -= 10
        if index == figure_page:
            c.rect(72, 200, 300, 150)  # a "figure": a box with a diagonal arrow
            c.line(90, 220, 350, 330)
        c.showPage()
    c.save()


def write_epub(path: Path, chapters: list[list[tuple[str, str]]], title: str, language: str) -> None:
    """chapters: per chapter, (paragraph id, text). Written as a minimal valid EPUB 3."""
    from xml.sax.saxutils import escape

    items, spine, nav = [], [], []
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        for index, paragraphs in enumerate(chapters):
            href = f"text/chapter{index + 1:02d}.xhtml"
            body = "".join(f'<p id="{pid}">{escape(text)}</p>' for pid, text in paragraphs)
            z.writestr(
                f"OEBPS/{href}",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>Chapter {index + 1}</title></head><body><h1>Chapter {index + 1}</h1>{body}</body></html>",
            )
            items.append(f'<item id="c{index}" href="{href}" media-type="application/xhtml+xml"/>')
            spine.append(f'<itemref idref="c{index}"/>')
            nav.append(f'<li><a href="{href}">Chapter {index + 1}</a></li>')
        z.writestr(
            "OEBPS/nav.xhtml",
            '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
            f'<head><title>Contents</title></head><body><nav epub:type="toc"><ol>{"".join(nav)}</ol></nav></body></html>',
        )
        z.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">test-book</dc:identifier>'
            f"<dc:title>{escape(title)}</dc:title><dc:language>{language}</dc:language></metadata>"
            f'<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>{"".join(items)}</manifest>'
            f'<spine>{"".join(spine)}</spine></package>',
        )


def _markdown(records: Sequence[RecordSpec]) -> tuple[str, list[tuple[int, int]]]:
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    last_headings: list[str] = []
    for rec in records:
        if rec.headings != last_headings:
            for depth, heading in enumerate(rec.headings):
                if depth < len(last_headings) and last_headings[depth] == heading:
                    continue
                chunk = "#" * (depth + 1) + " " + heading + "\n\n"
                parts.append(chunk)
                offset += len(chunk)
            last_headings = list(rec.headings)
        spans.append((offset, offset + len(rec.text)))
        chunk = rec.text + "\n\n"
        parts.append(chunk)
        offset += len(chunk)
    return "".join(parts), spans


def write_database(
    path: Path,
    book_id: str,
    records: Sequence[RecordSpec],
    sources: Sequence[dict[str, Any]],
    spans: Sequence[tuple[int, int]],
    vectors: np.ndarray | None,
    meta_extra: dict[str, str] | None = None,
) -> None:
    from book_agent.domain.book.package import DATABASE_SCHEMA_SQL

    con = sqlite3.connect(path)
    con.executescript(DATABASE_SCHEMA_SQL)
    meta = {"schema_version": "0.1", "book_id": book_id, "record_count": str(len(records))}
    if vectors is not None:
        meta["embedding_dimensions"] = str(vectors.shape[1])
    meta.update(meta_extra or {})
    con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    con.executemany(
        "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (r.record_id, i, r.text, json.dumps(r.headings, ensure_ascii=False), s[0], s[1], json.dumps(src, ensure_ascii=False))
            for i, (r, src, s) in enumerate(zip(records, sources, spans, strict=True))
        ],
    )
    if vectors is not None:
        con.executemany(
            "INSERT INTO vectors VALUES (?, ?)",
            [(r.record_id, vectors[i].astype("<f4").tobytes()) for i, r in enumerate(records)],
        )
    con.commit()
    con.close()


def _file_entry(root: Path, rel: str, **extra: Any) -> dict[str, Any]:
    path = root / rel
    return {"path": rel, "sha256": sha256_file(path), "bytes": path.stat().st_size, **extra}


def rehash(root: Path) -> None:
    """Recompute every listed file's size and hash in book-package.json (after a deliberate edit)."""
    manifest_path = root / "book-package.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for name, entry in manifest["files"].items():
        extra = {k: v for k, v in entry.items() if k not in ("path", "sha256", "bytes")}
        manifest["files"][name] = _file_entry(root, entry["path"], **extra)
    manifest["extra_files"] = [_file_entry(root, e["path"]) for e in manifest.get("extra_files", [])]
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")


def build_package(
    dest: Path,
    *,
    book_id: str = "test-book",
    title: str = "A Synthetic Test Book",
    kind: str = "pdf",
    records: Sequence[RecordSpec] | None = None,
    dims: int = 16,
    vectors: str | np.ndarray | Callable[[list[str]], np.ndarray] = "random",
    provider: str = "local",
    model: str = "test/random-vectors",
    metric: str = "cosine",
    languages: list[str] | None = None,
    language: str = "en",
    query_instruction: str = "",
    folder: str | None = None,
    skill_files: dict[str, str] | None = None,
    blank_page: bool = True,
) -> Path:
    """Write a valid package under dest (or dest/folder) and return its root.

    vectors: "random" (deterministic unit vectors), "none" (no vectors table rows and no
    vectors.json), an (n, dims) array, or a function from texts to such an array.
    """
    records = list(records if records is not None else SAMPLE_RECORDS)
    root = Path(dest) / folder if folder else Path(dest)
    root.mkdir(parents=True, exist_ok=True)
    (root / "original").mkdir(exist_ok=True)

    n_pages = max(r.page for r in records) + 1
    if kind == "pdf":
        pages: list[list[str]] = [[] for _ in range(n_pages + (1 if blank_page else 0))]
        for r in records:
            pages[r.page].append(r.text)
        original_rel, media = "original/book.pdf", "application/pdf"
        write_pdf(root / original_rel, pages)
        sources = [{"kind": "pdf", "page_index": r.page, "page_label": str(r.page + 1)} for r in records]
    elif kind == "epub":
        chapters: list[list[tuple[str, str]]] = [[] for _ in range(n_pages)]
        for r in records:
            chapters[r.page].append((f"p-{r.record_id}", r.text))
        original_rel, media = "original/book.epub", "application/epub+zip"
        write_epub(root / original_rel, chapters, title, language)
        sources = [
            {"kind": "epub", "href": f"text/chapter{r.page + 1:02d}.xhtml", "fragment": f"p-{r.record_id}", "spine_index": r.page}
            for r in records
        ]
    else:
        raise ValueError(f"kind must be pdf or epub, not {kind!r}")

    markdown, spans = _markdown(records)
    (root / "book.md").write_text(markdown, encoding="utf-8")
    (root / "SKILL.md").write_text(
        f"---\nname: {book_id}\ndescription: Search and cite {title} with book-agent.\n---\n\n"
        f"# {title}\n\nUse the book-agent `search` tool, then cite evidence_id and source_locator.\n",
        encoding="utf-8",
    )
    for rel, text in (skill_files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")

    matrix: np.ndarray | None
    if isinstance(vectors, str):
        matrix = None if vectors == "none" else random_vectors([r.record_id for r in records], dims)
    elif callable(vectors):
        matrix = np.asarray(vectors([r.text for r in records]), dtype=np.float32)
    else:
        matrix = np.asarray(vectors, dtype=np.float32)
    meta_extra = {"embedding_model": model} if matrix is not None else {}
    write_database(root / "index.sqlite", book_id, records, sources, spans, matrix, meta_extra)

    files: dict[str, Any] = {
        "original": _file_entry(root, original_rel, media_type=media),
        "markdown": _file_entry(root, "book.md"),
        "skill": _file_entry(root, "SKILL.md"),
        "database": _file_entry(root, "index.sqlite"),
    }
    if matrix is not None:
        vector_manifest: dict[str, Any] = {
            "schema": "book-agent.vectors",
            "schema_version": "0.1",
            "provider": provider,
            "model": model,
            "dimensions": int(matrix.shape[1]),
            "dtype": "float32",
            "normalized": True,
            "metric": metric,
            "query_instruction": query_instruction,
            "record_count": len(records),
        }
        if languages is not None:
            vector_manifest["languages"] = languages
        (root / "vectors.json").write_text(json.dumps(vector_manifest, indent=2), encoding="utf-8")
        files["vector_manifest"] = _file_entry(root, "vectors.json")
    manifest = {
        "schema": "book-agent.package",
        "schema_version": "0.1",
        "book_id": book_id,
        "title": title,
        "authors": ["Test Author"],
        "language": language,
        "created_at": "2026-11-01T10:00:00Z",
        "generator": {"name": "tests/support/package_builder.py", "version": "1"},
        "files": files,
        "extra_files": [_file_entry(root, rel) for rel in sorted(skill_files or {})],
    }
    (root / "book-package.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    return root


def synthetic_records(count: int, seed: int = 1, cjk_share: float = 0.2, words: int = 60) -> list[RecordSpec]:
    """Many varied records (for benchmarks and scale tests), English-like with some Chinese.

    Words follow a Zipf distribution over a 20,000-word pseudo vocabulary (and 3,000 hanzi),
    as words do in real books, less its 40 most frequent ranks (the function words a
    stopword list or BM25's idf discounts anyway). A uniform draw from a small vocabulary
    would put every word in every record, which no real book does.
    """
    rng = np.random.default_rng(seed)
    syllables = ["ka", "to", "ri", "mu", "sen", "dal", "or", "vi", "pe", "lan", "qu", "est", "ba", "no", "ther", "ix"]
    vocab = ["".join(rng.choice(syllables, size=int(rng.integers(1, 4)))) + str(i % 7 if i > 400 else "") for i in range(20000)]
    vocab[0:12] = ["army", "river", "mountain", "general", "strategy", "supply", "weather", "terrain", "victory", "spy", "fire", "camp"]
    hanzi = [chr(0x4E00 + int(i)) for i in rng.choice(20000, size=3000, replace=False)]
    hanzi[0:20] = list("兵法孫子水火山川將軍勝敗知己彼戰國家道天")

    def zipf_pick(pool: list[str], n: int) -> list[str]:
        ranks = rng.zipf(1.1, size=n * 3)
        ranks = ranks[ranks > 40][:n] - 41  # the Zipf tail past the function words
        return [pool[int(r) % len(pool)] for r in ranks]

    out: list[RecordSpec] = []
    for i in range(count):
        if rng.random() < cjk_share:
            text = "".join(zipf_pick(hanzi, words))
        else:
            text = " ".join(zipf_pick(vocab, words)).capitalize() + "."
        out.append(RecordSpec(f"s{i:06d}", text, [f"Part {i // 500 + 1}"], i // 50))
    return out


# --- breaking a package in one named way -------------------------------------------------

def _edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


def _sql(root: Path, statement: str, params: Sequence[Any] = ()) -> None:
    con = sqlite3.connect(root / "index.sqlite")
    con.execute(statement, params)
    con.commit()
    con.close()


def _first_id(root: Path) -> str:
    con = sqlite3.connect(root / "index.sqlite")
    (rid,) = con.execute("SELECT record_id FROM records ORDER BY seq LIMIT 1").fetchone()
    con.close()
    return str(rid)


BREAKAGES: dict[str, Callable[[Path], None]] = {
    "missing_markdown": lambda root: (root / "book.md").unlink(),
    "missing_manifest_entry": lambda root: _edit_json(root / "book-package.json", lambda m: m["files"].pop("skill")),
    "unlisted_file": lambda root: (root / "stray.txt").write_text("not listed", encoding="utf-8"),
    "symlinked_file": lambda root: (os.replace(root / "book.md", root / "book-real.md"), os.symlink("book-real.md", root / "book.md")),
    "size_mismatch": lambda root: _edit_json(root / "book-package.json", lambda m: m["files"]["markdown"].update(bytes=1)),
    "hash_mismatch": lambda root: (root / "book.md").write_text((root / "book.md").read_text(encoding="utf-8").replace("a", "b", 1) or "x", encoding="utf-8"),
    "unsupported_schema_version": lambda root: _edit_json(root / "book-package.json", lambda m: m.update(schema_version="0.2")),
    "wrong_schema": lambda root: _edit_json(root / "book-package.json", lambda m: m.update(schema="something-else")),
    "bad_book_id": lambda root: _edit_json(root / "book-package.json", lambda m: m.update(book_id="Bad Book/ID")),
    "malformed_manifest_json": lambda root: (root / "book-package.json").write_text("{not json", encoding="utf-8"),
    "malformed_vectors_json": lambda root: ((root / "vectors.json").write_text("[1,", encoding="utf-8"), rehash(root)),
    "not_sqlite": lambda root: ((root / "index.sqlite").write_bytes(b"this is not a database" * 10), rehash(root)),
    "wrong_sqlite_schema": lambda root: (_sql(root, "DROP TABLE meta"), rehash(root)),
    "vector_wrong_length": lambda root: (_sql(root, "UPDATE vectors SET embedding = ? WHERE record_id = ?", (b"\0" * 12, _first_id(root))), rehash(root)),
    "vector_nan": lambda root: (_sql(root, "UPDATE vectors SET embedding = ? WHERE record_id = ?", (np.full(_dims(root), np.nan, "<f4").tobytes(), _first_id(root))), rehash(root)),
    "vector_without_record": lambda root: (_sql(root, "INSERT INTO vectors VALUES ('ghost', ?)", (np.ones(_dims(root), "<f4").tobytes(),)), rehash(root)),
    "record_count_disagrees": lambda root: (_sql(root, "UPDATE meta SET value = '999' WHERE key = 'record_count'"), rehash(root)),
    "vectors_json_dims_disagree": lambda root: (_edit_json(root / "vectors.json", lambda m: m.update(dimensions=m["dimensions"] + 1)), rehash(root)),
}


def _dims(root: Path) -> int:
    return int(json.loads((root / "vectors.json").read_text(encoding="utf-8"))["dimensions"])


def break_package(root: Path, how: str) -> Path:
    """Damage a package built by build_package in one of the BREAKAGES ways; returns root."""
    BREAKAGES[how](root)
    return root


def tree_fingerprint(root: Path) -> dict[str, tuple[int, str]]:
    """Every path under root (mode and content hash): proof that nothing changed a byte."""
    out: dict[str, tuple[int, str]] = {}
    for path in sorted(Path(root).rglob("*")):
        st = path.lstat()
        digest = sha256_file(path) if path.is_file() and not path.is_symlink() else ""
        out[str(path.relative_to(root))] = (st.st_mode, digest)
    return out
