"""Shared fixtures. Every test runs with a temporary home: nothing touches the real one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Two test workers on two cores: one BLAS thread each (set before numpy is imported).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

from tests.support import plugins as plugin_support
from tests.support.package_builder import build_package


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis keeps its example database and caches outside the checkout (not ./.hypothesis)."""
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "book-agent-tests-hypothesis")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("BOOK_AGENT_HOME", str(home / "book-agent-data"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("HF_HOME", str(home / "hf"))
    # empty means unset (settings.py); set, so a value the CLI's --library-backend puts there is undone
    monkeypatch.setenv("BOOK_AGENT_LIBRARY_BACKEND", "")
    monkeypatch.setenv("BOOK_AGENT_MILVUS_URI", "")  # a test that wants Milvus names its own server
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(home / name.lower()))
    return home


@pytest.fixture(scope="session")
def milvus_uri(tmp_path_factory: pytest.TempPathFactory):
    """A Milvus server for the library backend's tests: $BOOK_AGENT_TEST_MILVUS_URI when set,
    else milvus-lite on a free loopback port (one per test worker, for the whole session).
    Missing milvus-lite skips locally and fails under CI=true (tests/support/parts.py)."""
    from tests.support import milvus

    yield from milvus.session_server(tmp_path_factory)


@pytest.fixture(scope="session")
def _installed_plugins() -> frozenset[tuple[str, str, str, str]]:
    return plugin_support.installed_plugins()


@pytest.fixture(autouse=True)
def only_builtin_rerankers(monkeypatch: pytest.MonkeyPatch, _installed_plugins) -> None:
    """Reranker discovery sees the built-ins and what a test installs, never the plug-ins
    installed in the environment (see tests/support/plugins.py)."""
    from book_agent_adapters.plugins import entry_points

    monkeypatch.setattr(entry_points, "metadata", plugin_support.WithoutInstalledPlugins(_installed_plugins))


@pytest.fixture
def example_plugin(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Opt-in: examples/reranker-plugin installed (from its source folder) for this test."""
    site = tmp_path_factory.mktemp("example-plugin-site")
    for folder in reversed(plugin_support.install_example(site)):
        monkeypatch.syspath_prepend(folder)
    plugin_support.forget_example()
    yield
    plugin_support.forget_example()


@pytest.fixture(scope="session")
def pdf_package_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid PDF package built once per session. Copy it before changing anything."""
    return build_package(tmp_path_factory.mktemp("pdf-template") / "pkg", kind="pdf")


@pytest.fixture(scope="session")
def epub_package_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_package(tmp_path_factory.mktemp("epub-template") / "pkg", kind="epub")


@pytest.fixture
def pdf_package(tmp_path: Path, pdf_package_template: Path) -> Path:
    import shutil

    return Path(shutil.copytree(pdf_package_template, tmp_path / "pdf-package", symlinks=True))


@pytest.fixture
def epub_package(tmp_path: Path, epub_package_template: Path) -> Path:
    import shutil

    return Path(shutil.copytree(epub_package_template, tmp_path / "epub-package", symlinks=True))


@pytest.fixture
def loopback_server():
    """A real HTTP server on 127.0.0.1 (see tests/support/loopback.py); scripted per test."""
    from tests.support.loopback import LoopbackServer

    with LoopbackServer() as server:
        yield server


@pytest.fixture(autouse=True)
def no_library_writer_left_running():
    """A server built in this process (an in-process MCP client) starts a background library
    writer and is not always closed by its test: stop what a test left, so no writer thread (nor
    its child) outlives it."""
    yield
    from book_agent.services.library.writer import running_writers

    for writer in running_writers():
        writer.stop()
