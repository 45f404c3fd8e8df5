"""Issue 43, item 8 of its list (people's output): `search` lays each hit out for people at any
width, piped or not: nothing of a hit's place or scores is cut; the header names only the
channels that weigh in the fusion.

Real parts: a package built by the tests' builder, init and the CLI entry point as a user runs
it (stdout a pipe), at 30, 80 and 240 columns (COLUMNS)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from book_agent.cli.commands.search import channel_summary
from tests.support.cli_support import run_cli
from tests.support.package_builder import build_package


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layout")
    with BookAgent(root / "data") as agent:
        agent.init(build_package(root / "pkg", book_id="a-book-with-a-rather-long-identifier-for-narrow-screens"))
    return root / "data"


@pytest.mark.parametrize("columns", ["30", "80", "240"])
def test_every_hit_shows_its_whole_place_and_scores(data: Path, columns: str) -> None:
    book = "a-book-with-a-rather-long-identifier-for-narrow-screens"
    query = "battle calculations temple water ground rivers"
    as_json = json.loads(run_cli("--data-dir", str(data), "--json", "search", book, query, "-k", "5").stdout)
    out = run_cli("--data-dir", str(data), "search", book, query, "-k", "5", env={"COLUMNS": columns})
    assert out.code == 0
    flat = re.sub(r"\s+", "", out.stdout.decode())  # lines may wrap anywhere, nothing may be cut
    assert "…" not in out.stdout.decode()
    for hit in as_json["hits"]:
        assert hit["evidence_id"] in flat
        assert f"page_index{hit['source_locator']['page_index']}" in flat
        assert f"fused{hit['scores']['fused']:.3f}" in flat
        assert re.sub(r"\s+", "", hit["text"][:80]) in flat
    assert max(len(line) for line in out.stdout.decode().splitlines()) <= int(columns)


def test_the_header_names_the_channels_that_weigh() -> None:
    channels = {"lexical": {"ran": True, "weight": 1.0}, "vector": {"ran": True, "weight": 0.0},
                "rerank": {"ran": False}}
    assert channel_summary(channels) == "lexical (vector ran, weight 0)"
    assert channel_summary({"lexical": {"ran": True, "weight": 0.4}, "vector": {"ran": True, "weight": 0.6}}) \
        == "lexical, vector"
    assert channel_summary({"vector": {"ran": False}}) == "none"


def test_source_reads_a_record_and_locate_prints_a_runnable_command(data: Path) -> None:
    book = "a-book-with-a-rather-long-identifier-for-narrow-screens"
    shown = run_cli("--data-dir", str(data), "--json", "source", book, "--record", "r0002")
    assert shown.code == 0
    body = json.loads(shown.stdout)
    span = body["span_in_text"]
    assert body["text"][span["start"]:span["end"]].startswith("The general who wins a battle")
    located = run_cli("--data-dir", str(data), "locate", book, "--record", "r0002").stdout.decode()
    command = next(line for line in located.splitlines() if "read it:" in line).split("read it: ", 1)[1]
    assert "..." not in command and command == f"book-agent source {book} --record r0002"
    again = run_cli(*command.split()[1:3], "--data-dir", str(data), *command.split()[3:])
    assert again.code == 0 and "The general who wins a battle" in again.stdout.decode()


def test_a_reading_window_starts_and_ends_on_whole_words() -> None:
    from book_agent_adapters.sources.locator_checks import reading_window, word_window

    text = " ".join(f"word{n:04d}" for n in range(3000))  # 27,000 characters
    span = (text.index("word1500"), text.index("word1500") + 8)
    lo, hi = word_window(text, *reading_window(len(text), span, 12000), span)
    assert reading_window(len(text), span, 12000) != (lo, hi)  # the plain window cut words
    assert " " in (text[lo - 1], text[lo]) and " " in (text[hi - 1], text[hi]) and hi - lo <= 12000
    assert lo <= span[0] and span[1] <= hi
    cjk = "山路を登りながら、こう考えた。" * 2000
    assert word_window(cjk, *reading_window(len(cjk), (15000, 15004), 12000), (15000, 15004)) == \
        reading_window(len(cjk), (15000, 15004), 12000)  # every CJK character is a word of its own


def test_status_never_says_ok_for_a_script_the_model_cannot_read() -> None:
    from book_agent.cli.render_books import evidence_line

    assert evidence_line({"status": "ok", "reads": {"cjk": False, "latin": True}, "basis": "probe"}) \
        == "partly: reads latin, not cjk (from the probe)"
    assert evidence_line({"status": "ok", "reads": {"cjk": True, "latin": True}}).startswith("ok (")
