"""The committed example package (The Art of War): valid, locatable, and rebuilt identically."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from book_agent_adapters.package.inspector import PackageInspector, PackageValidator
from book_agent_adapters.sources.resolver import SourceResolver
from tests.support import REPO_ROOT

ROOT = REPO_ROOT
PACKAGE = ROOT / "examples" / "art-of-war-package"
EPUB = ROOT / "examples" / "the-art-of-war" / "the-art-of-war.epub"

from tools.build.build_example_package import BOOK_ID, DIMS, MODEL, build  # noqa: E402
from tools.build.example_chunks import MAX_WORDS, chunk_book, words  # noqa: E402


def committed_records() -> list[dict[str, Any]]:
    con = sqlite3.connect(f"file:{PACKAGE / 'index.sqlite'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT record_id, seq, text, headings, md_start, md_end, source "
                           "FROM records ORDER BY seq").fetchall()
    finally:
        con.close()
    keys = ("record_id", "seq", "text", "headings", "md_start", "md_end", "source")
    out = [dict(zip(keys, row, strict=True)) for row in rows]
    for r in out:
        r["headings"], r["source"] = json.loads(r["headings"]), json.loads(r["source"])
    return out


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return committed_records()


def test_the_example_sources_are_committed_with_their_licence() -> None:
    assert EPUB.is_file() and EPUB.stat().st_size > 500_000
    assert "CC0" in (EPUB.parent / "the-art-of-war.LICENSE.md").read_text(encoding="utf-8")


def test_package_inspects_and_validates_clean() -> None:
    info = PackageInspector().inspect(PACKAGE, verify_hashes=True)
    diagnostics = PackageValidator().validate(info)
    assert [d for d in diagnostics if d.severity != "info"] == []
    assert info.book_id == BOOK_ID and info.title == "The Art of War"
    manifest = info.archive_manifest or {}
    assert manifest["language"] == "en"
    assert manifest["files"]["original"]["media_type"] == "application/epub+zip"
    vm = info.vector_manifest or {}
    assert (vm["provider"], vm["model"], vm["dimensions"], vm["normalized"], vm["metric"], vm["languages"]) == \
        ("local", MODEL, DIMS, True, "cosine", ["en"])


def test_database_is_small_and_its_meta_agrees(records: list[dict[str, Any]]) -> None:
    size = (PACKAGE / "index.sqlite").stat().st_size
    assert size < 4_000_000
    con = sqlite3.connect(f"file:{PACKAGE / 'index.sqlite'}?mode=ro", uri=True)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        blobs = [row[0] for row in con.execute("SELECT embedding FROM vectors")]
        free = con.execute("PRAGMA freelist_count").fetchone()[0]
    finally:
        con.close()
    assert free == 0  # VACUUMed
    assert (meta["embedding_model"], meta["embedding_dimensions"], meta["record_count"]) == \
        (MODEL, str(DIMS), str(len(records)))
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), DIMS)
    assert len(blobs) == len(records)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)


def test_records_follow_the_books_structure(records: list[dict[str, Any]]) -> None:
    ids = [r["record_id"] for r in records]
    assert len(ids) == len(set(ids)) > 400
    chapters = {m.group(1) for i in ids if (m := re.match(r"ch(\d\d)-v", i))}
    assert chapters == {f"{n:02d}" for n in range(1, 14)}
    assert any(i.startswith("intro1-p") for i in ids) and any(re.match(r"ch\d\d-n\d{3}", i) for i in ids)
    for r in records:
        assert re.fullmatch(r"(ch\d\d|intro\d|preface|biblio)-[vpn][0-9a-z-]+", r["record_id"]), r["record_id"]
        assert r["headings"] and (len(r["headings"]) == 1 or r["headings"][1] == "Notes")
        assert r["source"]["kind"] == "epub" and r["source"]["href"].startswith("text/")
        assert words(r["text"]) <= MAX_WORDS + 30, r["record_id"]
    assert records[0]["headings"] == ["Preface by Lionel Giles"]
    verse = next(r for r in records if r["record_id"].startswith("ch03-v01"))
    assert verse["headings"] == ["III. Attack by Stratagem"]
    assert verse["text"].startswith("Sun Tzǔ said: In the practical art of war")
    cjk = sum(bool(re.search(r"[\u4e00-\u9fff]", r["text"])) for r in records)
    assert cjk > 200  # the notes' Chinese text is in the records


def test_markdown_offsets_are_exact_and_headings_match(records: list[dict[str, Any]]) -> None:
    from book_agent_adapters.sources.markdown_reader import heading_path, load_markdown

    md = (PACKAGE / "book.md").read_text(encoding="utf-8")
    _, headings = load_markdown(PACKAGE / "book.md")
    for r in records:
        assert md[r["md_start"]:r["md_end"]] == r["text"], r["record_id"]
        assert heading_path(headings, r["md_start"]) == r["headings"], r["record_id"]


def test_every_record_locator_verifies_against_the_epub(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    info = PackageInspector().inspect(PACKAGE, verify_hashes=False)
    methods: dict[str, int] = {}
    with SourceResolver(info, tmp_path / "runtime") as resolver:
        for r in records:
            loc = resolver.locate({"record_id": r["record_id"]})
            method = loc["verification"]["method"]
            methods[method] = methods.get(method, 0) + 1
            assert method in ("exact", "normalized"), (r["record_id"], loc["verification"])
            assert loc["verification"]["corrected"] == {}, (r["record_id"], loc["verification"])
            assert (loc["href"], loc["char_start"], loc["char_end"]) == \
                (r["source"]["href"], r["source"]["char_start"], r["source"]["char_end"])
            assert loc["verification"]["markdown"] == "verified"
    assert methods.get("exact", 0) == len(records)


def test_chunking_is_deterministic_and_matches_the_committed_package(records: list[dict[str, Any]]) -> None:
    _, first = chunk_book(EPUB)
    _, second = chunk_book(EPUB)
    assert [(c.record_id, c.text, c.source()) for c in first] == [(c.record_id, c.text, c.source()) for c in second]
    assert [c.record_id for c in first] == [r["record_id"] for r in records]
    assert [c.text for c in first] == [r["text"] for r in records]
    assert [c.source() for c in first] == [r["source"] for r in records]
    embed = {c.record_id: c.embed_text for c in first}
    assert all("\u21a9" not in text for text in embed.values())
    assert embed["ch01-v01-04"].startswith("Laying Plans: Sun Tzǔ said")  # not "Plans168"
    assert "whole and intact; to shatter" in embed["ch03-v01-02"] and "them. Hence to fight" in embed["ch03-v01-02"]


def _fake_encoder(texts: list[str]) -> np.ndarray:
    """Deterministic unit vectors from the text bytes: the rebuild test needs no model."""
    out = np.zeros((len(texts), DIMS), np.float32)
    for i, text in enumerate(texts):
        data = np.frombuffer(text.encode("utf-8")[: DIMS * 4].ljust(DIMS, b"\x01"), dtype=np.uint8)
        out[i, : min(len(data), DIMS)] = data[:DIMS] + 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.mark.slow
def test_rebuild_writes_the_same_package_but_vectors(tmp_path: Path) -> None:
    one = build(tmp_path / "one", EPUB, encode=_fake_encoder)
    two = build(tmp_path / "two", EPUB, encode=_fake_encoder)
    for name in ("book.md", "SKILL.md", "vectors.json", "index.sqlite", "book-package.json"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    for name in ("book.md", "SKILL.md", "vectors.json"):
        assert (one / name).read_bytes() == (PACKAGE / name).read_bytes(), name
    info = PackageInspector().inspect(one)
    assert PackageValidator().validate(info) is not None
