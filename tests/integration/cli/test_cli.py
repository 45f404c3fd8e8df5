"""The CLI as a user runs it, in-process through the console script's entry function
(tests/support/cli_support.py): global options anywhere, one JSON document out. The same
runs through real processes are in tests/e2e/test_cli_process.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from tests.support.cli_support import run_cli as run_entry


class Out(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, data_dir: Path | None = None, stdin: str | None = None, entry=None) -> Out:
    env = {"BOOK_AGENT_HOME": str(data_dir)} if data_dir is not None else None
    result = run_entry(*args, stdin=(stdin or "").encode(), env=env, entry=entry)
    return Out(result.code, result.stdout.decode("utf-8"), result.stderr)


def test_errors_are_one_json_document_and_a_non_zero_exit(tmp_path):
    result = run_cli("search", "missing-book", "q", "--json", data_dir=tmp_path / "data")
    assert result.returncode != 0
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "book.not_registered" and error["remediation"]
    assert set(error) >= {"code", "message", "details", "remediation"}


def test_usage_errors_in_json_mode_are_json(tmp_path):
    result = run_cli("search", "--json", "--top-k", "lots", "b", "q", data_dir=tmp_path / "data")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "cli.usage"


def test_readable_errors_go_to_stderr(tmp_path):
    result = run_cli("status", "missing-book", data_dir=tmp_path / "data")
    assert result.returncode == 1 and result.stdout == ""
    assert "book.not_registered" in result.stderr and "fix:" in result.stderr


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("init", "search", "status", "prepare", "inspect", "list", "configure"):
        assert command in result.stdout


def test_query_vector_from_stdin_must_be_an_array(tmp_path, pdf_package):
    data = tmp_path / "data"
    assert run_cli("init", str(pdf_package), data_dir=data).returncode == 0
    bad = run_cli("search", "test-book", "q", "--query-vector", "-", "--json", data_dir=data, stdin='{"a": 1}')
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["code"] == "query.vector_invalid"


def test_fast_path_and_typer_give_the_same_document(tmp_path, pdf_package):
    data = tmp_path / "data"
    assert run_cli("init", str(pdf_package), data_dir=data).returncode == 0
    fast = run_cli("search", "test-book", "rivers", "--json", "-k", "2", data_dir=data)
    from book_agent.cli.main import run as typer_run

    typer_path = run_cli("search", "test-book", "rivers", "--json", "-k", "2", data_dir=data, entry=typer_run)
    assert fast.returncode == typer_path.returncode == 0, typer_path.stderr
    first, second = json.loads(fast.stdout), json.loads(typer_path.stdout)
    first.pop("elapsed_ms"), second.pop("elapsed_ms")
    assert first == second
    assert run_cli("search", "--help", data_dir=data).stdout.count("--top-k") >= 1


def test_markup_in_queries_and_book_text_is_printed_literally(tmp_path, pdf_package):
    data = tmp_path / "data"
    assert run_cli("init", str(pdf_package), data_dir=data).returncode == 0
    out = run_cli("search", "test-book", "[/bold] rivers [red]flooding[/red]", data_dir=data)
    assert out.returncode == 0, out.stderr
    assert "[/bold] rivers [red]flooding[/red]" in out.stdout


def test_inspect_of_a_broken_package_reports_and_exits_non_zero(tmp_path, pdf_package):
    (pdf_package / "book.md").write_text("tampered", encoding="utf-8")
    out = run_cli("inspect", str(pdf_package), "--json", data_dir=tmp_path / "data")
    assert out.returncode == 1
    assert any(d["code"] == "package.hash_mismatch" for d in json.loads(out.stdout)["diagnostics"])


def test_version_and_remove(tmp_path, pdf_package):
    assert run_cli("--version").stdout.startswith("book-agent ")
    data = tmp_path / "data"
    assert run_cli("init", str(pdf_package), data_dir=data).returncode == 0
    removed = run_cli("remove", "test-book", "--json", data_dir=data)
    assert removed.returncode == 0 and json.loads(removed.stdout)["removed"] is True
    assert json.loads(run_cli("list", "--json", data_dir=data).stdout)["books"] == []
    assert (pdf_package / "book-package.json").exists()  # registered in place: never touched


def test_usage_hint_names_the_command_once(tmp_path):
    out = run_cli("--json", "serch", "x", data_dir=tmp_path / "data")
    assert json.loads(out.stdout)["error"]["remediation"] == "run `book-agent --help`"


def test_a_negative_page_index_is_bad_input_not_an_unknown_option(tmp_path, pdf_package):
    data = tmp_path / "data"
    assert run_cli("init", str(pdf_package), data_dir=data).returncode == 0
    out = run_cli("render", "test-book", "-1", "--json", data_dir=data)
    assert out.returncode == 1 and json.loads(out.stdout)["error"]["code"] == "source.page_out_of_range"
