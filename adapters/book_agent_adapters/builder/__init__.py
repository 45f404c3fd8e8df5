"""`book-agent-build`: a book package from your own PDF or EPUB (contracts/book-package-0.1.md).

The builder is kept apart from the query runtime: the runtime never embeds documents (the
user's contract), so nothing outside this package imports it (an import-linter contract in
pyproject.toml). It reuses the runtime's readers (PdfSource, EpubSource) so that every record's
locator is an offset into exactly the text `locate` verifies, and the runtime's package
inspector, which checks the package before it is moved into place.

Modules: cli (the command), build (the steps, all-or-nothing), guards (hostile originals),
metadata (title, authors, language), chunks + layout (records, headings, running heads, folios),
embed (the models), files (the package's files), progress (stderr).
"""
