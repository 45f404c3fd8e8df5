"""Text that can be written as UTF-8: finding and replacing lone UTF-16 surrogates.

A Python str may hold a lone surrogate (U+D800..U+DFFF): JSON `"\\ud800"` parsed by the json
module, a file name decoded with surrogateescape, a PDF text layer with a broken ToUnicode
map. Such a string has no UTF-8 form, so every encoder on the way out (json with
ensure_ascii=False, pydantic's serializer, a UTF-8 stream) raises on it. Inputs are refused
where they arrive (a coded error names the argument); outputs are repaired here, once, so an
answer (an error above all) cannot fail to be written.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_DEPTH = 200  # deeper than any message we build; deeper input is cut, not recursed into


def has_lone_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def scrub_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a well-formed pair is kept as its character)."""
    if _SURROGATE.search(text) is None:
        return text
    # UTF-16 round trip: a surrogate pair written as two code points joins into one
    # character, and only the unpaired halves become U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def scrub(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON-like value whose strings (keys too) are all encodable as UTF-8."""
    if isinstance(value, str):
        return scrub_text(value)
    if depth >= _MAX_DEPTH:
        return None
    if isinstance(value, dict):
        return {scrub(k, depth + 1) if isinstance(k, str) else k: scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, depth + 1) for v in value]
    return value


_TEXT_OR_NESTED = (str, dict, list, tuple)  # what can hold a surrogate: numbers, None and bools cannot
_NO_TEXT = frozenset({int, float, bool, type(None)})


def surrogate_paths(value: Any, path: str = "", depth: int = 0) -> list[str]:
    """Where in a JSON-like value a string (or key) holds a lone surrogate: 'query', 'hit.text', 'clip.2'.
    A path is spelled only where it is needed: a query vector's hundreds of numbers cost no string each."""
    if isinstance(value, str):
        return [path] if has_lone_surrogate(value) else []
    if depth >= _MAX_DEPTH:
        return []
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            bad_key = isinstance(key, str) and has_lone_surrogate(key)
            if not bad_key and not isinstance(item, _TEXT_OR_NESTED):
                continue
            where = f"{path}.{scrub_text(str(key))}" if path else scrub_text(str(key))
            if bad_key:
                found.append(where)
            found += surrogate_paths(item, where, depth + 1)
    elif isinstance(value, list | tuple):
        if _NO_TEXT.issuperset(map(type, value)):
            return found  # numbers only (a query vector): their types read at C speed, not item by item
        for index, item in enumerate(value):
            if isinstance(item, _TEXT_OR_NESTED):
                found += surrogate_paths(item, f"{path}.{index}" if path else str(index), depth + 1)
    return found


def needs_scrub(value: Any, depth: int = 0) -> bool:
    """Whether scrub(value) would differ from value (a lone surrogate in a string or key, a
    tuple, nesting past what scrub keeps), found without copying anything: an answer is nearly
    always clean, and copying every hit's dicts cost a tenth of a warm MCP search."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if depth >= _MAX_DEPTH:
        return True  # scrub cuts it
    if isinstance(value, dict):
        return any((isinstance(k, str) and _SURROGATE.search(k) is not None) or needs_scrub(v, depth + 1)
                   for k, v in value.items())
    if isinstance(value, tuple):
        return True  # scrub makes it a list
    if isinstance(value, list):
        return any(needs_scrub(v, depth + 1) for v in value)
    return False
