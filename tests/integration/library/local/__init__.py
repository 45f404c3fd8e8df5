"""Integration tests of the local library backend: impact index, faiss, living generations."""
