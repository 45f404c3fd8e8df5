"""Issue 44, item 1: parsing an EPUB is linear in time and memory, with an explicit depth limit
and a coded error past it, on every path (init's verification, locate, read_source, toc, CFIs).

Real parts: EPUBs written by the test (60,000 nested <div>s in a ~650 KB chapter, NCX nested
5,000 deep, nestings just under and over the limit), packages around them, the BookAgent, the
CLI in a subprocess, and memory measured in a subprocess (its own peak, VmHWM), never time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent.domain.errors import BookAgentError
from book_agent_adapters.sources.epub.cfi_map import walk
from book_agent_adapters.sources.epub.markup_depth import MAX_DEPTH, markup_depth
from tests.support import REPO_ROOT
from tests.support.cli_support import run_cli
from tests.support.epub_originals import chapter_document, epub_package, nested_divs, nested_ncx
from tests.support.package_builder import RecordSpec

RECORDS = [RecordSpec("r0001", "A plain paragraph of the first chapter, easy to find.", ["One"], 0),
           RecordSpec("r0002", "Deep text at the bottom of the nest.", ["Two"], 1)]


def _package(root: Path, depth: int, **epub: object) -> Path:
    bodies = ['<p id="p-r0001">A plain paragraph of the first chapter, easy to find.</p>',
              nested_divs(depth, '<p id="p-r0002">Deep text at the bottom of the nest.</p>')]
    return epub_package(root / "pkg", RECORDS, bodies, **epub)


@pytest.mark.parametrize(("markup", "depth"), [
    (nested_divs(40, "<p>x</p>"), 43),  # html, body, 40 divs, p
    ("<p>one<p>two<p>three<ul><li>a<li>b<li><p>c</ul>", 5),  # HTML's implied ends do not add up
    ("<!-- <div><div><div> --><script>if (a<b) {'<div><div>'}</script><br><img src='x'><hr/><p>x</p>", 3),
    ("<div>" * 300 + "<![CDATA[<div>]]>", 302),
])
def test_the_depth_scan_counts_as_a_parser_nests(markup: str, depth: int) -> None:
    assert markup_depth(chapter_document(markup), limit=1000) == depth


def test_the_cfi_map_of_a_deep_chapter_is_linear() -> None:
    """Each element's step is kept once: the map of 10,000 levels holds 10,000 steps, not 50 million."""
    xml = walk(chapter_document(nested_divs(10_000, "<p>deep</p>")))
    assert len(xml.paths) < 10_010 and xml.text == "deep"
    (chunk,) = [c for c in xml.chunks if c.text == "deep"]
    steps = xml.steps(chunk)
    assert len(steps) == 10_003 and xml.chunk_index(steps) == xml.chunks.index(chunk)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 10, 200])
def test_a_chapter_under_the_limit_reads_and_cites(tmp_path: Path, depth: int) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(_package(tmp_path, depth))
        loc = agent.locate_source("test-book", {"record_id": "r0002"})
        shown = agent.read_source("test-book", loc)
    assert loc["verification"]["method"] == "exact" and loc["verification"]["cfi"] == "verified"
    assert shown["text"] == "Deep text at the bottom of the nest."


@pytest.mark.parametrize("depth", [MAX_DEPTH + 2, 5_000, 60_000])
def test_a_chapter_over_the_limit_is_a_coded_error_on_every_path(tmp_path: Path, depth: int) -> None:
    with BookAgent(tmp_path / "data") as agent:
        agent.init(_package(tmp_path, depth))  # the rest of the book is still served
        state = agent.status("test-book")["sidecars"]["locators"]["verification"]
        assert state["failed_count"] == 1
        deep = agent.locate_source("test-book", {"record_id": "r0002"})
        assert deep["verification"]["method"] in ("unverified", "record-metadata")
        assert any(w.startswith("source.original_too_deep") for w in deep["warnings"])
        plain = agent.locate_source("test-book", "A plain paragraph of the first chapter")
        assert plain["verification"]["method"] == "exact" and plain["spine_index"] == 0
        with pytest.raises(BookAgentError) as caught:
            agent.read_source("test-book", {"href": "text/chapter02.xhtml"})
        assert caught.value.code == "source.original_too_deep" and caught.value.details["limit"] == MAX_DEPTH
        assert len(agent.get_toc("test-book")["entries"]) == 2  # the nav is not deep: contents still read


def test_an_ncx_nested_deep_is_a_coded_error_and_a_shallow_one_reads(tmp_path: Path) -> None:
    deep = epub_package(tmp_path / "deep", RECORDS[:1], ["<p>x</p>"], ncx=nested_ncx(5_000), nav=False)
    shallow = epub_package(tmp_path / "shallow", RECORDS[:1], ["<p>x</p>"], ncx=nested_ncx(120), nav=False)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(shallow)
        toc = agent.get_toc("test-book")
        assert toc["source"] == "epub-ncx" and [e["level"] for e in toc["entries"]] == list(range(1, 121))
        assert toc["entries"][119]["title"] == "Level 120"
        agent.init(deep, replace=True)
        with pytest.raises(BookAgentError) as caught:
            agent.get_toc("test-book")
    assert caught.value.code == "source.original_too_deep"
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "toc", "test-book")
    assert out.code != 0 and json.loads(out.stdout)["error"]["code"] == "source.original_too_deep"


PROBE = """
import sys
from book_agent.agent import BookAgent
with BookAgent(sys.argv[1]) as agent:
    agent.init(sys.argv[2])
    for call in (lambda: agent.read_source("test-book", {"href": "text/chapter02.xhtml"}),
                 lambda: agent.locate_source("test-book", "Deep text at the bottom of the nest"),
                 lambda: agent.get_toc("test-book")):
        try:
            call()
        except Exception as exc:
            print(getattr(exc, "code", type(exc).__name__))
# VmHWM, not ru_maxrss: Linux keeps a process's maxrss across exec, so ru_maxrss would report the
# pytest worker's size at the fork (a worker grown to 649 MB by earlier tests failed this once)
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) // 1024)
"""


def test_sixty_thousand_levels_in_650_kb_stay_small(tmp_path: Path) -> None:
    package = _package(tmp_path, 60_000)
    chapter = (package / "original" / "book.epub").stat().st_size
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "data"), str(package)], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=True)
    *codes, peak_mb = done.stdout.split()
    assert codes == ["source.original_too_deep", "source.quote_not_found"], done.stdout
    assert int(peak_mb) < 400, f"{peak_mb} MB for a {chapter}-byte EPUB"  # it was 21 GB
