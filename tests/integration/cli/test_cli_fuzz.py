"""Property-based fuzzing of the book-reading CLI commands, in process (issue 13, beyond the findings).

`book-agent --json` with arbitrary text in the arguments of the commands that read a book
(search, read, markdown, locate): exactly one JSON document on stdout, exit code 0 for a
result and non-zero for a coded error, never a traceback, and the package unchanged.
Text that argv cannot carry as UTF-8 (lone surrogates) belongs to the CLI's own argv checks
and is not generated here; the MCP fuzz covers it on its side.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from book_agent.agent import BookAgent
from book_agent.cli.entry import run
from tests.support.package_builder import tree_fingerprint

BOOK = "test-book"
CODE = re.compile(r"^[a-z_]+\.[a-z_]+$")
text = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40),
    st.text(alphabet="\x01ab -\n", min_size=1, max_size=20),
    st.sampled_from(["r0001", "water", "--json", "-x", "兵者", " "]),
    st.sampled_from([4001, 20_001, 100_000]).map(lambda n: ("water shapes " * n)[:n]),
)
commands = st.one_of(
    st.builds(lambda q: ["search", BOOK, q], text),
    st.builds(lambda q, k: ["search", BOOK, q, "--top-k", k], text, st.sampled_from(["0", "5", "101", "x", "-1"])),
    st.builds(lambda r: ["read", BOOK, r], text),
    st.builds(lambda h: ["markdown", BOOK, "--heading", h], text),
    st.builds(lambda q: ["locate", BOOK, "--quote", q], text),
    st.builds(lambda r: ["locate", BOOK, "--record", r], text),
    st.builds(lambda b, q: ["locate", b, "--quote", q], text, text),
)


@pytest.fixture
def book(tmp_path: Path, pdf_package_template: Path) -> tuple[Path, Path]:
    package = Path(shutil.copytree(pdf_package_template, tmp_path / "pkg", symlinks=True))
    BookAgent(tmp_path / "data").init(package)
    return tmp_path / "data", package


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = 0
    try:
        run(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _fuzz(book: tuple[Path, Path], capsys: pytest.CaptureFixture[str], examples: int) -> None:
    data_dir, package = book
    before = tree_fingerprint(package)

    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(commands)
    def one(argv: list[str]) -> None:
        code, out, err = _run(capsys, ["--data-dir", str(data_dir), "--json", *argv])
        assert "Traceback" not in out and "Traceback" not in err, err[-2000:]
        document: Any = json.loads(out)  # exactly one JSON document (json.loads refuses trailing data)
        if isinstance(document, dict) and "error" in document:
            assert code != 0 and CODE.match(document["error"]["code"]), document
        else:
            assert code == 0, out[:500]

    one()
    assert tree_fingerprint(package) == before


def test_fuzzed_cli_commands_print_one_json_document(book: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _fuzz(book, capsys, examples=20)


@pytest.mark.slow
def test_fuzzed_cli_commands_print_one_json_document_at_length(book: tuple[Path, Path],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _fuzz(book, capsys, examples=60)  # each example is a cold CLI run (opens and normalises the book)
