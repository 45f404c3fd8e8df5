"""Writing results and errors (no typer here: the MCP fast path uses it too).

Whatever a field holds, stdout gets valid UTF-8 JSON: Python keeps bytes that are not UTF-8
(in argv, in file or archive member names) as lone surrogates, which UTF-8 cannot encode.
They are escaped here, at the one place output is written, so no field can break it: a
byte kept by surrogateescape becomes the text `\\xff`, any other lone surrogate U+FFFD.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, NoReturn

from book_agent import settings
from book_agent.domain.errors import BookAgentError
from book_agent.lazy import LazyPattern

# compiled on first use (~0.3 ms): only a text holding a lone surrogate needs it
_SURROGATES = LazyPattern("[\ud800-\udfff]+")
DEBUG_ENV = settings.ENV_DEBUG


def _escaped(text: str, backslash: str) -> str:
    def one(match: re.Match[str]) -> str:
        out = []
        for char in match.group():
            code = ord(char)
            out.append(f"{backslash}x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd")
        return "".join(out)

    try:
        text.encode("utf-8")  # fails exactly when the text holds a surrogate (str never pairs them)
    except UnicodeEncodeError:
        return _SURROGATES.sub(one, text)
    return text


def plain_text(text: str) -> str:
    r"""Text for a terminal: undecodable bytes shown as \xff, other lone surrogates as U+FFFD."""
    return _escaped(text, "\\")


def json_text(data: Any) -> str:
    """The JSON document for `data`, always encodable as UTF-8."""
    # inside a JSON string a backslash is written as two: the decoded string reads \xff
    return _escaped(json.dumps(data, ensure_ascii=False, indent=2, default=str), "\\\\")


def print_json(data: Any) -> None:
    payload = (json_text(data) + "\n").encode("utf-8")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (some embedders): it gets the same text
        sys.stdout.write(payload.decode("utf-8"))
        sys.stdout.flush()
        return
    sys.stdout.flush()  # keep order with anything written as text before
    buffer.write(payload)
    buffer.flush()


def load_json_argument(source: str) -> Any:
    """JSON from a file named on the command line, or from stdin for `-` (bounded).

    Raises OSError or ValueError (InputTooLarge past the size limit): each command says
    what it expected and which code applies, through `argument_error`.
    """
    from book_agent.input_files import load_json_file

    return load_json_file(source)


def argument_error(exc: Exception, source: str, code: str, message: str, remediation: str) -> BookAgentError:
    """The coded error for a file argument that could not be read: too large, or `code`."""
    from book_agent.input_files import InputTooLarge

    if isinstance(exc, InputTooLarge):
        return BookAgentError("cli.input_too_large", f"{source} is larger than {exc.limit} bytes",
                              details={"source": source, "limit_bytes": exc.limit},
                              remediation="pass the file a previous command wrote (a regular file, not a device)")
    return BookAgentError(code, f"{message}: {exc}", details={"source": source}, remediation=remediation)


def fail(json_mode: bool, error: BookAgentError, exit_code: int = 1) -> NoReturn:
    """The one place errors become output: JSON on stdout with --json, else a message on stderr."""
    if json_mode:
        print_json({"error": error.to_dict()})
    else:
        message = f"error [{error.code}]: {error.message}"
        if error.remediation:
            message += f"\n  fix: {error.remediation}"
        sys.stderr.write(plain_text(message) + "\n")
    sys.exit(exit_code)


def debug_enabled(argv_debug: bool = False) -> bool:
    return argv_debug or settings.debug_requested()


def internal_error(exc: BaseException, json_mode: bool, debug: bool = False) -> NoReturn:
    """The last resort: an exception nobody translated still ends as one coded error.

    The traceback goes to stderr only when asked for (--debug or BOOK_AGENT_DEBUG=1): it is
    for whoever fixes the bug, and may show paths a user would not paste in a report.
    """
    if debug_enabled(debug):
        import traceback  # --debug on a bug only

        sys.stderr.write(plain_text("".join(traceback.format_exception(exc))))
    text = str(exc)
    error = BookAgentError(
        "cli.internal_error",
        f"unexpected {type(exc).__name__}" + (f": {text[:500]}" if text else ""),
        details={"exception": type(exc).__name__},
        remediation=f"this is a bug in book-agent: run again with --debug (or {DEBUG_ENV}=1) to see the "
        "traceback on stderr, and report it",
    )
    fail(json_mode, error, 1)
