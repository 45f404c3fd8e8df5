"""A book's words from its impact file, without the file's postings: what a library member's
warm-up teaches the passage reader (passage_terms.py) while the library searches its own
index (the postings, ~120 MB at 250k records, are then never loaded)."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from book_agent_adapters.files.safe_files import open_regular

WORD_BYTES = 40  # a word, its term and their JSON punctuation, generously: the cap on what is read


def made_for(data: Any, sidecar_identity: list[int], headings_weight: float) -> bool:
    """Whether an opened impact file (np.load's archive) was built for this very sidecar."""
    from book_agent_adapters.book.lexical.book_impact import FORMAT

    meta = json.loads(data["meta"].tobytes().decode("utf-8"))
    return bool(meta == {"format": FORMAT, "sidecar": sidecar_identity, "headings_weight": headings_weight})


def words_of(data: Any) -> dict[str, str] | None:
    """An opened impact file's words and their FTS5 terms (None: not a mapping, so damaged)."""
    words = json.loads(data["words"].tobytes().decode("utf-8"))
    return {str(w): str(t) for w, t in words.items()} if isinstance(words, dict) else None


def impact_words(path: Path, sidecar_identity: list[int], headings_weight: float,
                 max_words: int) -> dict[str, str] | None:
    """The book's words and their FTS5 terms from the impact file of this very sidecar; None
    when the file is missing, of another sidecar, damaged, or holds more than about `max_words`
    words (their member is then not read)."""
    import numpy as np

    try:
        with open_regular(path) as handle, np.load(handle, allow_pickle=False) as data:
            if not made_for(data, sidecar_identity, headings_weight) \
                    or data.zip.getinfo("words.npy").file_size > max_words * WORD_BYTES:
                return None
            return words_of(data)
    except (OSError, KeyError, ValueError, EOFError, IndexError, zipfile.BadZipFile, UnicodeDecodeError):
        return None


def teach(on_words: Callable[[Mapping[str, str]], None] | None, path: Path, sidecar_identity: list[int] | None,
          headings_weight: float, max_words: int) -> bool:
    """Tell `on_words` the words (True), or nothing when there are none to tell."""
    if on_words is None or sidecar_identity is None:
        return False
    words = impact_words(path, sidecar_identity, headings_weight, max_words)
    if not words:
        return False
    on_words(words)
    return True
