"""Host config files that are not what a host writes: each a coded error or a correct install.

A config (or a backup or skill file) that is a FIFO, a device, a folder or a symlink loop is
refused unopened (host.file_unusable); one that is too large is refused after a bounded read;
shapes a host accepts (`"mcpServers": null`, a lone-surrogate escape, Codex's inline tables)
install correctly and keep what the user wrote; a folder that cannot be written gives
host.write_failed. Never cli.internal_error, never a hang, never a replaced device.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts.facade import HostAdapter
from book_agent_adapters.hosts.files import safe_write
from tests.support.hosts_helpers import make_package, snapshot
from tests.support.parts import require_real_part

FILE_HOSTS = ("codex", "trae", "workbuddy")  # Cherry Studio has no file: it installs by deep link


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> PackageInfo:
    return make_package(tmp_path_factory.mktemp("pkg") / "pkg")


def adapter(host: str, home: Path) -> HostAdapter:
    return HostAdapter(host, home=home, data_dir=home.parent / "data", platform="linux")


def config_of(host: str, home: Path) -> Path:
    path = adapter(host, home).port.config_path()
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _fifo_via_symlink(path: Path) -> None:
    os.mkfifo(path.with_name("elsewhere.fifo"))
    path.symlink_to(path.with_name("elsewhere.fifo"))


def _device(minor: int) -> Callable[[Path], None]:
    """A symlink to a character device made in the test's own folder (1,3 is /dev/null, 1,5
    /dev/zero, 1,9 /dev/urandom): a regression that replaced the device replaces this copy."""
    def make(path: Path) -> None:
        node = path.with_name(f"device-1-{minor}")
        try:
            os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        except PermissionError:
            pytest.skip("making a device node needs CAP_MKNOD")
        path.symlink_to(node)
    return make


UNUSABLE: dict[str, tuple[Callable[[Path], None], str]] = {
    "symlink to a null device": (_device(3), "is a device"),
    "FIFO": (_fifo, "is a FIFO"),
    "symlink to a FIFO": (_fifo_via_symlink, "is a FIFO"),
    "directory": (lambda p: p.mkdir(), "is a directory"),
    "symlink loop": (lambda p: p.symlink_to(p), "is a symlink loop"),
    "17 MiB of spaces": (lambda p: p.write_bytes(b" " * (17 << 20) + b"{}"), "holds more than"),
}
ENDLESS = {"symlink to a zero device": _device(5), "symlink to a urandom device": _device(9), "FIFO": _fifo}


class Hung(Exception):
    pass


@contextlib.contextmanager
def hang_guard(seconds: int = 60) -> Iterator[None]:
    """A blocking open of a FIFO fails the test instead of hanging it (not a speed check)."""
    def hung(*_: object) -> None:
        raise Hung(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("host", FILE_HOSTS)
@pytest.mark.parametrize("case", list(UNUSABLE))
def test_an_unusable_config_is_refused_unopened_in_plan_apply_and_uninstall(
        host: str, case: str, package: PackageInfo, tmp_path: Path) -> None:
    home = tmp_path / "home"
    make, reason = UNUSABLE[case]
    path = config_of(host, home)
    make(path)
    before = _state(path.parent)
    for call in (lambda: adapter(host, home).install(package),
                 lambda: adapter(host, home).install(package, apply=True),
                 lambda: adapter(host, home).uninstall(package, apply=True),
                 lambda: adapter(host, home).verify(package)):
        with hang_guard(), pytest.raises(BookAgentError) as info:
            call()
        assert info.value.code == "host.file_unusable"
        assert reason in info.value.message and info.value.remediation
    assert not (home / ".agents").exists() and not list(home.rglob("*.book-agent.bak"))
    assert _state(path.parent) == before  # nothing replaced, nothing added


def _state(folder: Path) -> dict[Path, tuple[int, int, int, int]]:
    """Each entry's inode, type, size and mtime (not atime: a bounded read may touch it)."""
    return {p: (s.st_ino, s.st_mode, s.st_size, s.st_mtime_ns) for p in folder.iterdir() for s in [os.lstat(p)]}


