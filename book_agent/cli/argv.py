"""Global options anywhere on the line.

click only accepts a group's options before the subcommand. Users (and agents) write
`book-agent search BOOK q --json` or `book-agent --json search ...` alike, so `--data-dir`,
`--json` and `--debug` are lifted out of argv, wherever they stand, before typer sees it. A `--`
ends option processing: whatever follows is left alone (a query may be `--json` itself).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GlobalOptions:
    data_dir: str | None = None
    json: bool = False
    debug: bool = False  # an unexpected error also prints its traceback on stderr


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
        elif arg == "--data-dir":
            if i + 1 >= len(argv):
                raise ArgvError("--data-dir needs a folder path")
            options.data_dir = argv[i + 1]
            i += 1
        elif arg.startswith("--data-dir="):
            options.data_dir = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return options, rest
