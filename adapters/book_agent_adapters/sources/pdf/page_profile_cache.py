"""Page profiles kept in the book's runtime folder, so a search reads a page's objects once.

The visual-fallback advice asks for the profile of a PDF hit's page (sources/pdf/page_profile.py)
when the hit's text says nothing. Reading one costs opening the PDF (importing PDFium, ~50 ms in
a new process) and ~5 ms a page; a one-shot CLI search paid that for every hit (a cold search
took 2.5x as long, issue 46). A profile is a few numbers that never change for the same
original, so the first process to read a page keeps it in `page_profiles.json` beside the
book's other derived data, and every later process (a new CLI search, a server's worker)
answers from that file without opening the PDF.

The file names the original's size and mtime: another original (a package replaced in place)
makes it stale and it is read again. It is written whole, by one rename, best effort: a
read-only data dir only means the profiles are read again next time, and a damaged or foreign
file is ignored. Two processes writing at once may drop each other's newest pages, which are
then read again: never a wrong profile.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import astuple, fields
from pathlib import Path
from typing import Any

from book_agent.domain.search.page_profile import PageProfile

FILE_NAME = "page_profiles.json"
FORMAT = 1
_FIELDS = tuple(f.name for f in fields(PageProfile))


class CachedPageProfiles:
    """`page_profile(page)` from the runtime folder's file, else from `sources()` (the book's
    SourceResolver, made only on a miss), then kept."""

    def __init__(self, original: Path | None, kind: str | None, runtime_dir: Path,
                 sources: Callable[[], Any]) -> None:
        self.original = original
        self.kind = kind
        self.path = Path(runtime_dir) / FILE_NAME
        self._sources = sources
        self._lock = threading.Lock()
        self._pages: dict[int, PageProfile] | None = None
        self._identity: list[int] | None = None

    def page_profile(self, page_index: int) -> PageProfile | None:
        if self.kind != "pdf" or self.original is None:
            return None  # an EPUB has no pages to profile: nothing to open
        with self._lock:
            pages = self._loaded()
            found = pages.get(page_index)
        if found is not None:
            return found
        source = self._sources()
        reader = getattr(source, "page_profile", None)
        profile = reader(page_index) if callable(reader) else None
        if isinstance(profile, PageProfile):
            with self._lock:
                self._loaded()[page_index] = profile
                self._save()
        return profile

    def profile_all(self) -> int:
        """Every page's profile read now and kept (registration and `prepare` call it, after
        the locators' check has read the original anyway), so no search opens the PDF for its
        advice: a one-shot search stays light. The number of pages read; 0 for an EPUB, a PDF
        that cannot be opened, or pages kept already."""
        if self.kind != "pdf" or self.original is None:
            return 0
        try:
            pdf = self._sources().pdf()
            pages = int(pdf.page_count)
        except Exception:  # noqa: BLE001  (no original to read: the advice rests on the text)
            return 0
        with self._lock:
            missing = [p for p in range(pages) if p not in self._loaded()]
        read: dict[int, PageProfile] = {}
        for page in missing:
            try:
                read[page] = pdf.page_profile(page)
            except Exception:  # noqa: BLE001  (an unreadable page: asked again by a search)
                continue
        if read:
            with self._lock:
                self._loaded().update(read)
                self._save()
        return len(read)

    def _loaded(self) -> dict[int, PageProfile]:
        if self._pages is None:
            self._identity = _identity(self.original)
            self._pages = _read(self.path, self._identity)
        return self._pages

    def _save(self) -> None:
        from book_agent_adapters.files.atomic_write import write_atomic

        if self._identity is None or self._pages is None:
            return
        data = {"format": FORMAT, "fields": list(_FIELDS), "original": self._identity,
                "pages": {str(k): list(astuple(v)) for k, v in sorted(self._pages.items())}}
        with contextlib.suppress(OSError):  # a read-only data dir: read again next time
            write_atomic(self.path, json.dumps(data, separators=(",", ":")).encode("utf-8"))


def _identity(original: Path | None) -> list[int] | None:
    try:
        st = os.stat(original) if original is not None else None
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns] if st is not None else None


def _read(path: Path, identity: list[int] | None) -> dict[int, PageProfile]:
    """The file's profiles when it is this format, for this very original; else none."""
    if identity is None:
        return {}
    try:
        data = json.loads(path.read_bytes())
        if data.get("format") != FORMAT or data.get("fields") != list(_FIELDS) or data.get("original") != identity:
            return {}
        found: dict[int, PageProfile] = {}
        for key, values in data["pages"].items():
            if not (isinstance(values, list) and len(values) == len(_FIELDS)
                    and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)):
                return {}  # a damaged file: trust none of it
            found[int(key)] = PageProfile(*values)
        return found
    except (OSError, ValueError, TypeError, AttributeError, KeyError, RecursionError):
        return {}