def test_a_skill_file_that_became_a_device_symlink_is_never_replaced(package: PackageInfo, tmp_path: Path) -> None:
    home = tmp_path / "home"
    adapter("codex", home).install(package, apply=True)
    skill = next((home / ".agents" / "skills").glob("book-*/SKILL.md"))
    skill.unlink()
    _device(3)(skill)
    with pytest.raises(BookAgentError) as info:
        adapter("codex", home).install(package, apply=True)
    assert info.value.code == "host.file_unusable"
    assert skill.resolve().is_char_device()  # the node is still there, not replaced by a file


def test_read_regular_reads_a_bounded_prefix(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 101)
    assert safe_write.read_regular(path, 101) == b"x" * 101
    with pytest.raises(BookAgentError) as info:
        safe_write.read_regular(path, 100)
    assert info.value.code == "host.file_unusable"
    assert safe_write.read_regular(tmp_path / "absent") is None
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert safe_write.read_regular(tmp_path / "dangling") is None


JSON_SHAPES = {
    "mcpServers null": '{"mcpServers": null}',
    "mcpServers null, JSONC": '// mine\n{\n  "theme": "dark", // keep\n  "mcpServers": null,\n}\n',
    "our entry null": '{"mcpServers": {"book-test-book": null, "other": {"command": "x"}}}',
    "lone surrogate value": '{"note": "\\ud800", "mcpServers": {}}',
    "lone surrogate key and pair": '{"\\udc00": "\\ud83d\\ude00", "mcpServers": {"o": {"command": "\\ud800"}}}',
    "lone surrogate, JSONC": '{\n  "note": "\\ud800", // c\n}\n',
}


