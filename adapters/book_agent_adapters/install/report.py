"""`book-agent doctor`: what this installation can do, and the one step that adds what it lacks.

Looks only: nothing is imported that a probe does not need (faiss is found, not loaded),
nothing is written, no request is sent. Each capability is
`{name, available, detail, fix}`, where `fix` is a command (None when nothing is missing).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import APPROXIMATE_MIN_VECTORS

MCP_DISTS = ("fastmcp", "mcp", "sse-starlette")  # what the MCP server runs on (book_agent/mcp/internals.py)


def install_report(data_dir: Path, *, home: Path | None = None,
                   carriers: Sequence[tuple[str, str]] | None = None) -> dict[str, Any]:
    """The doctor's report for an installation using `data_dir` (hosts looked for under `home`;
    `carriers` replaces the known carrier packages, for tests)."""
    capabilities = [*_local_models(data_dir, carriers), _faiss(), _pdf(), _remote(), _mcp(), *_hosts(data_dir, home)]
    return {"version": _version("book-agent"), "python": platform.python_version(), "executable": sys.executable,
            "data_dir": str(data_dir), "capabilities": capabilities,
            "missing": [c["id"] for c in capabilities if not c["available"]]}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _capability(ident: str, name: str, available: bool, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"id": ident, "name": name, "available": available, "detail": detail, "fix": None if available else fix}


def _local_models(data_dir: Path, carriers: Sequence[tuple[str, str]] | None) -> list[dict[str, Any]]:
    """Each model `book-agent model install` knows: found on this machine, and where."""
    from book_agent_adapters.encoders.local.model_files import MODELS_FOLDER, find_model
    from book_agent_adapters.encoders.local.model_install import installable_models

    out = []
    for model in installable_models():
        name = f"local encoder: {model.bare_name}"
        try:
            found = find_model(model.repo_id, models_dir=data_dir / "cache" / MODELS_FOLDER, carriers=carriers)
        except BookAgentError:
            out.append(_capability(
                f"local_encoder:{model.bare_name}", name, False, f"not on this machine: books built with {model.repo_id} search lexically only",
                f"book-agent model install {model.bare_name}"))
            continue
        out.append(_capability(f"local_encoder:{model.bare_name}", name, True, f"{found.source}: {found.path}"))
    return out


def _faiss() -> dict[str, Any]:
    found = importlib.util.find_spec("faiss") is not None
    detail = (f"faiss-cpu {_version('faiss-cpu') or ''}".strip() if found else
              f"absent: a library's embedding model with {APPROXIMATE_MIN_VECTORS:,}+ vectors is searched "
              "exactly (same hits, slower)")
    return _capability("approximate_index", "approximate library index", found, detail, "pip install 'book-agent[faiss]'")


def _pdf() -> dict[str, Any]:
    found = importlib.util.find_spec("pypdfium2") is not None and importlib.util.find_spec("PIL") is not None
    detail = (f"pypdfium2 {_version('pypdfium2')}, pillow {_version('pillow')} (render needs a PDF original)"
              if found else "pypdfium2 or pillow is missing: PDF originals cannot be read or rendered")
    return _capability("pdf", "PDF reading and page rendering", found, detail, "pip install pypdfium2 pillow")


def _remote() -> dict[str, Any]:
    found = importlib.util.find_spec("httpx") is not None
    return _capability("remote", "remote encoders and rerankers", found,
                       "httpx present; off until `book-agent configure BOOK --allow-remote ...` names an endpoint"
                       if found else "httpx is missing", "pip install httpx")


def _mcp() -> dict[str, Any]:
    versions = {dist: _version(dist) for dist in MCP_DISTS}
    found = all(versions.values())
    detail = ", ".join(f"{dist} {v}" for dist, v in versions.items() if v)
    return _capability("mcp", "MCP server (stdio and streamable HTTP)", found, detail or "missing",
                       "pip install --force-reinstall book-agent")


def _hosts(data_dir: Path, home: Path | None) -> list[dict[str, Any]]:
    from book_agent_adapters.hosts import HostAdapter
    from book_agent_adapters.hosts.registry import available

    out = []
    for host in available():  # the built-ins, then any host plug-in
        try:
            found = HostAdapter(host, home=home, data_dir=data_dir).detect()
        except BookAgentError as exc:
            out.append(_capability(f"host:{host}", f"host: {host}", False, exc.message))
            continue
        where = found.get("config_path") or "no config file (steps or a deep link instead)"
        seen = "found" if found.get("installed") else "not found on this machine"
        out.append(_capability(f"host:{host}", f"host: {host}", True,
                               f"{seen}; `host install` writes {where}, skills in {found.get('skills_dir')}"))
    return out
