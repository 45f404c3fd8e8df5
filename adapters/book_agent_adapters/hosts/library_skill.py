"""The skill installed with a library server (`book-agent host install HOST @all` or `a,b`).

Generated, not copied from a package: SKILL.md with front-matter `name` equal to the
folder (and server) name. An @all skill names no book (the server serves books registered
later, so its text must not go stale when one is registered); a list's skill names its books.
"""

from __future__ import annotations

import json

from book_agent.domain.library import HostLibrary
from book_agent_adapters.hosts.skills import SkillBundle, SkillFile, sha256

SOURCE = "adapters/book_agent_adapters/hosts/library_skill.py"

DESCRIPTION = (
    "Search the user's library of books registered with book-agent and answer from them, grounded and "
    "cited. Use when the book-agent library MCP server ({name}) is available, or when the user asks "
    "about their books without naming one. Covers list_books, search (with books to narrow it), the "
    "tools taking a book_id (read_entry, read_markdown, get_skill, locate_source, read_source, "
    "render_page, status), and citing book_id#record_id."
)

BODY = """
# book-agent library: search the user's books as one

The MCP server `{name}` {serves} Its `search` ranks passages across books; the tools that
read one book take the `book_id` of the book (each hit carries it). A book may also have
its own server (`book-<book_id>`) and skill: this library server needs neither.

## The flow

1. **See the books**: `list_books` returns each book's `book_id`, title, language, record
   count and whether it is available.
2. **Search**: `search` with the question or keywords, in any language (`top_k` 6 by
   default). It searches every book the server serves; pass `books: ["<book_id>", ...]`
   to narrow it. Each hit has `book_id`, `record_id`, `evidence_id` (`book_id#record_id`),
   `text` (the full passage), `headings`, `source_locator` and `scores`; the result's
   `books` lists the books searched, and why any was skipped.
3. **Read a book's own notes** when its hits matter: `get_skill(book_id)` returns that
   book's SKILL.md (what it covers, how to search and cite it).
4. **Answer only from the hits' text.** If the hits do not answer the question, say so,
   search again with other words, or read more context; never fill gaps from memory as
   if a book said it.
5. **Cite every claim** with the hit's `evidence_id` in square brackets, e.g.
   `[pride-and-prejudice#r0042]`: it names the book and the passage. Give the place from
   its `source_locator`: PDF `page_index` (0-based) and `page_label`; EPUB `href#fragment`.

## One book at a time

Each takes the `book_id` of a hit (or of `list_books`) plus the one-book arguments:

- `read_entry(book_id, record_id)`: one passage in full (`record_id` is the book's own,
  the part after `#`).
- `read_markdown(book_id, record_id=..., context_chars=...)` (or `start`/`end`, or
  `heading`): wider context.
- `locate_source(book_id, hit=<a search hit, unchanged>)`: the passage in the original
  PDF/EPUB, with `verification.method`; say so when it is `unverified`.
- `read_source(book_id, locator)`: the original's own text, to quote exactly.
- `render_page(book_id, page_index, include_image=true)`: a PNG of a PDF page (figures,
  tables, formulas, or when a hit says `visual_fallback.recommended`).
- `status(book_id)`: health and capabilities; call it when a tool reports an error.

## Errors

Tool errors carry JSON `{{"error": {{code, message, details, remediation}}}}`; follow the
remediation. `mcp.book_not_served`: the book_id is not one this server serves: call
`list_books` and name only the books it lists. Never ask the user to paste an API key into
the chat: keys come from environment variables the server inherits.
"""


def library_skill_text(name: str, library: HostLibrary) -> str:
    if library.everything:
        serves = ("serves every book registered with book-agent, including books registered after it\n"
                  "was installed (no restart needed): call `list_books` to see them.")
    else:
        serves = "serves these books: " + ", ".join(f"`{b}`" for b in library.book_ids) + "."
    head = ["---", f"name: {name}", "description: " + json.dumps(DESCRIPTION.format(name=name)), "---"]
    return "\n".join(head) + "\n" + BODY.format(name=name, serves=serves)


def library_bundle(name: str, library: HostLibrary) -> SkillBundle:
    """The library's skill folder: its SKILL.md (the manifest's book_id is the reference)."""
    data = library_skill_text(name, library).encode("utf-8")
    return SkillBundle(name, (SkillFile("SKILL.md", data, sha256(data), SOURCE),), library.ref)
