"""Issue 13, findings 6, 7 and 8: whatever the input, `--json` ends in exactly one valid UTF-8
JSON document, a result or a coded error, never a traceback and never a hang.

Inputs tried: undecodable bytes in argv, deeply nested JSON, a data dir that is a file, a
registry with malformed entries, devices and oversized files where a file is expected,
archive members with undecodable names. Run in-process through the console-script entry
(tests/support/cli_support.py); argv bytes also through a real process.
"""

from __future__ import annotations

import json
import os
import tarfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.cli.output import json_text
from tests.support.cli_support import run_cli

BAD = b"\xff\xfe"  # not UTF-8: Python keeps it as the lone surrogates \udcff \udcfe


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, pdf_package_template: Path) -> Path:
    folder = tmp_path_factory.mktemp("one-doc") / "data"
    assert run_cli("--data-dir", str(folder), "init", str(pdf_package_template), "--json").code == 0
    return folder


def one_error(result, *codes: str) -> dict:
    assert result.code != 0, result.stdout
    assert "Traceback" not in result.stderr
    error = result.json["error"]  # exactly one document, strict UTF-8
    assert error["code"] in codes, error
    return error


@pytest.mark.parametrize(("argv", "codes"), [
    (["read", "test-book", BAD], ("record.not_found",)),
    (["markdown", "test-book", "--record", BAD], ("record.not_found",)),
    (["markdown", "test-book", "--heading", BAD + b" x"], ("markdown.heading_not_found",)),
    (["locate", "test-book", "--record", BAD], ("source.record_not_found",)),
    (["status", BAD], ("book.not_registered",)),
    (["search", b"book" + BAD, "q"], ("book.not_registered",)),
    (["configure", "test-book", "--auth-env", BAD], ("config.bad_auth_env",)),
    (["configure", "test-book", "--allowed-endpoint", b"https://a" + BAD + b".example/v1"], ("config.bad_endpoint",)),
    (["init", b"/nowhere/" + BAD], ("package.not_found",)),
    (["eval", "test-book", b"/nowhere/" + BAD], ("eval.bad_questions",)),
])
def test_undecodable_argv_bytes_end_in_one_coded_error(data: Path, argv: list, codes: tuple) -> None:
    error = one_error(run_cli("--data-dir", str(data), *argv, "--json"), *codes)
    assert "\\udc" not in json.dumps(error["details"])  # shown as the bytes \xff\xfe, not surrogates


def test_undecodable_bytes_in_a_query_still_search(data: Path) -> None:
    result = run_cli("--data-dir", str(data), "search", "test-book", BAD + b" rivers", "--json")
    assert result.code == 0 and result.json["query"] == "\\xff\\xfe rivers"


@pytest.mark.parametrize(("option", "codes"), [
    (["source", "test-book", "--locator-json"], ("cli.bad_json",)),
    (["locate", "test-book", "--hit-json"], ("cli.bad_json",)),
    (["search", "test-book", "q", "--query-vector"], ("query.vector_invalid",)),
    (["eval", "test-book"], ("eval.bad_questions",)),
])
@pytest.mark.parametrize("shape", ["[" * 100_000, '{"a":' * 100_000, "[{" * 60_000])
def test_deeply_nested_json_is_bad_input(data: Path, tmp_path: Path, option: list, codes: tuple, shape: str) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(shape, encoding="utf-8")
    one_error(run_cli("--data-dir", str(data), *option, str(deep), "--json"), *codes)
    if option[0] != "eval":  # and from stdin
        one_error(run_cli("--data-dir", str(data), *option, "-", "--json", stdin=shape.encode()), *codes)


@pytest.mark.parametrize("argv", [["list"], ["init", "PKG"], ["status", "test-book"], ["search", "test-book", "q"],
                                  ["configure", "test-book", "--reranker", "none"], ["remove", "test-book"]])
