"""Search as data and rules: the lexical text, BM25 halves, fusion, passage proximity, the vector
channel's gate, the result shapes, page-image advice and the eval harness's metrics.
"""
