"""Bounded reads of the files a user names on the command line (and of stdin).

`search --query-vector /dev/zero` or `eval BOOK /dev/zero` must end with an error, not fill
memory: every such read takes at most `limit + 1` bytes and refuses more. JSON from these
inputs is parsed with nesting errors (RecursionError) turned into ValueError, so a file of
100,000 `[` is a bad input like any other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MAX_JSON_ARGUMENT_BYTES = 16 << 20  # a locator, a hit, a query vector: kilobytes in practice
MAX_QUESTIONS_BYTES = 64 << 20  # an eval set of many thousand questions


class InputTooLarge(ValueError):
    def __init__(self, source: str, limit: int) -> None:
        super().__init__(f"{source} holds more than {limit} bytes")
        self.source = source
        self.limit = limit


def read_limited(source: str | Path, limit: int) -> bytes:
    """The bytes of a file, or of stdin for "-". Raises OSError, or InputTooLarge past `limit`."""
    if str(source) == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        with open(source, "rb") as handle:  # a FIFO or device is read like a file, bounded too
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(str(source), limit)
    return data


def loads(text: str | bytes) -> Any:
    """json.loads, with too deep nesting reported as ValueError like any malformed JSON."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ValueError("the JSON is nested too deeply") from exc


def load_json_file(source: str | Path, limit: int = MAX_JSON_ARGUMENT_BYTES) -> Any:
    """JSON from a user-named file or stdin ("-"). Raises OSError, InputTooLarge or ValueError."""
    return loads(read_limited(source, limit).decode("utf-8"))
