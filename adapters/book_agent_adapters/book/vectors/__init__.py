"""One book's vector channel: the package's records and prebuilt vectors (the VectorStore port), the
float32 matrix cached beside them, and its 8-bit codes.
"""
