"""Issue 25, item 4: every command has two forms, and each is what it says.

- with `--json`, stdout is exactly ONE JSON document (`--version` included): strict UTF-8,
  nothing before or after it;
- without it, stdout is text laid out for people: no block of raw JSON (a line that is a
  lone brace or bracket, or a `"key": value` line). Before this test, `status`, `prepare`,
  `configure`, `host detect` and `host verify` printed their data as indented JSON.

Exempt from the second rule, on purpose: `host instructions` and the install plan's diff,
whose JSON snippet is there to be pasted into a host's config.
Long work reports phases on a terminal's stderr: book, phase, done/total and time left.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from book_agent.agent import build_agent
from book_agent.cli.progress import phase_progress
from tests.support.cli_support import run_cli
from tests.support.package_builder import build_package

JSON_LINE = re.compile(r'^\s*(?:[{}\[\]],?|"[^"\n]+":\s.*)$', re.MULTILINE)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, pdf_package_template: Path) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("forms")
    data, home = base / "data", base / "home"
    home.mkdir()
    epub = build_package(base / "epub", book_id="epub-book", kind="epub")
    for package in (pdf_package_template, epub):
        assert run_cli("--data-dir", str(data), "init", str(package), "--json").code == 0
    questions = base / "questions.jsonl"
    questions.write_text(json.dumps({"query": "water and terrain", "relevant": ["r0001"]}) + "\n", encoding="utf-8")
    return {"data": data, "home": home, "questions": questions, "package": pdf_package_template}


COUNT = 26  # the commands below: a command added there must be added here too


def commands(paths: dict[str, Path]) -> list[list[str]]:
    home = ["--home", str(paths["home"])]
    return [
        ["inspect", str(paths["package"])], ["list"], ["status", "test-book"], ["status", "test-book", "--verify"],
        ["status", "epub-book"], ["prepare", "test-book"], ["prepare", "@all"], ["prepare", "test-book,epub-book"],
        ["configure", "test-book"], ["configure", "epub-book", "--reranker", "none"],
        ["search", "test-book", "water"], ["search", "@all", "water"], ["read", "test-book", "r0001"],
        ["markdown", "test-book", "--record", "r0001"], ["skill", "test-book"],
        ["locate", "test-book", "--record", "r0001"], ["render", "test-book", "0"], ["eval", "test-book", str(paths["questions"])],
        ["plugins"], *(["host", "detect", host, *home] for host in ("codex", "trae", "workbuddy", "cherry-studio")),
        ["host", "verify", "trae", "test-book", *home], ["host", "uninstall", "trae", "test-book", *home],
        ["init", str(paths["package"])],
    ]


def _ids(argv: list[str]) -> str:
    return " ".join(a for a in argv if not a.startswith("/"))


@pytest.mark.parametrize("index", range(COUNT))
def test_json_is_exactly_one_document(library: dict[str, Path], index: int) -> None:
    argv = commands(library)[index]
    result = run_cli("--data-dir", str(library["data"]), *argv, "--json")
    text = result.stdout.decode("utf-8")  # strict: invalid bytes fail here
    document, end = json.JSONDecoder().raw_decode(text.lstrip())
    assert text.lstrip()[end:].strip() == "", f"{_ids(argv)}: more than one document"
    assert isinstance(document, dict) and "error" not in document, (_ids(argv), document)


@pytest.mark.parametrize("index", range(COUNT))
def test_human_output_has_no_raw_json(library: dict[str, Path], index: int) -> None:
    argv = commands(library)[index]
    result = run_cli("--data-dir", str(library["data"]), *argv)
    text = result.stdout.decode("utf-8")
    assert text.strip(), f"{_ids(argv)} printed nothing"
    assert result.code in (0, 1), result.stderr  # verify exits 1 for "not installed"
    found = JSON_LINE.findall(text)
    assert not found, f"{_ids(argv)} printed JSON lines: {found[:3]}\n{text}"


def test_the_command_list_is_the_one_tested() -> None:
    assert len(commands({k: Path("/x") for k in ("data", "home", "questions", "package")})) == COUNT


def test_the_json_line_detector_catches_what_status_used_to_print() -> None:
    before = json.dumps({"book_id": "b", "package": {"healthy": True, "changed_files": []}}, indent=2)
    assert len(JSON_LINE.findall(before)) >= 4
    assert not JSON_LINE.findall("capabilities\n  lexical search  yes\n  note: {curly} words \"quoted\" here")


@pytest.mark.parametrize("args", [["--version", "--json"], ["--json", "--version"]])
def test_version_with_json_is_a_document(args: list[str]) -> None:
    from book_agent import __version__

    result = run_cli(*args)
    assert result.code == 0 and result.json == {"name": "book-agent", "version": __version__}
    plain = run_cli("--version")
    assert plain.stdout.decode() == f"book-agent {__version__}\n"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_long_work_shows_each_book_and_phase_with_an_estimate(tmp_path: Path, pdf_package_template: Path) -> None:
    data = tmp_path / "data"
    epub = build_package(tmp_path / "epub", book_id="epub-book", kind="epub")
    with build_agent(data) as agent:
        for package in (pdf_package_template, epub):
            agent.init(package)
        for book in ("test-book", "epub-book"):  # make both stale: prepare rebuilds them
            (data / "books" / book / "lexical.sqlite").unlink()
        terminal = FakeTerminal()
        with phase_progress(terminal) as phases:
            agent.prepare("@all", phases=phases)
    shown = terminal.getvalue()
    for label in ("book 1/2 epub-book: lexical index", "book 2/2 test-book: lexical index",
                  "library: lexical index"):
        assert label in shown, shown
    assert "left" in shown and re.search(r"\d+/\d+", shown), shown


def test_progress_is_silent_off_a_terminal(tmp_path: Path, pdf_package: Path) -> None:
    pipe = io.StringIO()
    with phase_progress(pipe) as phases, build_agent(tmp_path / "data") as agent:
        agent.init(pdf_package, phases=phases)
    assert pipe.getvalue() == ""


def test_init_names_its_phases(tmp_path: Path, pdf_package: Path) -> None:
    archive = Path(shutil.make_archive(str(tmp_path / "book"), "zip", pdf_package))
    terminal = FakeTerminal()
    with phase_progress(terminal) as phases, build_agent(tmp_path / "data") as agent:
        agent.init(archive, phases=phases)
    shown = terminal.getvalue()
    assert "importing book.zip" in shown and "test-book: lexical index" in shown, shown
