"""book-agent against other stacks (tantivy + faiss, sqlite-vec + FTS5, bm25s, LanceDB, FastMCP + bm25s).
"""
