"""The hybrid search of one book: its channels, their fusion, the passage reading and the eval harness.
"""
