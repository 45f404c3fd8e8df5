"""Issue 42, item 5: the builder's progress on stderr: a bar rewritten in place on a terminal,
lines off one, both with done/total and an ETA; --quiet writes nothing."""

from __future__ import annotations

import io

from book_agent_adapters.builder.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_progress_is_lines_with_an_eta() -> None:
    stream = io.StringIO()
    phase = Progress(stream=stream, every_s=0).phase("encoding 4 records")
    for done in range(1, 5):
        phase.tick(done, 4)
    phase.done("4 vectors")
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert [line.split(": ", 2)[2].split(" (")[0] for line in lines[:3]] == ["1/4", "2/4", "3/4"]
    assert all("ETA" in line for line in lines[:3])
    assert lines[-1].startswith("book-agent-build: encoding 4 records: 4 vectors (")


def test_on_a_terminal_progress_is_a_bar_in_place() -> None:
    stream = Terminal()
    phase = Progress(stream=stream).phase("reading")
    phase.tick(1, 2)
    phase.tick(2, 2)
    phase.done("done")
    text = stream.getvalue()
    assert text.count("\r") >= 3 and "[############............] 1/2" in text and "ETA" in text
    assert text.splitlines()[-1].endswith("book-agent-build: reading: done (0.0 s)")


def test_quiet_writes_nothing() -> None:
    stream = Terminal()
    progress = Progress(quiet=True, stream=stream)
    phase = progress.phase("reading")
    phase.tick(1, 2)
    phase.done("done")
    progress.say("a note")
    assert stream.getvalue() == ""


def test_a_page_of_only_running_lines_keeps_them_as_its_text() -> None:
    """Issue 42's running heads: a line repeated (digits aside) on every page is furniture only
    beside body text; a short book whose pages hold just "Chapter N ..." keeps them."""
    from book_agent_adapters.builder.layout import PageLines, mark_furniture, split_lines

    alone = [f"Chapter {i} begins here with words enough." for i in range(4)]
    framed = [f"Chapter {i} begins here with words enough.\nBody text {chr(97 + i)} of the page.\n{i + 1}"
              for i in range(4)]
    pages = [PageLines(t, split_lines(t)) for t in alone + framed]
    mark_furniture(pages, [None] * len(pages))
    assert [p.text[slice(*p.body)] for p in pages[:4]] == alone
    assert [p.text[slice(*p.body)] for p in pages[4:]] == [f"Body text {chr(97 + i)} of the page." for i in range(4)]
