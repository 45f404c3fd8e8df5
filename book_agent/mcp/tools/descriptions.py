"""What the agent reads: the server instructions and one description per tool.

Written for a model choosing tools: when to use each, what comes back, how to cite.
Kept apart from the wiring so they can be reviewed (and diffed against
contracts/mcp-tools.json) as prose.
"""

from __future__ import annotations

from book_agent.domain.limits import DPI_RANGE

CITE = (
    "Cite evidence as [evidence_id] and, where you quote the original, with its locator "
    "(PDF: page_index, 0-based, plus page_label when present; EPUB: href#fragment)."
)

INSTRUCTIONS = """This server answers from ONE book package ({title}; book_id "{book_id}").
Typical flow: `search` the book -> answer only from the hits' text -> cite each claim with the
hit's evidence_id, in square brackets. To check or quote the original, call `locate_source`
with the hit, then `read_source` with the returned locator. When a search result says
visual_fallback.recommended = true (figures, tables, formulas, scanned or badly extracted
pages), call `render_page` with the locator's page_index (include_image=true to see it).
Read the book's own usage notes with `get_skill` (also resource book://{book_id}/skill).
Errors come back as tool errors whose text is JSON: {{"error": {{code, message, details,
remediation}}}}; follow the remediation rather than retrying blindly.
"""

SEARCH = f"""Search this book for passages relevant to a question. Use it first, for any question the
book may answer. Returns {{book_id, query, hits, channels, query_representation, visual_fallback,
rerank, warnings}}; each hit has rank, evidence_id, record_id, text (the full passage), headings,
source_locator (already verified against the original: page_index and page_label or href#fragment,
char offsets, verification.method), markdown_span, scores and channels (lexical/vector). Answer only
from hit text. {CITE}
If visual_fallback.recommended is true, the answer may sit in a figure, table or formula that
text extraction missed: render the hit's page with `render_page` before answering. An EPUB has no
pages to render: then visual_fallback.action is "read_source" (read the passage in the original;
its images lists the chapter's pictures). EPUB hits' source_locator.epub_cfi is the passage's EPUB
CFI, which reader apps open. strict=true
fails instead of degrading (e.g. when the vector channel or reranker is unavailable); by default
missing channels are reported in warnings. query_vector is only for callers that already hold an
embedding made with exactly this book's model (dimensions are checked)."""

READ_ENTRY = f"""Read one record (passage) of the book in full by its record_id (from a search hit's record_id
field). Returns the record: record_id, seq (reading
order), text, headings, source (page / chapter metadata from the package) and markdown_span. Use it
to re-read a hit you are citing, or a neighbour (seq +/- 1). {CITE}"""

READ_MARKDOWN = """Read the book's Markdown text (book.md) around a place: give record_id (the record's span plus
context_chars on each side), or start and end (character offsets, end exclusive), or heading (a
section heading text). Returns {text, start, end, truncated, ...}. Use it for wider context
than a single record: the paragraphs before and after, or a whole short section."""

GET_SKILL = """The book's own instructions for agents (SKILL.md from the package): what the book covers, how to
search it well and how to cite it. Returns {name, description, text, path}. Read it once, early,
when you start working with this book."""

LOCATE_SOURCE = f"""Find exactly where a passage is in the ORIGINAL book (PDF or EPUB), checking the text against
the original rather than trusting metadata. Give exactly one of: hit (a search hit object as
returned by `search`), record_id, or quote (a literal passage). Returns a locator:
{{book_id, kind, page_index (PDF, 0-based) | href + fragment + epub_cfi (EPUB), char_start, char_end,
markdown_span, verification: {{method: exact|normalized|fuzzy|record-metadata|unverified,
score}}}}. Pass the locator unchanged to `read_source` or use its page_index with `render_page`.
An EPUB locator's epub_cfi (a range) and epub_cfi_start (a point) are standard EPUB CFIs that
reader apps open: give them to the user with the citation.
{CITE} Say so when verification.method is unverified."""

