"""Benches of the library's indexes (lexical, vectors, living updates, Milvus) at 100k and 1M records.
"""