def test_a_data_dir_that_is_a_file(tmp_path: Path, pdf_package_template: Path, argv: list) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    argv = [str(pdf_package_template) if a == "PKG" else a for a in argv]
    one_error(run_cli("--data-dir", str(blocker), *argv, "--json"), "registry.data_dir_invalid")
    nested = blocker / "data"  # a data dir below a file: cannot even be created
    one_error(run_cli("--data-dir", str(nested), *argv, "--json"), "registry.data_dir_invalid",
              "registry.write_failed", "book.not_registered")


@pytest.mark.parametrize("entry", [["a", "list"], "a string", 42, None, {"book_id": "other"},
                                   {"book_id": "test-book"}, {"book_id": "test-book", "package_root": 7},
                                   {"book_id": "test-book", "package_root": "/x", "fingerprint": 3},
                                   {"book_id": "test-book", "package_root": "/x", "package": "no"}])
def test_a_malformed_registry_entry_is_reported_and_repairable(tmp_path: Path, entry: object) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "registry.json").write_text(json.dumps({"version": 1, "books": {"test-book": entry}}), encoding="utf-8")
    for argv in (["list"], ["status", "test-book"], ["search", "test-book", "q"], ["read", "test-book", "r1"]):
        error = one_error(run_cli("--data-dir", str(data), *argv, "--json"), "registry.corrupt")
        assert "book-agent remove test-book" in error["remediation"]
    assert run_cli("--data-dir", str(data), "remove", "test-book", "--json").code == 0
    assert run_cli("--data-dir", str(data), "list", "--json").json == {"books": []}


@pytest.mark.parametrize(("argv", "codes"), [
    (["search", "test-book", "q", "--query-vector", "FILE"], ("cli.input_too_large",)),
    (["source", "test-book", "--locator-json", "FILE"], ("cli.input_too_large",)),
    (["locate", "test-book", "--hit-json", "FILE"], ("cli.input_too_large",)),
    (["eval", "test-book", "FILE"], ("eval.questions_too_large",)),
])
@pytest.mark.parametrize("source", ["/dev/zero", "sparse", "stdin"])
def test_unbounded_inputs_end_quickly(data: Path, tmp_path: Path, argv: list, codes: tuple, source: str) -> None:
    stdin = b""
    if source == "sparse":  # a huge regular file that costs no disk
        big = tmp_path / "big.json"
        with open(big, "wb") as handle:
            handle.truncate(1 << 30)
        name = str(big)
    elif source == "stdin":
        if argv[0] == "eval":
            return  # eval names a file; `-` is not stdin there
        name, stdin = "-", b" " * ((16 << 20) + 1)
    else:
        name = source
    started = time.monotonic()
    result = run_cli("--data-dir", str(data), *[name if a == "FILE" else a for a in argv], "--json", stdin=stdin)
    one_error(result, *codes)
    assert time.monotonic() - started < 20


def test_oversized_registry_and_config_are_refused_not_read(tmp_path: Path, pdf_package_template: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init", str(pdf_package_template), "--json").code == 0
    with open(data / "books" / "test-book" / "config.json", "r+b") as handle:
        handle.truncate(1 << 30)
    one_error(run_cli("--data-dir", str(data), "search", "test-book", "q", "--json"), "config.invalid")
    with open(data / "registry.json", "r+b") as handle:
        handle.truncate(1 << 30)
    one_error(run_cli("--data-dir", str(data), "list", "--json"), "registry.corrupt")


def _undecodable_tar(path: Path) -> Path:
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape") as tar:
        info = tarfile.TarInfo(os.fsdecode(b"pkg/" + BAD + b".md"))
        info.size = 1
        tar.addfile(info, __import__("io").BytesIO(b"x"))
    return path


@pytest.mark.parametrize("command", ["inspect", "init"])
def test_undecodable_archive_member_names_are_valid_utf8_json(tmp_path: Path, command: str) -> None:
    archive = _undecodable_tar(tmp_path / "book.tar")
    error = one_error(run_cli("--data-dir", str(tmp_path / "data"), command, str(archive), "--json"),
                      "archive.bad_name")
    assert error["details"]["member"] == "pkg/\\xff\\xfe.md"  # the bytes, readable and valid UTF-8
    human = run_cli("--data-dir", str(tmp_path / "data"), command, str(archive))
    assert human.code != 0 and "Traceback" not in human.stderr and "archive.bad_name" in human.stderr


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.text(st.characters(codec=None)) | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(st.characters(codec=None), max_size=5), inner, max_size=4),
                    max_leaves=12))
