"""The CLI as a user runs it: real processes, global options anywhere, one JSON document out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from book_agent.cli.argv import ArgvError, split_global_options


def run_cli(*args: str, data_dir: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if data_dir is not None:
        env["BOOK_AGENT_HOME"] = str(data_dir)
    return subprocess.run([sys.executable, "-m", "book_agent", *args], capture_output=True, text=True,
                          env=env, input=stdin, timeout=120)


@pytest.mark.parametrize(
    ("argv", "data_dir", "json_flag", "rest"),
    [
        (["--json", "search", "b", "q"], None, True, ["search", "b", "q"]),
        (["search", "b", "q", "--json"], None, True, ["search", "b", "q"]),
        (["search", "--data-dir", "/d", "b", "q"], "/d", False, ["search", "b", "q"]),
        (["--data-dir=/d", "list"], "/d", False, ["list"]),
        (["search", "b", "--", "--json"], None, False, ["search", "b", "--", "--json"]),
    ],
)
def test_global_options_are_lifted_from_anywhere(argv, data_dir, json_flag, rest):
    options, remaining = split_global_options(argv)
    assert (options.data_dir, options.json, remaining) == (data_dir, json_flag, rest)


def test_data_dir_without_value_is_a_usage_error():
    with pytest.raises(ArgvError):
        split_global_options(["list", "--data-dir"])


def test_init_then_search_end_to_end_with_options_after_the_subcommand(tmp_path, pdf_package):
    data = tmp_path / "data"
    init = run_cli("init", str(pdf_package), "--data-dir", str(data), "--json")
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["book_id"] == "test-book"
    found = run_cli("search", "test-book", "孫子", "--json", "--top-k", "2", "--data-dir", str(data))
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)  # exactly one JSON document
    assert result["hits"][0]["record_id"] == "r0007"
    listing = run_cli("--json", "--data-dir", str(data), "list")
    assert [b["book_id"] for b in json.loads(listing.stdout)["books"]] == ["test-book"]
    human = run_cli("--data-dir", str(data), "search", "test-book", "rivers")
    assert human.returncode == 0 and "test-book#r0003" in human.stdout


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


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["b", "q"], {"book": "b", "query": "q", "top_k": 6, "strict": False, "query_vector": None, "hint": []}),
        (["b", "q", "-k", "3", "--strict", "--hint", "a=1", "--hint=b=2"],
         {"book": "b", "query": "q", "top_k": 3, "strict": True, "query_vector": None, "hint": ["a=1", "b=2"]}),
        (["--top-k=2", "b", "--", "--not-an-option"],
         {"book": "b", "query": "--not-an-option", "top_k": 2, "strict": False, "query_vector": None, "hint": []}),
        (["b", "q", "--help"], None),
        (["b", "q", "--top-k", "many"], None),
        (["b"], None),
        (["b", "q", "--strict=yes"], None),
        (["b", "q", "--colour", "red"], None),
    ],
)
def test_fast_search_parses_exactly_the_search_options(argv, expected):
    from book_agent.cli.search_args import parse_search_argv

    assert parse_search_argv(argv) == expected


def test_fast_path_and_typer_give_the_same_document(tmp_path, pdf_package):
    data = tmp_path / "data"
    assert run_cli("init", str(pdf_package), data_dir=data).returncode == 0
    fast = run_cli("search", "test-book", "rivers", "--json", "-k", "2", data_dir=data)
    code = ("import sys; from book_agent.cli.main import run; "
            "run(['search', 'test-book', 'rivers', '--json', '-k', '2'])")
    env = {**os.environ, "BOOK_AGENT_HOME": str(data)}
    typer_path = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
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
