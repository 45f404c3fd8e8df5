"""The console-script entry: the MCP fast path, else the typer CLI.

Hosts start `python -m book_agent --data-dir DATA mcp BOOK_ID` and wait for `tools/list`;
typer and the full command tree cost a noticeable share of that start-up and are not needed
to serve, so that exact shape skips them. Anything else goes to the typer CLI.

`main` is the process's entry (the console script, `python -m book_agent`); `run` is the same
dispatch for a caller that runs the CLI in its own process (tests), and never ends it.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from book_agent.cli.argv import GlobalOptions

# BLAS threads: set by `import book_agent`, before numpy loads (book_agent/blas.py).


def main() -> None:
    """The CLI as a process of its own. No cycle collection until the command is known: the
    start's imports keep what they allocate, so the gen-0 passes they set off find nothing
    (~2 ms of a cold search at load 2.5); any command but a one-shot JSON search collects again
    before it runs. A one-shot JSON search that answered then ends at once (_end_now)."""
    gc.disable()
    if _dispatch(sys.argv[1:], before_other=gc.enable):
        _end_now()


def run(argv: list[str] | None = None) -> None:
    _dispatch(list(sys.argv[1:] if argv is None else argv))


def _dispatch(args: list[str], before_other: Callable[[], None] = lambda: None) -> bool:
    """Run the command; True when it was a one-shot JSON search that printed its result.
    `before_other` runs before any other command."""
    from book_agent.cli.argv import ArgvError, split_global_options

    try:
        options, rest = split_global_options(args)
    except ArgvError:
        options, rest = None, []
    if options is not None and options.library_backend is not None:
        from book_agent.settings import use_library_backend

        use_library_backend(options.library_backend)
    if options is not None and not options.json and len(rest) == 2 and rest[0] == "mcp" \
            and not rest[1].startswith("-"):
        before_other()
        _guarded(lambda: _serve_mcp(rest[1], options.data_dir), options)
        return False
    if options is not None and options.json and rest[:1] == ["search"]:
        from book_agent.cli.search_args import parse_search_argv

        parsed = parse_search_argv(rest[1:])
        if parsed is not None:
            _guarded(lambda: _search_json(parsed, options.data_dir), options)
            return True  # an error would have exited (SystemExit)
    before_other()
    from book_agent.cli.main import run as run_cli

    run_cli(args)
    return False


def _end_now() -> None:
    """End the process without the interpreter's teardown, which frees numpy's and ~90 modules'
    objects one by one after a last cycle collection: ~17 ms CPU of a ~150 ms cold search at
    load 2.4 (issue 29), in a process with nothing left to free or flush (mypy's hard_exit does
    the same). The search has closed what it opened (build_agent's `with`); files it writes are
    written whole and closed (atomic writes). Only when nothing else waits for the end: no other
    non-daemon thread, no atexit callback (logging's, once a Chinese query loaded jieba), and
    the output flushed; otherwise the ordinary exit."""
    import atexit
    import os
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()) or atexit._ncallbacks():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the ordinary exit reports it as before
        return
    os._exit(0)


def _guarded(body: Callable[[], None], options: GlobalOptions) -> None:
    """The fast paths end like the typer CLI: a result or one coded error (cli/main.py)."""
    try:
        body()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        from book_agent.cli.output import internal_error

        internal_error(exc, options.json, options.debug)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """A one-shot search frees nothing a cycle collection would find: the collector would only
    walk the objects of the modules it imports (a gen-2 pass among ~16 passes, ~5 ms of its
    start at load 8). Restored after, for a caller that runs the CLI in-process (tests)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _search_json(parsed: dict[str, object], data_dir: str | None) -> None:
    with _no_cycle_collection():
        _one_search(parsed, data_dir)


def _one_search(parsed: dict[str, object], data_dir: str | None) -> None:
    from book_agent.agent import build_agent
    from book_agent.cli.output import fail, print_json
    from book_agent.cli.search_args import parse_hints, read_vector
    from book_agent.domain.errors import BookAgentError

    try:
        source = parsed["query_vector"]
        vector = read_vector(str(source)) if source else None
        hints = parse_hints(list(parsed["hint"]))  # type: ignore[call-overload]
        with build_agent(data_dir) as agent:
            result = agent.search(str(parsed["book"]), str(parsed["query"]), top_k=int(parsed["top_k"]),  # type: ignore[call-overload]
                                  strict=bool(parsed["strict"]), query_vector=vector, hints=hints)
    except BookAgentError as exc:
        fail(True, exc)
    print_json(result)


def _serve_mcp(book_id: str, data_dir: str | None) -> None:
    from pathlib import Path

    from book_agent.cli.output import fail
    from book_agent.domain.errors import BookAgentError
    from book_agent.mcp.server import serve

    try:
        serve(book_id, data_dir=Path(data_dir).expanduser() if data_dir else None)
    except BookAgentError as exc:
        fail(False, exc)
