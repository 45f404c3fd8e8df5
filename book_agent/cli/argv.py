"""Global options anywhere on the line.

click only accepts a group's options before the subcommand. Users (and agents) write
`book-agent search BOOK q --json` or `book-agent --json search ...` alike, so `--data-dir`,
`--library-backend`, `--json` and `--debug` are lifted out of argv, wherever they stand, before typer sees it. A `--`
ends option processing: whatever follows is left alone (a query may be `--json` itself).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GlobalOptions:
    """The options before the command (`--data-dir`, `--library-backend`, `--json`, `--debug`)."""

    data_dir: str | None = None
    library_backend: str | None = None  # settings.use_library_backend applies it
    json: bool = False
    debug: bool = False  # an unexpected error also prints its traceback on stderr


VALUED = {"--data-dir": "a folder path", "--library-backend": "a backend name (e.g. local)"}


class ArgvError(ValueError):
    pass


def split_global_options(argv: list[str]) -> tuple[GlobalOptions, list[str]]:
    options = GlobalOptions()
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg == "--json":
            options.json = True
        elif arg == "--debug":
            options.debug = True
        elif arg in VALUED:
            if i + 1 >= len(argv):
                raise ArgvError(f"{arg} needs {VALUED[arg]}")
            setattr(options, arg[2:].replace("-", "_"), argv[i + 1])
            i += 1
        elif arg.split("=", 1)[0] in VALUED:
            name, value = arg.split("=", 1)
            setattr(options, name[2:].replace("-", "_"), value)
        else:
            rest.append(arg)
        i += 1
    return options, rest
