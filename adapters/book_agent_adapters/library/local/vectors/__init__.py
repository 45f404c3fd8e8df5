"""The local library's approximate vector index: faiss IVF-SQ8 per model group, rescored exactly,
its files and generations, training, and books added or removed since the last training.
"""
