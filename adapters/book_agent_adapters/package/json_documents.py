"""Reading a package's JSON documents (book-package.json, vectors.json) as data only.

A package comes from elsewhere: the reader caps the size, refuses non-standard constants
(NaN, Infinity) and anything that is not a JSON object, and reports each problem as a
diagnostic instead of raising, so inspection can go on and report everything at once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from book_agent.domain.diagnostics import Diagnostic

MAX_JSON_BYTES = 16 << 20  # a manifest is a few KiB; anything this big is not one


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def load_json_object(path: Path, code: str, rel: str) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """The parsed object, or None and one `code` diagnostic saying what is wrong."""

    def bad(reason: str) -> tuple[None, list[Diagnostic]]:
        return None, [Diagnostic(code, f"{rel} is malformed: {reason}", "error", {"path": rel, "reason": reason})]

    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            return bad(f"{size} bytes is more than the {MAX_JSON_BYTES}-byte limit")
        raw = path.read_bytes()
    except OSError as exc:
        return bad(f"cannot read it ({exc.strerror or exc})")
    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text, parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        return bad(f"not UTF-8 ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        return bad(f"{exc.msg} (line {exc.lineno}, column {exc.colno})")
    except (ValueError, RecursionError) as exc:
        return bad(str(exc) or type(exc).__name__)
    if not isinstance(data, dict):
        return bad(f"the top level is a JSON {type(data).__name__}, not an object")
    return data, []
