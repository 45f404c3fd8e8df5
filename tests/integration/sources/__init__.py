"""Integration tests of the originals: PDF, EPUB, Markdown, locators, pages."""
