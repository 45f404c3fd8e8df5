"""PackageMarkdownReader: the MarkdownReader port over sources/markdown_reader.py, which
loads on first use (a search needs no Markdown)."""

from __future__ import annotations

from typing import cast

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.sources.source_results import MarkdownSlice, Skill
from book_agent.ports import MarkdownReader


class PackageMarkdownReader(MarkdownReader):
    """book.md and SKILL.md of a package."""

    def read_markdown(self, package: PackageInfo, *, record_span: tuple[int | None, int | None] | None,
                      record_id: str | None, start: int | None, end: int | None,
                      heading: str | None, context_chars: int) -> MarkdownSlice:
        from book_agent_adapters.sources.markdown_reader import read_markdown

        return cast(MarkdownSlice, read_markdown(package, record_span=record_span, record_id=record_id, start=start,
                                                 end=end, heading=heading, context_chars=context_chars))

    def read_skill(self, package: PackageInfo) -> Skill:
        from book_agent_adapters.sources.markdown_reader import read_skill

        return cast(Skill, read_skill(package))
