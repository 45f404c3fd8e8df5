"""One book's lexical channel: the FTS5 sidecar (BM25, FTS5's exact scores), its build checks, and the
impact file that answers the same ranking with numpy in a warm process.
"""
