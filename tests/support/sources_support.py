"""Helpers of the sources tests: PackageInfo straight from a built package's manifest, and
small edits of a package's records (wrong pages, wrong offsets) for verification tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import typer

from book_agent.domain.book.package import PackageInfo


def package_info(root: Path) -> PackageInfo:
    manifest = json.loads((root / "book-package.json").read_text(encoding="utf-8"))
    files = manifest["files"]
    return PackageInfo(
        book_id=manifest["book_id"],
        title=manifest.get("title"),
        root=root,
        original_path=root / files["original"]["path"],
        markdown_path=root / files["markdown"]["path"],
        skill_path=root / files["skill"]["path"],
        database_path=root / files["database"]["path"],
        archive_manifest=manifest,
        vector_manifest=None,
    )


def record_source(root: Path, record_id: str) -> dict[str, Any]:
    con = sqlite3.connect(root / "index.sqlite")
    try:
        (raw,) = con.execute("SELECT source FROM records WHERE record_id = ?", (record_id,)).fetchone()
    finally:
        con.close()
    return dict(json.loads(raw))


def set_record(root: Path, record_id: str, source: dict[str, Any] | None = None, text: str | None = None) -> None:
    """Overwrite a record's source JSON and/or text in the package's index.sqlite."""
    con = sqlite3.connect(root / "index.sqlite")
    try:
        if source is not None:
            con.execute("UPDATE records SET source = ? WHERE record_id = ?", (json.dumps(source), record_id))
        if text is not None:
            con.execute("UPDATE records SET text = ? WHERE record_id = ?", (text, record_id))
        con.commit()
    finally:
        con.close()


def sources_cli(package_root: Path, data_dir: Path, json_output: bool) -> typer.Typer:
    """A typer app with the source commands, on `package_root` registered in `data_dir`."""
    from book_agent.agent import BookAgent
    from book_agent.cli.argv import GlobalOptions
    from book_agent.cli.commands import sources

    with BookAgent(data_dir=data_dir) as agent:
        agent.init(package_root)
    app = typer.Typer()

    @app.callback()
    def _root(ctx: typer.Context) -> None:
        ctx.obj = GlobalOptions(data_dir=str(data_dir), json=json_output)

    sources.register(app)
    return app
