"""The library backend seam, for real: a third-party backend installed as a distribution (a
dist-info with an entry point in the group `book_agent.library_backends`) is chosen by
--library-backend, BOOK_AGENT_LIBRARY_BACKEND or the data dir's config.toml, in that order,
and serves `search @all` byte for byte as the local backend does; unknown and broken
backends are coded errors; a one-book search never loads a backend."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from book_agent import BookAgent
from book_agent.agent import build_agent
from book_agent.domain.errors import BookAgentError
from tests.support import REPO_ROOT
from tests.support.library_support import corpus, make_book

PLUGIN = '''
import json
from book_agent.domain.library import LibraryBackendSetting
from book_agent_adapters.library.local import create_local


def recorder(data_dir, setting):
    """The local backend, recording that it was chosen (and how) in the data dir."""
    (data_dir / "recorder-used.json").write_text(json.dumps(
        {"name": setting.name, "source": setting.source, "options": dict(setting.options)}))
    return create_local(data_dir, LibraryBackendSetting("local", setting.source))


def raising(data_dir, setting):
    raise RuntimeError("cannot reach the engine")


def not_a_backend(data_dir, setting):
    return object()
'''
ENTRIES = {"recorder": "recorder_backend:recorder", "raising": "recorder_backend:raising",
           "hollow": "recorder_backend:not_a_backend", "missing": "no_such_module:create"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    info = site / "recorder_backend-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: recorder-backend\nVersion: 1.0\n")
    lines = "\n".join(f"{name} = {value}" for name, value in ENTRIES.items())
    (info / "entry_points.txt").write_text(f"[book_agent.library_backends]\n{lines}\n")
    (site / "recorder_backend.py").write_text(textwrap.dedent(PLUGIN))
    return site


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("backend-library")
    data = root / "data"
    records = corpus(30)
    with BookAgent(data) as agent:
        for part in range(2):
            agent.init(make_book(root / "books", f"part-{part}", records[part::2]))
        agent.search("@all", "river", top_k=1)  # builds the library index: every run below finds it fresh
    return data


def cli(site: Path, data: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)]),
               "BOOK_AGENT_LIBRARY_BACKEND": "", **(env or {})}
    return subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), *args], env=environ,
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)


def untimed(stdout: str) -> str:
    """The output with its timings (`*_ms`) blanked: everything else must match byte for byte."""
    return re.sub(r'"(\w+_ms)": [0-9.]+', r'"\1": 0', stdout)


def used(data: Path) -> dict[str, object] | None:
    marker = data / "recorder-used.json"
    if not marker.exists():
        return None
    found = json.loads(marker.read_text())
    marker.unlink()
    return found


def test_a_plugin_backend_is_chosen_in_order_and_answers_as_the_local_one(site: Path, library: Path) -> None:
    query = ("search", "@all", "river water battle", "--json")
    local = cli(site, library, *query)
    assert local.returncode == 0, local.stderr
    assert json.loads(local.stdout)["hits"] and used(library) is None
    by_option = cli(site, library, "--library-backend", "recorder", *query, env={"BOOK_AGENT_LIBRARY_BACKEND": "x"})
    assert untimed(by_option.stdout) == untimed(local.stdout)
    assert used(library) == {"name": "recorder", "source": "environment", "options": {}}
    (library / "config.toml").write_text('[library]\nbackend = "recorder"\n[library.recorder]\nflavour = "x"\n')
    try:
        assert untimed(cli(site, library, *query).stdout) == untimed(local.stdout)
        assert used(library) == {"name": "recorder", "source": "config", "options": {"flavour": "x"}}
        assert untimed(cli(site, library, *query, env={"BOOK_AGENT_LIBRARY_BACKEND": "local"}).stdout) \
            == untimed(local.stdout)
        assert used(library) is None  # the environment outranks the config
    finally:
        (library / "config.toml").unlink()


def test_unknown_and_broken_backends_are_coded_errors(site: Path, library: Path) -> None:
    unknown = cli(site, library, "--library-backend", "nope", "search", "@all", "river", "--json")
    error = json.loads(unknown.stdout)["error"]
    assert unknown.returncode == 1 and error["code"] == "library.unknown_backend"
    assert {"local", "recorder"} <= set(error["details"]["available"]) and "recorder" in error["message"]
    assert error["remediation"]
    script = ("import json, sys\nfrom pathlib import Path\nfrom book_agent.domain.errors import BookAgentError\n"
              "from book_agent.domain.library import LibraryBackendSetting\n"
              "from book_agent_adapters.library.backends import load_backend\nout = {}\n"
              "for name in ('raising', 'hollow', 'missing'):\n"
              "    try:\n        load_backend(Path(sys.argv[1]), LibraryBackendSetting(name, 'argument'))\n"
              "    except BookAgentError as exc:\n        out[name] = [exc.code, exc.message]\n"
              "print(json.dumps(out))\n")
    broken = subprocess.run([sys.executable, "-c", script, str(library)], capture_output=True, text=True,
                            timeout=120, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(site)})
    found = json.loads(broken.stdout)
    for name, why in (("raising", "cannot reach the engine"), ("hollow", "not a LibraryBackend"),
                      ("missing", "no_such_module")):
        assert found[name][0] == "library.backend_failed" and why in found[name][1], found
    one_book = cli(site, library, "--library-backend", "nope", "search", "part-0", "river", "--json")
    assert one_book.returncode == 0 and json.loads(one_book.stdout)["hits"]  # no backend is loaded for one book


def test_the_python_api_names_a_backend(library: Path) -> None:
    with build_agent(library, library_backend="nope") as agent:
        with pytest.raises(BookAgentError) as caught:
            agent.search("@all", "river", top_k=3)
        assert caught.value.code == "library.unknown_backend" and "local" in caught.value.details["available"]
        assert agent.search("part-1", "river", top_k=3)["hits"]
    with build_agent(library, library_backend="local") as agent:
        assert agent.search("@all", "river", top_k=3)["hits"]
