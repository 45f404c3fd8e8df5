"""What a newcomer meets before any code runs: the demo needs neither npm nor the Codex CLI,
the tests still install and use it, and the published metadata is complete (a LICENSE that
ships, classifiers, a long description whose links are files the sdist carries)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib

import pytest

from tests.support import REPO_ROOT


def make_dry_run(target: str) -> str:
    if shutil.which("make") is None:
        pytest.fail("make is missing: the README's two commands need it")
    done = subprocess.run(["make", "-n", "-B", "--no-print-directory", target], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_demo_needs_neither_npm_nor_the_codex_cli() -> None:
    plan = make_dry_run("demo")
    assert "tools/dev/demo.py" in plan
    assert "install_codex_cli" not in plan and "npm" not in plan


def test_make_test_installs_the_codex_cli_and_goes_on_without_it() -> None:
    plan = make_dry_run("test")
    assert "install_codex_cli.sh" in plan
    line = next(line for line in plan.splitlines() if "install_codex_cli.sh" in line)
    assert "||" in line  # a machine without npm still runs the tests (they skip, or fail under CI=true)


def project() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_license_ships_and_the_metadata_is_complete() -> None:
    meta = project()
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    text = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "book-agent contributors" in text
    classifiers = set(meta["classifiers"])
    for version in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # PEP 639: the expression says it


def test_every_link_of_the_long_description_is_a_file_the_sdist_ships() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    shipped = [line.split()[1] for line in (REPO_ROOT / "MANIFEST.in").read_text().splitlines()
               if line.startswith("graft ")]
    links = re.findall(r"\]\(([^)#\s]+)", readme)
    assert links
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        assert (REPO_ROOT / link).exists(), link
        assert link.split("/")[0] in shipped or link in ("LICENSE", "README.md"), link
