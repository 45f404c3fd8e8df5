"""Fixes from the QA pass of the sources part: honest fuzzy spans, quote-not-found errors,
block-level EPUB fragments, PDF page labels, and literal human CLI output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.text_match import (
    FUZZY_THRESHOLD,
    find_fuzzy,
    normalize,
    normalize_key,
    snap_to_words,
)
from book_agent_adapters.sources.epub.chapter_text import extract_chapter
from book_agent_adapters.sources.markdown_reader import read_markdown
from book_agent_adapters.sources.passage_search import UnitTexts, find_passage
from book_agent_adapters.sources.resolver import SourceResolver
from book_agent_adapters.sources.verify import nearest_fragment
from tests.support import REPO_ROOT
from tests.support.cli_support import run_cli
from tests.support.package_builder import SAMPLE_RECORDS, RecordSpec, build_package
from tests.support.sources_support import package_info, sources_cli

ROOT = REPO_ROOT
EXAMPLE = ROOT / "examples" / "art-of-war-package"
NOTE = ("立勝. Cf. chapter I, “All warfare is based on deception.” In the tactics of Turenne, deception of the "
        "enemy was the leading principle.")


def _is_boundary(text: str, i: int) -> bool:
    return i in (0, len(text)) or not (text[i - 1].isalnum() and text[i].isalnum())


# -- fuzzy matching ------------------------------------------------------------------------------

def test_a_misquote_is_not_matched_to_a_mid_word_fragment() -> None:
    m = find_fuzzy(normalize(NOTE), normalize_key("All warfare is based on deceit and lies"))
    assert m is not None and m.score < FUZZY_THRESHOLD
    assert _is_boundary(NOTE, m.start) and _is_boundary(NOTE, m.end), NOTE[m.start : m.end]


def test_fuzzy_spans_cover_the_quotation_and_end_on_word_boundaries() -> None:
    needle = "All warfare is basde on deceptoin"  # two typos: still the same passage
    m = find_fuzzy(normalize(NOTE), normalize_key(needle))
    assert m is not None and m.score >= FUZZY_THRESHOLD
    assert NOTE[m.start : m.end].startswith("All warfare") and NOTE[m.start : m.end].rstrip(".”").endswith("deception")
    assert _is_boundary(NOTE, m.start) and _is_boundary(NOTE, m.end)


def test_snapping_widens_latin_words_but_not_cjk_characters() -> None:
    text = "the deception of 兵者國之大事 here"
    assert snap_to_words(text, 6, 9) == (4, 13)  # 'cep' -> 'deception'
    cjk = text.index("國")
    assert snap_to_words(text, cjk, cjk + 2) == (cjk, cjk + 2)


def test_an_exact_match_elsewhere_beats_a_fuzzy_one_near_the_claim() -> None:
    real = "The general who wins a battle makes many calculations in his temple before the battle is fought."
    typo = real.replace("calculations", "calculatoins").replace("temple", "tempel")
    texts = [f"Intro. {typo} More.", "filler one", "filler two", "filler three", f"Appendix: {real}"]
    units = UnitTexts(len(texts), texts.__getitem__)
    found = find_passage(units, real, normalize_key(real), claimed=0, hint=None)
    assert found.unit == 4 and found.match is not None and found.match.method == "exact"
    assert find_passage(units, typo, normalize_key(typo), claimed=4, hint=None).unit == 0  # and the other way


# -- the example book ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def war(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SourceResolver]:
    with SourceResolver(package_info(EXAMPLE), tmp_path_factory.mktemp("rt")) as resolver:
        yield resolver


@pytest.mark.slow
def test_example_misquote_is_refused_and_the_real_verse_found(war: SourceResolver) -> None:
    with pytest.raises(BookAgentError) as bad:
        war.locate("All warfare is based on deceit and lies")
    assert bad.value.code == "source.quote_not_found" and "search" in (bad.value.remediation or "")
    assert bad.value.details["best_score"] < FUZZY_THRESHOLD
    loc = war.locate("All warfare is based on deception")
    assert loc["href"] == "text/chapter-1.xhtml" and loc["verification"]["method"] == "exact"
    near = war.locate("All warfare is based on deceptoin.")  # a typo: fuzzy, whole words, whole quote
    text = war.epub().chapter(war.epub().spine[near["spine_index"]]).text
    assert near["verification"]["method"] == "fuzzy" and near["href"] == "text/chapter-1.xhtml"  # not the note quoting it
    assert text[near["char_start"] : near["char_end"]].startswith("All warfare is based on deception")


def test_example_record_cites_its_paragraph_not_a_noteref(war: SourceResolver) -> None:
    loc = war.locate({"record_id": "ch13-v03-07"})
    assert loc["fragment"] == "chapter-13-p-1" and loc["verification"]["method"] == "exact"
    quote = war.locate("Knowledge of the enemy’s dispositions can only be obtained from other men.")
    assert not str(quote["fragment"]).startswith("noteref"), quote["fragment"]


def test_a_record_that_is_not_found_stays_unverified(war: SourceResolver) -> None:
    loc = war.locate({"record_id": "ch13-v03-07", "text": "Entirely unrelated words about submarine volcanoes."})
    # a record id wins over the hit's text (the record's full text is read): still exact
    assert loc["verification"]["method"] == "exact"
    hit = war.locate({"text": "Entirely unrelated words about submarine volcanoes and jazz.",
                      "source_locator": {"href": "text/chapter-13.xhtml"}})
    assert hit["verification"]["method"] == "unverified" and hit["warnings"]


def test_nearest_fragment_prefers_block_anchors_and_the_records_own_block() -> None:
    text, fragments, anchors = extract_chapter(
        b"<html><body><section id='s'><h2 id='h'>Title<a id='nr-1' href='n.xhtml#n1'>1</a></h2>"
        b"<p id='p1'>First para.<a id='nr-2' href='n.xhtml#n2'>2</a></p><p>Second para.</p>"
        b"<p><a id='old-anchor'/>Third para.</p></section></body></html>"
    )
    second, third = text.index("Second"), text.index("Third")
    assert "nr-1" in fragments and "nr-2" not in anchors and "old-anchor" in anchors
    assert nearest_fragment(fragments, anchors, second, second + 6, None) == "p1"
    assert nearest_fragment(fragments, anchors, second, second + 6, "nr-2") == "p1"  # never a noteref
    assert nearest_fragment(fragments, anchors, second, second + 6, "s") == "s"  # its own block holds the span
    assert nearest_fragment(fragments, anchors, third, third + 5, "p1") == "old-anchor"  # p1 does not hold it


# -- PDF page labels -----------------------------------------------------------------------------

def test_pdf_page_labels_come_from_the_records_when_the_pdf_has_none(pdf_package: Path, tmp_path: Path) -> None:
    with SourceResolver(package_info(pdf_package), tmp_path / "rt") as resolver:
        assert resolver.pdf().page_label(2) is None  # the builder's PDF has no /PageLabels
        loc = resolver.locate("the yearly grain tribute")
        assert loc["page_index"] == 2 and loc["page_label"] == "3"
        assert resolver.read_source({"page_index": 2})["page_label"] == "3"
        assert resolver.render_page(2, dpi=36)["page_label"] == "3"
        assert resolver.read_source({"page_index": 5})["page_label"] is None  # the blank page has no record


# -- human CLI output ----------------------------------------------------------------------------

MARKUP = "Brackets [/i] and [red]red[/red] and :warning: must print literally, as must [bold]x[/bold]."


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[tuple[CliRunner, typer.Typer, Path]]:
    records = [*SAMPLE_RECORDS[:4], RecordSpec("r0099", MARKUP, ["Chapter 9", "Odd [/i] heading"], 2), *SAMPLE_RECORDS[4:6]]
    package = build_package(tmp_path / "pkg", kind="pdf", records=records)
    yield CliRunner(), sources_cli(package, tmp_path / "data", json_output=False), package


def _run(cli: tuple[CliRunner, typer.Typer, Path], *args: str, stdin: str | None = None) -> str:
    runner, app, _ = cli
    result = runner.invoke(app, list(args), input=stdin, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_human_read_shows_headings_source_and_span_literally(cli: tuple[CliRunner, typer.Typer, Path]) -> None:
    out = _run(cli, "read", "test-book", "r0099")
    assert MARKUP in out and "headings: Chapter 9 > Odd [/i] heading" in out
    assert "source: page_index 2 (page label 3)" in out and "book.md: chars " in out
    assert "\npage 3" not in out


def test_human_markdown_shows_context_and_marks_the_record(cli: tuple[CliRunner, typer.Typer, Path]) -> None:
    out = _run(cli, "markdown", "test-book", "--record", "r0099", "--context", "60")
    assert f"»{MARKUP}«" in out
    before, _, after = out.partition("»")
    assert before.strip() and after.split("«", 1)[1].strip()  # context on both sides, visible
    short = _run(cli, "markdown", "test-book", "--record", "r0099", "--context", "0")
    assert len(short) < len(out)


def test_human_skill_is_printed_as_is(cli: tuple[CliRunner, typer.Typer, Path]) -> None:
    _, _, package = cli
    skill = (package / "SKILL.md").read_text(encoding="utf-8")
    out = _run(cli, "skill", "test-book")
    assert out.rstrip("\n") == skill.rstrip("\n") and out.count("name: test-book") == 1


def test_human_source_marks_the_span_and_says_truncated(cli: tuple[CliRunner, typer.Typer, Path]) -> None:
    import json

    from book_agent.agent import BookAgent

    loc_out = _run(cli, "locate", "test-book", "--record", "r0099")
    assert "page_index 2 (page label 3)" in loc_out and "verified: " in loc_out
    located = BookAgent(data_dir=cli[2].parent / "data").locate_source("test-book", {"record_id": "r0006"})
    out = _run(cli, "source", "test-book", "--locator-json", "-", "--max-chars", "40", stdin=json.dumps(located))
    assert "»Table 2" in out and out.count("»") == 1 and "…" in out and "«" not in out  # the span is cut too
    assert "truncated" in out and "page_index 2 (page label 3)" in out
    whole = _run(cli, "source", "test-book", "--locator-json", "-", stdin=json.dumps(located))
    assert "»Table 2 lists the tax rates" in whole and "grain tribute.«" in whole and "truncated" not in whole
    page = {"book_id": "test-book", "kind": "pdf", "page_index": 2}
    full = _run(cli, "source", "test-book", "--locator-json", "-", stdin=json.dumps(page))
    assert "[/i] and [red]red[/red] and :warning:" in full and "truncated" not in full  # the PDF wraps lines
    assert "page_index 2 (page label 3)" in _run(cli, "render", "test-book", "2", "--dpi", "36")


def test_cli_quote_not_found_is_an_error(cli: tuple[CliRunner, typer.Typer, Path]) -> None:
    runner, app, _ = cli
    with pytest.raises(BookAgentError) as bad:
        runner.invoke(app, ["locate", "test-book", "--quote", "Submarines and volcanoes play jazz all night long."],
                      catch_exceptions=False)
    assert bad.value.code == "source.quote_not_found"


def test_heading_not_found_lists_the_headings(pdf_package: Path) -> None:
    with pytest.raises(BookAgentError) as bad:
        read_markdown(package_info(pdf_package), heading="Nope")
    assert "Chapter 1" in bad.value.message and "--start" not in (bad.value.remediation or "")
    assert "Chapter 1" in bad.value.details["some_headings"]


@pytest.mark.slow
def test_cli_exit_code_for_a_quote_that_is_not_in_the_book(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    assert run_cli("--data-dir", data, "init", str(EXAMPLE)).code == 0
    bad = run_cli("--data-dir", data, "locate", "art-of-war", "--quote", "All warfare is based on deceit and lies")
    assert bad.code != 0 and "source.quote_not_found" in bad.stderr and b"None..None" not in bad.stdout
