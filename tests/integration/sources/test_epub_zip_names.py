"""Issue 43, item 3: an EPUB whose zip names lack the UTF-8 flag is read as readers read it.

Real parts: EPUBs with Japanese and Chinese file names written by the test, their headers then
rewritten as Info-ZIP writes them under LC_ALL=C (raw UTF-8 bytes, flag bit 11 clear), for
every member or some (mixed), and with two members differing only in how their name is
encoded; packages around them and the BookAgent (init, locate, read_source, toc).
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent_adapters.sources.epub.reader import EpubSource
from tests.support.epub_originals import epub_package, strip_utf8_flag, write_epub_original
from tests.support.package_builder import RecordSpec, rehash

HREFS = ["text/第一章.xhtml", "text/二 章.xhtml"]
RECORDS = [RecordSpec("r0001", "吾輩は猫である。名前はまだ無い。", ["一"], 0),
           RecordSpec("r0002", "どこで生れたかとんと見当がつかぬ。", ["二"], 1)]
BODIES = [f'<p id="p-{r.record_id}">{r.text}</p>' for r in RECORDS]


def _package(tmp_path: Path, which: object) -> Path:
    package = epub_package(tmp_path / "pkg", RECORDS, BODIES, hrefs=HREFS)
    strip_utf8_flag(package / "original" / "book.epub", "utf-8", which)  # type: ignore[arg-type]
    rehash(package)
    return package


@pytest.mark.parametrize("which", [lambda i, n: True, lambda i, n: i % 2 == 0, lambda i, n: "二" in n],
                         ids=["all-unflagged", "mixed", "one-chapter-unflagged"])
def test_unflagged_names_are_read_as_utf8(tmp_path: Path, which: object) -> None:
    package = _package(tmp_path, which)
    with zipfile.ZipFile(package / "original" / "book.epub") as z:  # the condition is real: zipfile reads CP437
        assert any(not (i.flag_bits & 0x800) and not i.filename.isascii() for i in z.infolist()) or "二" not in str(which)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(package)
        assert agent.status("test-book")["sidecars"]["locators"]["verification"]["failed_count"] == 0
        for record in RECORDS:
            loc = agent.locate_source("test-book", {"record_id": record.record_id})
            assert loc["verification"]["method"] == "exact" and loc["href"] == HREFS[record.page]
            assert agent.read_source("test-book", loc)["text"] == record.text
        assert [e["target"] for e in agent.get_toc("test-book")["entries"]] == ["chapter", "chapter"]


def test_a_name_twice_in_two_encodings_reads_the_declared_one(tmp_path: Path) -> None:
    path = write_epub_original(tmp_path / "book.epub", BODIES, hrefs=HREFS)
    good = zipfile.ZipFile(path).read("OEBPS/text/第一章.xhtml")
    for first in ("stale", "good"):
        dup = tmp_path / f"dup-{first}.epub"
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(dup, "w") as dst, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the duplicate name is the point
            for info in src.infolist():
                if info.filename.endswith("第一章.xhtml") and first == "stale":
                    dst.writestr(info.filename, good.replace("吾輩".encode(), b"XX"))
                dst.writestr(info, src.read(info))
                if info.filename.endswith("第一章.xhtml") and first == "good":
                    dst.writestr(info.filename, good.replace("吾輩".encode(), b"XX"))
        # the stale copy loses its flag: the same name, read from undeclared bytes
        names = [i.filename for i in zipfile.ZipFile(dup).infolist()]
        stale_at = [k for k, n in enumerate(names) if n.endswith("第一章.xhtml")][0 if first == "stale" else 1]
        strip_utf8_flag(dup, "utf-8", lambda i, n, at=stale_at: i == at)
        source = EpubSource(dup)
        try:
            assert source.chapter(source.spine[0]).text == RECORDS[0].text
        finally:
            source.close()


def test_names_that_are_not_utf8_keep_the_zip_standards_reading(tmp_path: Path) -> None:
    path = write_epub_original(tmp_path / "book.epub", BODIES, hrefs=["text/ch1.xhtml", "text/ch2.xhtml"])
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("images/caf\xe9.png", b"not really")
    strip_utf8_flag(path, "cp437")
    source = EpubSource(path)
    try:
        assert source.member("images/caf\xe9.png") == b"not really"  # CP437 bytes, not UTF-8: CP437
        assert source.chapter(source.spine[1]).text == RECORDS[1].text
    finally:
        source.close()
