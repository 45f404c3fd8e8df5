"""Host use cases: install a registered book into an AI host, and check or undo it.

`detect`, `plan`, `install`, `uninstall`, `verify` and `instructions` resolve the book
(its package, the data dir the MCP server will use, the configured auth_env: a variable
NAME, never a value) and hand it to the host facade the composition root built. `install`
and `uninstall` are dry runs unless `apply` is True.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from book_agent.services.books import OpenBooks
from book_agent.services.context import Ports


class Hosts:
    def __init__(self, ports: Ports, books: OpenBooks) -> None:
        self._ports = ports
        self._books = books

    def _adapter(self, host: str, edition: str | None, home: str | None) -> Any:
        return self._ports.hosts(host, home, str(self._ports.data_dir), edition)

    def _book(self, book_ref: str) -> tuple[dict[str, Any], str | None]:
        book = self._books.open(book_ref)
        return book.package.to_dict(), book.config.network.auth_env

    def detect(self, host: str, edition: str | None = None, home: str | None = None) -> dict[str, Any]:
        """Whether the host seems installed, and where its config and skills would go."""
        result: dict[str, Any] = self._adapter(host, edition, home).inspect()
        return result

    def install(self, host: str, book_ref: str, apply: bool = False, edition: str | None = None,
                home: str | None = None, skill_dir: str | None = None) -> dict[str, Any]:
        """The plan (paths and unified diffs); with apply=True, written."""
        package, auth_env = self._book(book_ref)
        result: dict[str, Any] = self._adapter(host, edition, home).install(
            package, None, apply=apply, skill_dir=_folder(skill_dir), auth_env=auth_env)
        return result

    def uninstall(self, host: str, book_ref: str, apply: bool = False, edition: str | None = None,
                  home: str | None = None, skill_dir: str | None = None) -> dict[str, Any]:
        package, _ = self._book(book_ref)
        result: dict[str, Any] = self._adapter(host, edition, home).uninstall(package, _folder(skill_dir), apply=apply)
        return result

    def verify(self, host: str, book_ref: str, edition: str | None = None, home: str | None = None,
               skill_dir: str | None = None) -> dict[str, Any]:
        """Read back the server entry and the skill files: missing, modified or outdated."""
        package, auth_env = self._book(book_ref)
        result: dict[str, Any] = self._adapter(host, edition, home).verify(
            package, None, _folder(skill_dir), auth_env=auth_env)
        return result

    def instructions(self, host: str, book_ref: str, edition: str | None = None, home: str | None = None) -> str:
        package, auth_env = self._book(book_ref)
        text: str = self._adapter(host, edition, home).render_manual_instructions(package, auth_env=auth_env)
        return text


def _folder(skill_dir: str | None) -> Path | None:
    return Path(skill_dir) if skill_dir else None
