"""markdown_reader: book.md by record span, range and heading; SKILL.md with front matter."""

from __future__ import annotations

from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.files.sqlite_readonly import connect_readonly
from book_agent_adapters.sources.markdown_reader import (
    parse_front_matter,
    read_markdown,
    read_skill,
)
from tests.support.package_builder import SAMPLE_RECORDS
from tests.support.sources_support import package_info


def _span(root: Path, record_id: str) -> tuple[int, int]:
    con = connect_readonly(root / "index.sqlite")
    try:
        start, end = con.execute("SELECT md_start, md_end FROM records WHERE record_id = ?", (record_id,)).fetchone()
    finally:
        con.close()
    return int(start), int(end)


def test_record_span_with_context(pdf_package: Path) -> None:
    info = package_info(pdf_package)
    out = read_markdown(info, record_span=_span(pdf_package, "r0004"), record_id="r0004", context_chars=40)
    assert out["text"] == SAMPLE_RECORDS[3].text and out["mode"] == "record"
    assert len(out["context_before"]) == 40 and len(out["context_after"]) == 40
    assert out["headings"] == ["Chapter 2", "Plants"]
    zero = read_markdown(info, record_span=_span(pdf_package, "r0001"), record_id="r0001", context_chars=0)
    assert zero["context_before"] == "" and zero["context_after"] == ""


def test_character_range(pdf_package: Path) -> None:
    text = (pdf_package / "book.md").read_text(encoding="utf-8")
    out = read_markdown(package_info(pdf_package), start=10, end=60)
    assert out["text"] == text[10:60] and out["markdown_chars"] == len(text)
    whole = read_markdown(package_info(pdf_package), start=0)
    assert whole["text"] == text


def test_heading_section(pdf_package: Path) -> None:
    out = read_markdown(package_info(pdf_package), heading="chapter 2")
    assert out["text"].startswith("# Chapter 2") and SAMPLE_RECORDS[2].text in out["text"]
    assert SAMPLE_RECORDS[4].text not in out["text"] and out["level"] == 1
    sub = read_markdown(package_info(pdf_package), heading="## Taxes")
    assert sub["headings"] == ["Chapter 3", "Taxes"] and SAMPLE_RECORDS[5].text in sub["text"]
    chinese = read_markdown(package_info(pdf_package), heading="謀攻")
    assert SAMPLE_RECORDS[7].text in chinese["text"]


def test_headings_inside_code_fences_are_ignored(tmp_path: Path, pdf_package: Path) -> None:
    (pdf_package / "book.md").write_text("# Real\n\ntext\n\n```\n# Not a heading\n```\n\n## Sub\nmore\n", encoding="utf-8")
    info = package_info(pdf_package)
    with pytest.raises(BookAgentError) as bad:
        read_markdown(info, heading="Not a heading")
    assert bad.value.code == "markdown.heading_not_found" and "Real" in bad.value.details["some_headings"]
    assert "# Not a heading" in read_markdown(info, heading="Real")["text"]


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({}, "markdown.request_invalid"),
        ({"start": 0, "heading": "x"}, "markdown.request_invalid"),
        ({"start": 50, "end": 10}, "markdown.range_invalid"),
        ({"start": -1, "end": 10}, "markdown.range_invalid"),
        ({"start": 0, "end": 10**9}, "markdown.range_invalid"),
        ({"start": "0", "end": 10}, "markdown.range_invalid"),
        ({"record_id": "r1", "record_span": (None, None)}, "markdown.span_unknown"),
        ({"record_id": "r1", "record_span": (0, 5), "context_chars": -1}, "markdown.context_invalid"),
        ({"heading": "No Such Heading"}, "markdown.heading_not_found"),
        ({"heading": "  "}, "markdown.request_invalid"),
    ],
)
def test_bad_requests(pdf_package: Path, kwargs: dict[str, object], code: str) -> None:
    with pytest.raises(BookAgentError) as bad:
        read_markdown(package_info(pdf_package), **kwargs)  # type: ignore[arg-type]
    assert bad.value.code == code and bad.value.remediation


def test_missing_markdown(pdf_package: Path) -> None:
    (pdf_package / "book.md").unlink()
    with pytest.raises(BookAgentError) as bad:
        read_markdown(package_info(pdf_package), start=0, end=1)
    assert bad.value.code == "markdown.missing"


def test_skill(pdf_package: Path) -> None:
    out = read_skill(package_info(pdf_package))
    assert out["name"] == "test-book" and out["description"].startswith("Search and cite")
    assert out["body"].lstrip().startswith("# A Synthetic Test Book") and out["text"].startswith("---")
    (pdf_package / "SKILL.md").unlink()
    with pytest.raises(BookAgentError) as bad:
        read_skill(package_info(pdf_package))
    assert bad.value.code == "skill.missing"


def test_front_matter_parsing() -> None:
    meta, body = parse_front_matter('---\nname: "quoted"\ndescription: a: b\nlist:\n  - x\n---\nBody\n')
    assert meta == {"name": "quoted", "description": "a: b", "list": ""} and body == "Body\n"
    assert parse_front_matter("---\nname: never closed\n") == ({}, "---\nname: never closed\n")
    assert parse_front_matter("no front matter") == ({}, "no front matter")
