"""Finding a model's files on this machine. Never downloads anything.

Search order: (1) an explicit folder (the book's `query.model_dir`), (2) the models that
`book-agent model install` put in the data dir (DATA_DIR/cache/models/<org>--<name>/: older
releases installed there), (2b) the models it installs once per user, shared by every data dir
($BOOK_AGENT_MODELS, else the user cache dir's models/: settings.resolve_models_dir),
(3) the Hugging Face hub cache (snapshot layout, `refs/main` honoured), (4) installed Python
packages that carry the weights, located with `importlib.util.find_spec` so none of their
code runs.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from . import errors
from .known_models import KnownModel, canonical_name, lookup

REQUIRED_FILES = ("config.json", "model.safetensors")
MODELS_FOLDER = "models"  # below the data dir's cache folder


def user_models_dir() -> Path | None:
    """The per-user models folder `book-agent model install` fills (None when it cannot be named)."""
    from book_agent.settings import resolve_models_dir

    try:
        return resolve_models_dir()
    except (OSError, RuntimeError):
        return None


def installed_model_dir(models_dir: Path, model_name: str) -> Path:
    """Where `book-agent model install` keeps a model: one folder per repo id."""
    return Path(models_dir) / canonical_name(model_name).replace("/", "--")


class ModelLocation(NamedTuple):
    """A model folder that holds at least config.json and model.safetensors."""

    model_name: str
    path: Path
    source: str  # "model_dir" | "installed" | "hf_cache" | "package"
    known: KnownModel | None = None
    searched: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"model_name": self.model_name, "path": str(self.path), "source": self.source}


def default_hub_caches(hf_home: Path | None = None) -> list[Path]:
    """The hub cache folders huggingface_hub itself would use, most specific first."""
    if hf_home is not None:
        return [Path(hf_home) / "hub"]
    caches: list[Path] = []
    if os.environ.get("HF_HUB_CACHE"):
        caches.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        caches.append(Path(os.environ["HF_HOME"]) / "hub")
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) if xdg else Path.home() / ".cache"
        caches.append(base / "huggingface" / "hub")
    return caches


def has_model_files(folder: Path) -> bool:
    return all((folder / name).is_file() for name in REQUIRED_FILES)


def _snapshot(repo_dir: Path) -> Path | None:
    """refs/main's snapshot when present, else the newest complete snapshot."""
    snapshots = repo_dir / "snapshots"
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        candidate = snapshots / ref.read_text(encoding="utf-8").strip()
        if has_model_files(candidate):
            return candidate
    if not snapshots.is_dir():
        return None
    complete = [p for p in snapshots.iterdir() if p.is_dir() and has_model_files(p)]
    return max(complete, key=lambda p: p.stat().st_mtime) if complete else None


def _hub_repo_dirs(cache: Path, name: str) -> list[Path]:
    if "/" in name:
        org, _, repo = name.partition("/")
        return [cache / f"models--{org}--{repo}"]
    # A bare unknown name: accept it only when exactly one org has a repo by that name.
    return sorted(cache.glob(f"models--*--{name}")) if cache.is_dir() else []


def _package_dir(package: str, sub: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        if has_model_files(Path(root) / sub):
            return Path(root) / sub
    return None


def find_model(
    model_name: str,
    model_dir: Path | str | None = None,
    hf_home: Path | str | None = None,
    *,
    hub_caches: Sequence[Path] | None = None,
    carriers: Sequence[tuple[str, str]] | None = None,
    models_dir: Path | None = None,
) -> ModelLocation:
    """Locate `model_name`'s files; raise QueryRuntimeError(query.local_model_missing).

    `hub_caches` replaces the default hub caches and `carriers` the known packages (tests
    and callers with their own layout use them); `models_dir`: the data dir's installed models.
    """
    name = canonical_name(model_name)
    known = lookup(model_name)
    searched: list[str] = []
    if model_dir is not None:
        folder = Path(model_dir).expanduser()
        searched.append(f"model_dir:{folder}")
        if has_model_files(folder):
            return ModelLocation(name, folder.resolve(), "model_dir", known, tuple(searched))
        missing = [n for n in REQUIRED_FILES if not (folder / n).is_file()]
        # An explicit folder is the user's choice: do not silently fall back elsewhere.
        raise errors.error(
            errors.MODEL_MISSING,
            f"The model folder {folder} lacks {', '.join(missing)}.",
            errors.REMEDIATION_MISSING,
            model=name, model_dir=folder, missing_files=missing, searched=searched,
        )
    for models in (models_dir, user_models_dir()):
        if models is None:
            continue
        installed = installed_model_dir(models, name)
        searched.append(f"installed:{installed}")
        if has_model_files(installed):
            return ModelLocation(name, installed.resolve(), "installed", known, tuple(searched))
    caches = list(hub_caches) if hub_caches is not None else default_hub_caches(
        Path(hf_home) if hf_home is not None else None
    )
    for cache in caches:
        repo_dirs = _hub_repo_dirs(cache, name)
        searched.append(f"hf_cache:{cache}")
        if len(repo_dirs) == 1 and (snap := _snapshot(repo_dirs[0])) is not None:
            return ModelLocation(name, snap.resolve(), "hf_cache", known, tuple(searched))
    for package, sub in carriers if carriers is not None else (known.carriers if known else ()):
        searched.append(f"package:{package}")
        if (carried := _package_dir(package, sub)) is not None:
            return ModelLocation(name, carried.resolve(), "package", known, tuple(searched))
    raise errors.error(
        errors.MODEL_MISSING,
        f"The embedding model {name!r} is not on this machine.",
        errors.remediation_missing(known),
        model=name, searched=searched,
    )
