"""Entry point of `book-agent` and `python -m book_agent`.

Errors become output here, in one place: with `--json`, `{"error": {code, message, details,
remediation}}` on stdout; otherwise a readable message on stderr. Either way the exit code
is non-zero (2 for usage errors, 1 for everything else). An exception that no code
translated is still one coded error (`cli.internal_error`); its traceback goes to stderr
only with --debug or BOOK_AGENT_DEBUG=1.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any

import typer

from book_agent.cli.argv import ArgvError, GlobalOptions, split_global_options
from book_agent.cli.output import fail, internal_error
from book_agent.domain.errors import BookAgentError

HELP = """Grounded, citable answers from prebuilt book packages.

Register a package once (`book-agent init PACKAGE_DIR_OR_ARCHIVE`), then search it
(`book-agent search BOOK_ID "query"`). Global options, accepted anywhere on the line:
--data-dir DIR (else $BOOK_AGENT_HOME, else the platform's user data dir), --library-backend
NAME and --json (exactly one JSON document on stdout, errors included).
"""

# typer may vendor its own click (typer._click) or use click itself: take the class from
# typer's public exceptions so both kinds are caught.
ClickException: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

app = typer.Typer(
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: str = typer.Option(None, "--data-dir", help="Where registered books and runtime data live."),
    library_backend: str = typer.Option(None, "--library-backend", metavar="NAME",
                                        help="The library's index backend (default: local; also "
                                             "BOOK_AGENT_LIBRARY_BACKEND, or [library] backend in the "
                                             "data dir's config.toml)."),
    json_output: bool = typer.Option(False, "--json", help="Print exactly one JSON document."),
    version: bool = typer.Option(False, "--version", help="Print the version and exit (with --json: as JSON).",
                                 is_eager=True, callback=lambda ctx, value: _print_version(ctx) if value else None),
) -> None:
    if not isinstance(ctx.obj, GlobalOptions):
        ctx.obj = GlobalOptions(data_dir=data_dir, library_backend=library_backend, json=json_output)


def _print_version(ctx: typer.Context) -> None:
    from book_agent import __version__
    from book_agent.cli.output import print_json

    if isinstance(ctx.obj, GlobalOptions) and ctx.obj.json:
        print_json({"name": "book-agent", "version": __version__})
    else:
        print(f"book-agent {__version__}")
    raise typer.Exit(0)


_registered = False


def _register_commands() -> None:
    # Command modules import only typer and the standard library at module level, so
    # registering them all costs little; heavy work is imported inside each command.
    # Once per process: an embedder (or a test) may call run() many times.
    global _registered
    if _registered:
        return
    _registered = True
    from book_agent.cli.commands import (
        books,
        contents,
        doctor,
        evaluation,
        host,
        mcp_cmd,
        plugins,
        search,
        serve_cmd,
        sources,
    )

    books.register(app)
    search.register(app)
    evaluation.register(app)
    host.register(app)
    plugins.register(app)
    doctor.register(app)
    sources.register(app)
    contents.register(app)
    mcp_cmd.register(app)
    serve_cmd.register(app)


def _fail(options: GlobalOptions, error: BookAgentError, exit_code: int = 1) -> None:
    fail(options.json, error, exit_code)


def run(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    _tolerant_stdout()
    try:
        options, rest = split_global_options(args)
    except ArgvError as exc:
        _fail(GlobalOptions(json="--json" in args), BookAgentError("cli.usage", str(exc)), 2)
        return
    if options.library_backend is not None:
        from book_agent.settings import use_library_backend

        use_library_backend(options.library_backend)  # for this process and the servers it starts
    guarded(lambda: _run_app(options, rest), options)


def guarded(body: Callable[[], None], options: GlobalOptions) -> None:
    """Run a command so that it ends in exactly one output: its result or one coded error.

    Commands raise BookAgentError for what they expect; anything else is a bug, reported as
    `cli.internal_error` (with --json: one JSON document), never as a traceback on stdout.
    """
    try:
        body()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except BrokenPipeError:
        # the reader went away (`| head`): nothing more can be said on stdout
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:
        internal_error(exc, options.json, options.debug)


def _tolerant_stdout() -> None:
    # Human output may print a name holding undecodable bytes (a lone surrogate): print it
    # escaped rather than crash. JSON output escapes them itself (cli/output.py).
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(Exception):
            reconfigure(errors="backslashreplace")


def _run_app(options: GlobalOptions, rest: list[str]) -> None:
    _register_commands()
    try:
        # standalone_mode=False makes click return an exit code instead of raising it
        code = app(rest, obj=options, standalone_mode=False, prog_name="book-agent")
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except BookAgentError as exc:
        _fail(options, exc)
    except ClickException as exc:  # UsageError and the other errors click reports itself
        if not options.json:
            exc.show()
            sys.exit(exc.exit_code)
        context = getattr(exc, "ctx", None)
        path = context.command_path.split(" ") if context else []
        hint = "run `" + " ".join(["book-agent", *path[1:], "--help"]) + "`"
        _fail(options, BookAgentError("cli.usage", exc.format_message(), remediation=hint), 2)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