@pytest.mark.parametrize("host", ("trae", "workbuddy"))
@pytest.mark.parametrize("case", list(JSON_SHAPES))
def test_json_shapes_a_host_accepts_install_and_uninstall_keeping_the_rest(
        host: str, case: str, package: PackageInfo, tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = config_of(host, home)
    original = JSON_SHAPES[case]
    path.write_text(original, encoding="utf-8")
    result = adapter(host, home).install(package, apply=True)
    assert str(path) in result["written"]
    text = path.read_bytes().decode("utf-8")  # strict UTF-8: no surrogate written raw
    data = _load(text)
    assert data["mcpServers"]["book-test-book"]["args"][-1] == "test-book"
    before = _load(original)
    for key, value in before.items():  # every other key survives with its value
        if key != "mcpServers":
            assert data[key] == value
    for name, value in (before.get("mcpServers") or {}).items():
        if name != "book-test-book":
            assert data["mcpServers"][name] == value
    assert "\\ud800" in text or "\\ud800" not in original  # the escape is written back as written
    adapter(host, home).uninstall(package, apply=True)
    assert "book-test-book" not in (_load(path.read_text(encoding="utf-8")).get("mcpServers") or {})


def _load(text: str) -> dict[str, Any]:
    """As a host reads it: JSON (surrogate pairs joined), else JSONC."""
    import json5

    try:
        data: dict[str, Any] = json.loads(text)
    except ValueError:
        data = json5.loads(text)
    return data


TOML_SHAPES = [
    'mcp_servers = { other = { command = "x" } }\n',
    "mcp_servers = {}\n",
    'mcp_servers = { book-test-book = { command = "old" } }\n',
    '[mcp_servers]\nbook-test-book = { command = "old", args = [] }\nother = { command = "y" }\n',
    'mcp_servers.other.command = "x"\n',
    'model = "o3"\n[mcp_servers.other]\ncommand = "x"\n',
]


@pytest.mark.parametrize("original", TOML_SHAPES)
def test_codex_inline_and_dotted_tables_install_as_valid_toml(original: str, package: PackageInfo,
                                                              tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = config_of("codex", home)
    path.write_text(original, encoding="utf-8")
    adapter("codex", home).install(package, apply=True)
    data = tomllib.loads(path.read_text(encoding="utf-8"))  # Codex's own parser is as strict
    ours = data["mcp_servers"]["book-test-book"]
    assert ours["args"][-1] == "test-book" and ours["startup_timeout_sec"] == 30
    for name, value in tomllib.loads(original).get("mcp_servers", {}).items():
        if name != "book-test-book":
            assert data["mcp_servers"][name] == value
    once = path.read_bytes()
    adapter("codex", home).install(package, apply=True)
    assert path.read_bytes() == once  # idempotent
    adapter("codex", home).uninstall(package, apply=True)
    after = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    assert "book-test-book" not in after.get("mcp_servers", {})


@pytest.mark.parametrize("bad", ['a = "\\ud800"\n', '[[mcp_servers]]\ncommand = "x"\n'])
def test_codex_toml_it_would_refuse_is_malformed_and_untouched(bad: str, package: PackageInfo,
                                                               tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = config_of("codex", home)
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(BookAgentError) as info:
        adapter("codex", home).install(package, apply=True)
    assert info.value.code == "host.config_malformed"
    assert path.read_text(encoding="utf-8") == bad


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # an unbounded read fails, not the machine


@pytest.mark.parametrize("case", list(ENDLESS))
def test_cli_host_install_on_an_endless_config_is_one_coded_json_error(case: str, package: PackageInfo,
                                                                      tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    cli = [sys.executable, "-m", "book_agent", "--data-dir", str(data)]
    subprocess.run([*cli, "init", str(package.root), "--json"], check=True, capture_output=True, timeout=300)
    for host in FILE_HOSTS:
        path = config_of(host, home)
        ENDLESS[case](path)
        proc = subprocess.run([*cli, "host", "install", host, "test-book", "--home", str(home), "--apply", "--json"],
                              capture_output=True, timeout=120, preexec_fn=_limit_memory, check=False)  # hang guard
        assert proc.returncode != 0
        assert json.loads(proc.stdout)["error"]["code"] == "host.file_unusable"
        assert b"Traceback" not in proc.stderr
        assert not path.resolve().is_file()  # the FIFO or device is still what it was


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = ["unshare", "-m", "true"] if os.geteuid() == 0 else ["unshare", "-rm", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


READ_ONLY_RUN = """
import sys
from pathlib import Path
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.hosts.facade import HostAdapter
from book_agent_adapters.package.inspector import PackageInspector
home, pkg, host = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
try:
    HostAdapter(host, home=home, data_dir=home.parent / "data", platform="linux").install(
        PackageInspector().inspect(pkg), apply=True)
    print("installed")
except BookAgentError as exc:
    print(exc.code, exc.details.get("errno"))
"""


@pytest.mark.parametrize("host", FILE_HOSTS)
@pytest.mark.parametrize("with_config", [True, False])
def test_a_read_only_host_folder_gives_write_failed_and_changes_nothing(
        host: str, with_config: bool, package: PackageInfo, tmp_path: Path) -> None:
    require_real_part(_namespaces_work(), "unshare -m with a read-only bind mount")
    home = tmp_path / "home"
    path = config_of(host, home)
    if with_config:
        path.write_text("{}\n" if host != "codex" else 'model = "o3"\n', encoding="utf-8")
    before = snapshot(home)
    mount = (f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
             f"{sys.executable} -c '{READ_ONLY_RUN}' {home} {package.root} {host}")
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    proc = subprocess.run([*unshare, "sh", "-c", mount], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parents[3], check=False)
    assert proc.stdout.split() == ["host.write_failed", "EROFS"], proc.stderr[-2000:]
    assert snapshot(home) == before
