"""Finding the one package root a path points at: never guessing between several.

A root is a folder holding `book-package.json`. The path may be the root itself, a folder
whose single package root is one level down (an extracted archive's top-level folder), or
the manifest file itself. More than one candidate in reach is reported with every
candidate named, because picking one would silently choose a book for the user.
"""

from __future__ import annotations

import os
from pathlib import Path

from book_agent.domain.book.package import MANIFEST_NAME
from book_agent.domain.errors import BookAgentError

_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")


def find_package_root(path: Path | str) -> Path:
    """The resolved absolute root of the one package at `path`, or a BookAgentError.

    Codes: package.not_found, package.unreadable, package.no_manifest,
    package.ambiguous_root.
    """
    given = Path(path).expanduser()
    try:
        # lexists: a dangling symlink is "not found", not a crash further down
        if not os.path.lexists(given):
            raise _not_found(given)
        if given.is_file():
            return _root_of_file(given)
        if not given.is_dir():
            raise _not_found(given)
        candidates = _candidates(given)
    except PermissionError as exc:
        raise BookAgentError(
            "package.unreadable",
            f"cannot read {given}: permission denied",
            details={"path": str(given)},
            remediation="make the folder readable by the current user",
        ) from exc
    except OSError as exc:
        raise BookAgentError(
            "package.unreadable",
            f"cannot read {given}: {exc.strerror or exc}",
            details={"path": str(given), "errno": exc.errno},
        ) from exc
    if not candidates:
        raise BookAgentError(
            "package.no_manifest",
            f"no {MANIFEST_NAME} in {given} or in any folder directly inside it",
            details={"path": str(given)},
            remediation=f"point at the folder that holds {MANIFEST_NAME}",
        )
    if len(candidates) > 1:
        raise BookAgentError(
            "package.ambiguous_root",
            f"{given} holds {len(candidates)} package roots; name the one to use",
            details={"path": str(given), "candidates": [str(c) for c in candidates]},
            remediation="pass one of the candidate folders (or its book-package.json) instead",
        )
    return candidates[0].resolve()


def _root_of_file(given: Path) -> Path:
    if given.name == MANIFEST_NAME:
        return given.parent.resolve()
    hint = (
        "import the archive first (book-agent init ARCHIVE), which extracts it safely"
        if given.name.lower().endswith(_ARCHIVE_SUFFIXES)
        else f"point at a package folder or its {MANIFEST_NAME}"
    )
    raise BookAgentError(
        "package.no_manifest",
        f"{given} is a file, not a package folder or its {MANIFEST_NAME}",
        details={"path": str(given)},
        remediation=hint,
    )


def _candidates(folder: Path) -> list[Path]:
    """The folder itself and its direct subfolders that hold a manifest, sorted by name."""
    found: list[Path] = []
    if os.path.lexists(folder / MANIFEST_NAME):
        found.append(folder)
    with os.scandir(folder) as entries:
        subfolders = sorted(e.path for e in entries if e.is_dir())
    for sub in subfolders:
        if os.path.lexists(os.path.join(sub, MANIFEST_NAME)):
            found.append(Path(sub))
    return found


def _not_found(given: Path) -> BookAgentError:
    return BookAgentError(
        "package.not_found",
        f"{given} does not exist",
        details={"path": str(given)},
        remediation="check the path (a package folder, its book-package.json, or an archive)",
    )