READ_SOURCE = """Read the original book's own text at a locator (from `locate_source`): the PDF page text or EPUB
chapter text around the located span, with a truncated flag when cut at max_chars. Use it to
quote the original exactly or to check wording the Markdown may have altered. A PDF page by the
label printed on it: locator {"page_label": "55"} (an unknown label's error lists the nearest).
An EPUB position from a reader app: locator {"epub_cfi": "epubcfi(/6/10!/4/2/1:0)"}."""

RENDER_PAGE = f"""Render a PDF page of the original book to a PNG image (written under the book's runtime
folder, never into the package). Use it when a search result recommends the visual fallback, or
when the question is about a figure, table, chart, formula or layout. page_index is 0-based (the
locator's page_index), or give page_label, the label printed on the page ("55", "iv"; a locator's
page_label) instead; clip = [x0, y0, x1, y1] in PDF points (origin bottom-left) crops to a
region (too-narrow clips are widened); dpi {DPI_RANGE[0]}-{DPI_RANGE[1]}. Returns {{path, width_px, height_px, page_size,
scale, host_image_support, ...}}; with include_image=true the PNG also comes back as MCP image
content you can look at (large renders are scaled down by the renderer; an image too large to send
is left out with a warning: use a clip or lower dpi). To show where a passage is, give
record_ids (from search hits) and/or quotes: their text is painted over in yellow, several on one
page at once, and `highlights` lists each one's line boxes in PDF points (page_index may then be
left out: the first passage's page is rendered; passages on other pages are listed in
`highlights_elsewhere`). EPUB books have no fixed pages: use read_source instead."""

GET_TOC = """The book's table of contents: the PDF outline or the EPUB navigation, each entry with its level,
title, place (PDF page_index and page_label; EPUB href, spine_index, fragment) and first_record_id,
the first record at that place (read it with read_entry, or its neighbours with read_around).
`source: "none"` when the book has no contents; an entry whose target is missing has `target: "none"`."""

READ_AROUND = """The records before and after a record in reading order (`around` on each side, default 2), each
with its text, evidence_id and verified source_locator; `offset` 0 is the record asked for. Use it to
read the context of a hit, or to continue reading from a table-of-contents entry."""

STATUS = """Health and capabilities of this book: package checks (hashes, schema), runtime sidecars (full-text
index, vector matrix), which search channels, rerankers and source features are available, and
diagnostics with remediation. Use it when another tool reports an error or a missing capability."""

LIBRARY_INSTRUCTIONS = """This server answers from a LIBRARY of book packages ("{ref}": {count}{more}).
Typical flow: `list_books` to see what the library holds -> `search` (the whole library, or
`books: [...]` to narrow) -> answer only from the hits' text -> cite each claim with the hit's
evidence_id ("book_id#record_id"), in square brackets. Every hit says its book_id; tools that
read one record or page (`read_entry`, `read_markdown`, `get_skill`, `locate_source`,
`read_source`, `render_page`, `status`) take that book_id. To check or quote the original,
call `locate_source` with the hit, then `read_source` with the returned locator. When
visual_fallback.recommended is true, call `render_page` (include_image=true to see it).
Each book's own usage notes: `get_skill` with its book_id. Errors come back as tool errors
whose text is JSON: {{"error": {{code, message, details, remediation}}}}.
"""

LIST_BOOKS = """The books this library server serves, now (books registered later appear without a restart when
it serves @all). Returns {library, books: [{book_id, title, language, records, model, dimensions,
kind, available}]}; a book whose package changed since registration is listed with available=false
and the reason. Call it first to know which books to search or to name in `books`."""

LIBRARY_SEARCH = f"""Search the library (every book it serves, or only `books`) for passages relevant to a question.
Ranking is library-wide: one BM25 index over all books, vectors compared within each embedding
model. Returns {{book_id (the library reference), query, hits, books, library, channels, warnings,
...}}; each hit has book_id, rank, evidence_id, record_id, text (the full passage), headings,
source_locator and scores. Answer only from hit text. {CITE} `books` must name served books
(see list_books). A book whose package changed is skipped with a warning (strict=true fails
instead). query_vector applies only to books whose model has its dimensions; each book in
`books` says when its vector channel did not run."""


def for_one_book(text: str) -> str:
    """A one-book tool's description, as a library tool that takes the book_id."""
    return "Give book_id: the book (from list_books, or a hit's book_id). " + text
