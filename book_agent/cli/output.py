"""Writing results and errors (no typer here: the MCP fast path uses it too)."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

from book_agent.domain.errors import BookAgentError


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def load_json_argument(source: str) -> Any:
    """JSON from a file named on the command line, or from stdin for `-`.

    Raises OSError or ValueError: each command says what it expected and which code applies.
    """
    if source == "-":
        return json.loads(sys.stdin.read())
    with open(source, encoding="utf-8") as handle:
        return json.loads(handle.read())


def fail(json_mode: bool, error: BookAgentError, exit_code: int = 1) -> NoReturn:
    """The one place errors become output: JSON on stdout with --json, else a message on stderr."""
    if json_mode:
        print_json({"error": error.to_dict()})
    else:
        message = f"error [{error.code}]: {error.message}"
        if error.remediation:
            message += f"\n  fix: {error.remediation}"
        sys.stderr.write(message + "\n")
    sys.exit(exit_code)
