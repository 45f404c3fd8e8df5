"""Integration tests of one book's parts: FTS5 sidecar, impact file, vectors, records."""
