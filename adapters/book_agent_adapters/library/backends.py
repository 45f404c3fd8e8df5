"""Finding and loading library backends: the entry-point group `book_agent.library_backends`,
whose entries name factories `factory(data_dir: Path, setting: LibraryBackendSetting) ->
LibraryBackend`. The built-in `local` is found without scanning the installed distributions
(a search does not pay for the scan) and cannot be taken over by a plug-in.

An unknown name lists the known ones (`library.unknown_backend`); a factory that does not
import, raises something other than a coded error, or builds something without the ports'
methods is `library.backend_failed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryBackendSetting
from book_agent.ports.library import LibraryBackend, LibraryIndex, LibraryVectorIndexes
from book_agent_adapters.plugins import entry_points
from book_agent_adapters.plugins.entry_points import PluginLoadError

GROUP = "book_agent.library_backends"
BUILTINS = {"local": "book_agent_adapters.library.local:create_local"}
REMEDIATION = "install the package that provides it into book-agent's environment, or choose a known backend"


def available() -> dict[str, str]:
    """Every installed backend: name -> `module:factory` (built-ins first, never shadowed)."""
    entries = entry_points.discover(GROUP, BUILTINS)
    return {name: entries[name].value for name in entry_points.usable(entries)}


def load_backend(data_dir: Path, setting: LibraryBackendSetting) -> LibraryBackend:
    """The backend `setting` names, built for `data_dir` and checked to provide both roles."""
    target = BUILTINS.get(setting.name) or available().get(setting.name)
    if target is None:
        known = sorted(available())
        raise BookAgentError(
            "library.unknown_backend",
            f"no library backend named {setting.name!r} (from {_origin(setting)}); known: {', '.join(known)}",
            details={"backend": setting.name, "source": setting.source, "available": known},
            remediation=f"use one of: {', '.join(known)} (--library-backend, BOOK_AGENT_LIBRARY_BACKEND or "
                        "[library] backend in the data dir's config.toml), or " + REMEDIATION,
            available_capabilities=known)
    factory = _factory(setting.name, target)
    try:
        backend = factory(Path(data_dir), setting)
    except BookAgentError:
        raise
    except Exception as exc:
        raise _failed(setting.name, f"its factory {target} raised {type(exc).__name__}: {exc}") from exc
    problem = _problem(backend)
    if problem:
        raise _failed(setting.name, f"its factory {target} built {problem}")
    return backend  # type: ignore[no-any-return]


def _factory(name: str, target: str) -> Any:
    try:
        return entry_points.import_target(target)
    except PluginLoadError as exc:  # an import error, a missing attribute: either way the plug-in is broken
        if exc.kind == "not_callable":
            raise _failed(name, f"{target} is not a callable factory") from exc
        raise _failed(name, f"{target} cannot be loaded ({exc.why})") from exc


def _problem(backend: Any) -> str | None:
    if not isinstance(backend, LibraryBackend):
        return f"a {type(backend).__name__}, not a LibraryBackend"
    if not isinstance(backend.lexical, LibraryIndex):
        return "a lexical index without LibraryIndex's methods (state, build, open)"
    if not isinstance(backend.vectors, LibraryVectorIndexes):
        return "vector indexes without LibraryVectorIndexes' members (min_vectors, state, build, open)"
    return None


def _origin(setting: LibraryBackendSetting) -> str:
    return {"argument": "the caller", "environment": "BOOK_AGENT_LIBRARY_BACKEND or --library-backend",
            "config": "the data dir's config.toml", "default": "the default"}.get(setting.source, setting.source)


def _failed(name: str, why: str) -> BookAgentError:
    return BookAgentError("library.backend_failed", f"the library backend {name!r} could not be loaded: {why}",
                          details={"backend": name}, remediation=REMEDIATION)
