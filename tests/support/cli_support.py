"""Running the CLI in-process, through its console-script entry (book_agent.cli.entry.run),
with stdin, stdout and stderr as bytes: what a user's terminal or an agent's pipe gets."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class CliResult:
    code: int
    stdout: bytes
    stderr: str

    @property
    def json(self) -> Any:
        """The one JSON document on stdout (strict UTF-8: invalid bytes fail the test)."""
        return json.loads(self.stdout.decode("utf-8"))

    @property
    def error_code(self) -> str | None:
        return self.json.get("error", {}).get("code")


def arg(raw: bytes | str) -> str:
    """An argv item as Python receives it (undecodable bytes become lone surrogates)."""
    return os.fsdecode(raw) if isinstance(raw, bytes) else raw


def run_cli(*args: bytes | str, stdin: bytes = b"", entry: Callable[[list[str]], None] | None = None,
            env: dict[str, str] | None = None) -> CliResult:
    """argv through `entry` (default: the console script's book_agent.cli.entry.run), with
    extra environment variables set for the call only."""
    if entry is None:
        from book_agent.cli.entry import run as entry

    saved_env = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    out, err = io.BytesIO(), io.BytesIO()
    streams = (io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True))
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = streams
    code = 0
    try:
        entry([arg(a) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for stream in streams:
            stream.flush()
            stream.detach()  # keep the byte buffers readable after the wrappers go
    return CliResult(code, out.getvalue(), err.getvalue().decode("utf-8"))
