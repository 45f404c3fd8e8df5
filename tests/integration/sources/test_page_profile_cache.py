"""Page profiles kept in the book's runtime folder (sources/pdf/page_profile_cache.py): the first
process to read a page's objects keeps its profile; later ones answer without opening the PDF,
for this very original only, and a damaged, foreign or unwritable file costs a read, never a
wrong profile or an error. Real parts: the labelled set's typeset PDF, real files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from book_agent.domain.search.page_profile import page_signals
from book_agent_adapters.sources.pdf.page_profile_cache import FILE_NAME, CachedPageProfiles
from book_agent_adapters.sources.pdf.reader import PdfSource

ROOT = Path(__file__).resolve().parents[3]
OCTAVE = ROOT / "eval" / "visual_fallback" / "physical-modeling-octave.pdf"


class CountingSources:
    """The book's sources as the store meets them: a real PdfSource, its reads counted."""

    def __init__(self, path: Path) -> None:
        self._pdf = PdfSource(path)
        self.reads: list[int] = []

    def pdf(self) -> PdfSource:
        return self._pdf

    def page_profile(self, page: int) -> Any:
        self.reads.append(page)
        return self._pdf.page_profile(page)


@pytest.fixture
def original(tmp_path: Path) -> Path:
    copy = tmp_path / "book.pdf"
    shutil.copyfile(OCTAVE, copy)
    return copy


def store(original: Path, runtime: Path, sources: CountingSources, kind: str = "pdf") -> CachedPageProfiles:
    runtime.mkdir(exist_ok=True)
    return CachedPageProfiles(original, kind, runtime, lambda: sources)


def test_a_page_is_read_once_for_every_later_process(original: Path, tmp_path: Path) -> None:
    first = CountingSources(original)
    drawn = store(original, tmp_path / "rt", first).page_profile(29)
    assert first.reads == [29] and {c for c, _ in page_signals(drawn)} == {"page.drawing"}
    later = CountingSources(original)  # another process: its own store, the same folder
    again = store(original, tmp_path / "rt", later)
    assert again.page_profile(29) == drawn and later.reads == []  # the PDF is not opened
    assert again.page_profile(24) is not None and later.reads == [24]
    assert store(original, tmp_path / "rt", CountingSources(original)).page_profile(24) == again.page_profile(24)


def test_another_original_or_a_damaged_file_is_read_again(original: Path, tmp_path: Path) -> None:
    runtime = tmp_path / "rt"
    profile = store(original, runtime, CountingSources(original)).page_profile(29)
    os.utime(original, ns=(1_000_000_000, 1_000_000_000))  # the package replaced in place
    replaced = CountingSources(original)
    assert store(original, runtime, replaced).page_profile(29) == profile and replaced.reads == [29]
    kept = json.loads((runtime / FILE_NAME).read_text())
    for damage in ({**kept, "pages": {"29": [1, 2, 3]}}, {**kept, "pages": {"29": [True] * 9}},
                   {**kept, "format": 99}, {**kept, "fields": ["x"]}, [], "junk"):
        (runtime / FILE_NAME).write_text(json.dumps(damage))
        fresh = CountingSources(original)
        assert store(original, runtime, fresh).page_profile(29) == profile and fresh.reads == [29]
    (runtime / FILE_NAME).write_bytes(b"\xff[" * 1000)
    assert store(original, runtime, CountingSources(original)).page_profile(29) == profile


def test_an_unwritable_folder_costs_a_read_not_an_error(original: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # the runtime folder cannot be made under a file: every write fails (also as root)
    sources = CountingSources(original)
    unwritable = CachedPageProfiles(original, "pdf", blocked / "rt", lambda: sources)
    assert unwritable.page_profile(29) is not None and unwritable.page_profile(29) is not None
    assert sources.reads == [29]  # kept in memory all the same
    again = CountingSources(original)
    assert CachedPageProfiles(original, "pdf", blocked / "rt", lambda: again).page_profile(29) is not None
    assert again.reads == [29]


def test_an_epub_opens_nothing(original: Path, tmp_path: Path) -> None:
    epub = CountingSources(original)
    assert store(original, tmp_path / "rt", epub, kind="epub").page_profile(29) is None and epub.reads == []


def test_registration_profiles_every_page_once_so_no_search_opens_the_pdf(original: Path, tmp_path: Path) -> None:
    pages = PdfSource(original).page_count
    assert store(original, tmp_path / "rt", CountingSources(original)).profile_all() == pages
    assert store(original, tmp_path / "rt", CountingSources(original)).profile_all() == 0  # kept already
    later = CountingSources(original)
    searched = store(original, tmp_path / "rt", later)
    assert all(searched.page_profile(p) is not None for p in range(pages)) and later.reads == []
    assert {c for c, _ in page_signals(searched.page_profile(29))} == {"page.drawing"}
    assert store(original, tmp_path / "rt2", CountingSources(original), kind="epub").profile_all() == 0
