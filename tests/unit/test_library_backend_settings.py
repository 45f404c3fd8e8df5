"""Which library backend serves: argument, then BOOK_AGENT_LIBRARY_BACKEND (--library-backend),
then the data dir's config.toml, then "local"; the backend's options from its own table."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent.bootstrap import build_ports
from book_agent.cli.argv import split_global_options
from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import APPROXIMATE_MIN_VECTORS, LibraryBackendSetting
from book_agent.ports.library import LibraryIndex, LibraryVectorIndexes
from book_agent.settings import ENV_LIBRARY_BACKEND, library_backend_setting
from book_agent_adapters.library.local import create_local

CONFIG = '[library]\nbackend = "engine"\n\n[library.engine]\nuri = "http://127.0.0.1:19530"\nshards = 2\n'


def choose(data: Path, explicit: str | None = None, env: str | None = None) -> tuple[str, str]:
    setting = library_backend_setting(data, explicit, {ENV_LIBRARY_BACKEND: env} if env is not None else {})
    return setting.name, setting.source


@pytest.mark.parametrize(("explicit", "env", "config", "chosen"), [
    (None, None, False, ("local", "default")),
    (None, None, True, ("engine", "config")),
    (None, "other", True, ("other", "environment")),
    ("mine", "other", True, ("mine", "argument")),
    ("  ", "", True, ("engine", "config")),  # blank means unset
    (None, "  other ", False, ("other", "environment")),
])
def test_the_precedence(tmp_path: Path, explicit, env, config, chosen) -> None:
    if config:
        (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    assert choose(tmp_path, explicit, env) == chosen


def test_the_backends_options_are_its_own_table(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(CONFIG, encoding="utf-8")
    assert library_backend_setting(tmp_path, environ={}).options == {"uri": "http://127.0.0.1:19530", "shards": 2}
    assert library_backend_setting(tmp_path, "local", {}).options == {}


@pytest.mark.parametrize("text", ['[library\nbackend = "x"', '[library]\nbackend = 3\n', 'library = 5\n',
                                  '[library]\nbackend = "engine"\nengine = "not a table"\n', "\udcff"])
def test_a_bad_config_is_a_coded_error_naming_the_file(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(BookAgentError) as caught:
        library_backend_setting(tmp_path, environ={})
    assert caught.value.code == "config.invalid" and str(tmp_path / "config.toml") in caught.value.message
    assert caught.value.remediation


def test_a_huge_config_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("# " + "x" * (1 << 20) + "\n", encoding="utf-8")
    with pytest.raises(BookAgentError) as caught:
        library_backend_setting(tmp_path, environ={})
    assert caught.value.code == "config.invalid"


@pytest.mark.parametrize("argv", [["--library-backend", "engine", "search", "@all", "q"],
                                  ["search", "@all", "--library-backend=engine", "q"],
                                  ["search", "@all", "q", "--json", "--library-backend", "engine"]])
def test_the_cli_option_is_lifted_from_anywhere(argv: list[str]) -> None:
    options, rest = split_global_options(argv)
    assert options.library_backend == "engine" and rest == ["search", "@all", "q"]


def test_the_local_backend_takes_its_threshold_and_refuses_other_options(tmp_path: Path) -> None:
    assert create_local(tmp_path, LibraryBackendSetting("local", "default")).vectors.min_vectors \
        == APPROXIMATE_MIN_VECTORS
    assert create_local(tmp_path, LibraryBackendSetting("local", "config", {"min_vectors": 5})).vectors.min_vectors == 5
    for options in ({"min_vectors": 0}, {"min_vectors": "5"}, {"min_vectors": True}, {"nlist": 4}):
        with pytest.raises(BookAgentError) as caught:
            create_local(tmp_path, LibraryBackendSetting("local", "config", options))
        assert caught.value.code == "config.invalid"


def test_the_roots_library_proxies_are_the_roles_by_shape(tmp_path: Path) -> None:
    """They do not subclass the ports (a one-book search must not load ports/library.py), yet
    are what a backend's check and the contract suites ask for; the backend loads on first use."""
    ports = build_ports(tmp_path)
    assert isinstance(ports.library, LibraryIndex)
    assert isinstance(ports.library_vectors, LibraryVectorIndexes)
    assert ports.library_vectors.min_vectors == APPROXIMATE_MIN_VECTORS
