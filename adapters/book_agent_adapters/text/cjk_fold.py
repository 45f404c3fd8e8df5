"""Traditional and simplified Chinese fold to one form for matching (OpenCC, t2s).

A reader types 用间 for a book printed 用間, or 战争 for 戰爭: the lexical channel must find
either way. Both the index and the queries go through the same fold, so the choice of target
(simplified) only matters for matching, never for what is shown: hits carry the book's own text.
OpenCC loads only when a text holds CJK characters (10 ms import, 16 ms dictionary load).
"""

from __future__ import annotations

import threading
from typing import Any

from book_agent.domain.search.lexical_text import CJK_RUN, may_hold_cjk

_converter: Any = None
_lock = threading.Lock()


def _opencc() -> Any:
    global _converter
    with _lock:
        if _converter is None:
            import opencc

            _converter = opencc.OpenCC("t2s")
    return _converter


def fold_chinese(text: str) -> str:
    if not may_hold_cjk(text) or not CJK_RUN.search(text):
        return text
    folded: str = _opencc().convert(text)
    return folded
