"""Issue 43, item 5: verification does not trim correct offsets, and "corrected" means wrong.

Real parts: an EPUB written by the test whose paragraphs open with a minus sign, private-use
bracket glyphs and a dash, records whose text differs from the chapter's only in spacing (so
they match normalised), with right, absent and wrong claimed offsets; init and locate."""

from __future__ import annotations

from pathlib import Path

from book_agent.agent import BookAgent
from book_agent_adapters.sources.epub.chapter_text import extract_chapter
from tests.support.epub_originals import chapter_document, epub_package
from tests.support.package_builder import RecordSpec, rehash
from tests.support.sources_support import record_source, set_record

PRINTED = ["\u22125 is less than zero, as every reader knows.",
           "\ue000Smith 1990\ue001 showed the bound is tight.",
           "\u2014 and so the proof ends here, with a dash."]
BODY = "".join(f'<p id="p-r{i:04d}">{t}</p>' for i, t in enumerate(PRINTED, start=1))


def test_spans_keep_their_edges_and_right_claims_stay_uncorrected(tmp_path: Path) -> None:
    records = [RecordSpec(f"r{i:04d}", t.replace(" is ", "  is ").replace(" showed", "\nshowed").replace(" and", "  and"),
                          ["One"], 0) for i, t in enumerate(PRINTED, start=1)]
    package = epub_package(tmp_path / "pkg", records, [BODY])
    text, _, _ = extract_chapter(chapter_document(BODY))
    right = {r.record_id: (text.index(p), text.index(p) + len(p)) for r, p in zip(records, PRINTED, strict=True)}
    for record_id, (start, end) in right.items():  # the builder's claims: right, except r0003's (wrong)
        source = record_source(package, record_id)
        shift = 5 if record_id == "r0003" else 0
        set_record(package, record_id, {**source, "char_start": start + shift, "char_end": end + shift})
    rehash(package)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(package)
        for record_id, (start, end) in right.items():
            loc = agent.locate_source("test-book", {"record_id": record_id})
            assert loc["verification"]["method"] == "normalized"
            assert (loc["char_start"], loc["char_end"]) == (start, end), (record_id, text[loc["char_start"]:loc["char_end"]])
            corrected = loc["verification"]["corrected"]
            assert ("char_range" in corrected) == (record_id == "r0003")
        for printed in PRINTED:  # a quotation without a claim: the whole printed passage
            loc = agent.locate_source("test-book", printed.replace(" the ", "  the "))
            assert text[loc["char_start"]:loc["char_end"]] == printed
