"""PackageInfo: what inspecting a book package found (contract v0.1.0)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent.domain.diagnostics import Diagnostic

SUPPORTED_SCHEMA_VERSIONS: tuple[str, ...] = ("0.1",)
PACKAGE_SCHEMA = "book-agent.package"
VECTORS_SCHEMA = "book-agent.vectors"
MANIFEST_NAME = "book-package.json"

# index.sqlite as contracts/book-package-0.1.md defines it: what the (upstream) builders write.
DATABASE_SCHEMA_SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records (record_id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE,
  text TEXT NOT NULL, headings TEXT NOT NULL DEFAULT '[]', md_start INTEGER,
  md_end INTEGER, source TEXT NOT NULL);
CREATE TABLE vectors (record_id TEXT PRIMARY KEY REFERENCES records(record_id),
  embedding BLOB NOT NULL);
"""


@dataclass
class PackageInfo:
    """The contract's fields, exactly. Paths are absolute `Path`s (None when absent)."""

    book_id: str | None
    title: str | None
    root: Path
    original_path: Path | None
    markdown_path: Path | None
    skill_path: Path | None
    database_path: Path | None
    archive_manifest: dict[str, Any] | None
    vector_manifest: dict[str, Any] | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    file_hashes: dict[str, str] = field(default_factory=dict)
    read_only: bool = True

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

    @property
    def original_kind(self) -> str | None:
        """'pdf' or 'epub', from the manifest's media type or the file suffix."""
        files = (self.archive_manifest or {}).get("files") or {}
        media = (files.get("original") or {}).get("media_type") if isinstance(files, dict) else None
        if media == "application/pdf":
            return "pdf"
        if media == "application/epub+zip":
            return "epub"
        if self.original_path is not None:
            suffix = self.original_path.suffix.lower().lstrip(".")
            return suffix if suffix in ("pdf", "epub") else None
        return None

    def to_dict(self) -> dict[str, Any]:
        def path(p: Path | None) -> str | None:
            return str(p) if p is not None else None

        return {
            "book_id": self.book_id,
            "title": self.title,
            "root": str(self.root),
            "original_path": path(self.original_path),
            "markdown_path": path(self.markdown_path),
            "skill_path": path(self.skill_path),
            "database_path": path(self.database_path),
            "archive_manifest": self.archive_manifest,
            "vector_manifest": self.vector_manifest,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "file_hashes": dict(self.file_hashes),
            "read_only": self.read_only,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PackageInfo:
        def path(value: Any) -> Path | None:
            return Path(value) if value else None

        return cls(
            book_id=data.get("book_id"),
            title=data.get("title"),
            root=Path(data["root"]),
            original_path=path(data.get("original_path")),
            markdown_path=path(data.get("markdown_path")),
            skill_path=path(data.get("skill_path")),
            database_path=path(data.get("database_path")),
            archive_manifest=data.get("archive_manifest"),
            vector_manifest=data.get("vector_manifest"),
            diagnostics=[Diagnostic.from_dict(d) for d in data.get("diagnostics") or []],
            file_hashes=dict(data.get("file_hashes") or {}),
            read_only=bool(data.get("read_only", True)),
        )
