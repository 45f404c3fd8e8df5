"""The command that reads a located place in the original, printed by `locate` for people."""

from __future__ import annotations

from typing import Any


def read_command(loc: dict[str, Any]) -> str:
    """The command that reads this place in the original, runnable as printed."""
    import shlex

    book = shlex.quote(str(loc.get("book_id")))
    if loc.get("record_id"):
        return f"book-agent source {book} --record {shlex.quote(str(loc['record_id']))}"
    if loc.get("epub_cfi"):
        return f"book-agent source {book} --cfi {shlex.quote(str(loc['epub_cfi']))}"
    if loc.get("page_label") is not None and not loc.get("page_label_inferred"):
        return f"book-agent source {book} --page-label {shlex.quote(str(loc['page_label']))}"
    return f"book-agent --json locate {book} --quote '<the quotation>' > loc.json; book-agent source {book} --locator-json loc.json"
