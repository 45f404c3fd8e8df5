"""The local library's lexical index: every book's postings with library-wide BM25 statistics,
its living generations (a base plus books added and removed since), its integrity checks and the
per-book term counts it is built from.
"""
