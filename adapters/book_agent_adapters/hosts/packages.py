"""Accept a package as PackageInfo, a package root (inspected lazily) or PackageInfo.to_dict()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.errors import BookAgentError


def as_package(package: PackageInfo | Path | str | dict[str, Any]) -> PackageInfo:
    if isinstance(package, PackageInfo):
        return package
    if isinstance(package, dict):
        return PackageInfo.from_dict(package)
    if isinstance(package, (str, Path)):
        try:
            from book_agent_adapters.package.inspector import PackageInspector
        except ImportError as exc:  # the inspector is written in parallel; say so plainly
            raise BookAgentError(
                "host.inspector_unavailable",
                "cannot inspect a package path: book_agent_adapters.package.inspector is missing",
                remediation="pass a PackageInfo, or register the book and use its book_id",
            ) from exc
        info: PackageInfo = PackageInspector().inspect(Path(package))
        return info
    raise TypeError(f"expected PackageInfo, a package path or a PackageInfo dict, not {type(package).__name__}")
