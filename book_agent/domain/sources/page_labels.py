"""Printed page labels ("iv", "55", "A-3"): finding the page a reader names.

A PDF's /PageLabels give each page the number printed on it; "page 55" of a book is often
page index 66 (front matter numbered i, ii, ...). A label is matched exactly, then ignoring
case and surrounding spaces ("IV" for "iv"); the first page wins when several share a label
(a book restarting its numbering per part), and all of them are reported. An unknown label
is an error listing the nearest labels the book has, so a reader can pick one.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from book_agent.domain.errors import BookAgentError

MAX_LABEL_CHARS = 64
NEAREST = 5


@dataclass(frozen=True)
class LabelMatch:
    page_index: int
    page_label: str
    pages: list[int]  # every page index with this label (first is page_index)


def _number(label: str) -> int | None:
    text = label.strip()
    # isdecimal, not isdigit: "²" is a digit that int() refuses (found by the property test)
    return int(text) if text.isdecimal() and len(text) < 10 else None


def _nearest(label: str, labels: Sequence[str | None]) -> list[dict[str, object]]:
    first: dict[str, int] = {}
    for index, value in enumerate(labels):
        if value:
            first.setdefault(value, index)
    wanted = _number(label)
    numbered = [(abs(n - wanted), first[v]) for v in first if (n := _number(v)) is not None] if wanted is not None else []
    if numbered:
        picks = [index for _, index in sorted(numbered)[:NEAREST]]
    else:
        close = difflib.get_close_matches(label, list(first), n=NEAREST, cutoff=0.0)
        picks = [first[v] for v in close]
    return [{"page_label": labels[i], "page_index": i} for i in sorted(picks)]


def check_label(label: object) -> str:
    if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL_CHARS:
        raise BookAgentError(
            "source.page_label_invalid", f"a page label is a non-empty string of at most {MAX_LABEL_CHARS} "
            f"characters, not {label!r}"[:300],
            details={"page_label": label if isinstance(label, str | int) else None},
            remediation="pass the label printed on the page, e.g. --page-label 55 or page_label \"iv\"",
        )
    return label


def find_label(label: object, labels: Sequence[str | None]) -> LabelMatch:
    """The page a label names; `labels[i]` is page i's label (None: unlabelled).
    Raises source.page_label_invalid / source.page_label_unknown (details.nearest)."""
    text = check_label(label)
    pages = [i for i, value in enumerate(labels) if value == text]
    if not pages:
        folded = text.strip().casefold()
        pages = [i for i, value in enumerate(labels) if value is not None and value.strip().casefold() == folded]
    if pages:
        return LabelMatch(pages[0], str(labels[pages[0]]), pages)
    nearest = _nearest(text, labels)
    known = ", ".join(f"{n['page_label']} (page_index {n['page_index']})" for n in nearest)
    raise BookAgentError(
        "source.page_label_unknown",
        f"no page is labelled {text!r}" + (f"; the nearest labels: {known}" if nearest else
                                          "; this book has no page labels"),
        details={"page_label": text, "nearest": nearest, "page_count": len(labels),
                 "labelled_pages": sum(1 for v in labels if v)},
        remediation="use one of the nearest labels, or a 0-based page_index" if nearest else
                    "this book has no page labels: use a 0-based page_index",
    )