def test_any_field_makes_valid_utf8_json(data: object) -> None:
    text = json_text(data)
    json.loads(text.encode("utf-8").decode("utf-8"))  # encodable, and one JSON document
    plain = json_text(json.loads(json.dumps(data, ensure_ascii=True)))
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(data, ensure_ascii=False)):
        assert json.loads(plain) == data  # and nothing else changed


@pytest.mark.parametrize("json_mode", [True, False])
@pytest.mark.parametrize("debug", ["", "1"])
def test_an_untranslated_exception_is_one_coded_error(capsysbinary: pytest.CaptureFixture[bytes],
                                                      monkeypatch: pytest.MonkeyPatch, json_mode: bool,
                                                      debug: str) -> None:
    from book_agent.cli.argv import GlobalOptions
    from book_agent.cli.main import guarded

    monkeypatch.setenv("BOOK_AGENT_DEBUG", debug)

    def bug() -> None:
        raise TypeError("'int' object is not subscriptable \udcff")

    with pytest.raises(SystemExit) as info:
        guarded(bug, GlobalOptions(json=json_mode))
    out, err = capsysbinary.readouterr()
    assert info.value.code == 1
    assert (b"Traceback" in err) == bool(debug) and b"Traceback" not in out
    if json_mode:
        error = json.loads(out.decode("utf-8"))["error"]
        assert error["code"] == "cli.internal_error" and error["details"] == {"exception": "TypeError"}
        assert "--debug" in error["remediation"]
    else:
        assert out == b"" and b"cli.internal_error" in err


@pytest.mark.parametrize(("blocked", "argv", "code"), [
    ("renders", ["render", "test-book", "0"], "render.write_failed"),
    ("config.json/", ["configure", "test-book", "--reranker", "none"], "config.invalid"),
    ("", ["prepare", "test-book"], "book.runtime_dir_failed"),
])
def test_file_system_failures_are_coded_where_they_arise(tmp_path: Path, pdf_package_template: Path, blocked: str,
                                                        argv: list, code: str) -> None:
    data = tmp_path / "data"
    assert run_cli("--data-dir", str(data), "init", str(pdf_package_template), "--json").code == 0
    runtime = data / "books" / "test-book"
    if blocked == "":  # the whole runtime dir replaced by a file
        __import__("shutil").rmtree(runtime)
        runtime.write_text("in the way", encoding="utf-8")
    elif blocked.endswith("/"):  # a folder where a file goes
        (runtime / blocked.rstrip("/")).unlink()
        (runtime / blocked.rstrip("/")).mkdir()
    else:  # a file where a folder goes
        (runtime / blocked).write_text("in the way", encoding="utf-8")
    one_error(run_cli("--data-dir", str(data), *argv, "--json"), code)


def test_a_huge_listed_file_is_not_hashed_when_its_size_is_wrong(tmp_path: Path, pdf_package: Path) -> None:
    with open(pdf_package / "book.md", "r+b") as handle:
        handle.truncate(8 << 30)  # 8 GiB, sparse: hashing it would take minutes
    started = time.monotonic()
    result = run_cli("--data-dir", str(tmp_path / "data"), "inspect", str(pdf_package), "--json")
    assert result.code == 1 and "package.size_mismatch" in {d["code"] for d in result.json["diagnostics"]}
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("argv", [["search", "test-book", BAD + b" rivers"], ["read", "test-book", BAD],
                                  ["markdown", "test-book", "--heading", BAD]])
def test_human_output_with_undecodable_bytes_does_not_crash(data: Path, argv: list) -> None:
    result = run_cli("--data-dir", str(data), *argv)
    assert "Traceback" not in result.stderr and "internal_error" not in result.stderr
    result.stdout.decode("utf-8")  # still valid UTF-8 on a terminal
