"""Benches of one search's parts: channels, fusion, passage reading, quotes, the encoder, reranking.
"""
